// The demo's /metrics endpoint (tools/demo/metrics_http.hpp, Boost.Beast) over real
// loopback sockets: the page, the 404 and 405, the size limit, the connection limit, and
// clients that stall or trickle, which the read timeout cuts off. Nothing asserts on
// time: a read that sees no answer and no close within 10 s fails the test instead of
// hanging it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#include "embedded_backend.hpp"
#include "fairpool/core/prometheus.hpp"
#include "fixture.hpp"
#include "metrics_http.hpp"

namespace fairpool::demo::testing {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;

// serve_metrics on an io_context of its own, run by one thread.
class metrics_server {
public:
    metrics_server(std::function<std::string()> body, metrics_http_options options)
        : acceptor_(io_, {asio::ip::address_v4::loopback(), 0}) {
        asio::co_spawn(io_, serve_metrics(acceptor_, std::move(body), options), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    metrics_server(const metrics_server&) = delete;
    metrics_server& operator=(const metrics_server&) = delete;
    ~metrics_server() {
        asio::post(io_, [this] { acceptor_.close(); });
        thread_.join();  // every session ends: by its answer, its client or its read timeout
    }
    [[nodiscard]] std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

private:
    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
};

// A plain blocking loopback socket; a read gives up after 10 s.
class connection {
public:
    explicit connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        if (fd_ < 0) throw std::runtime_error("socket");
        timeval tv{10, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect");
    }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() { ::close(fd_); }

    // False once the server has closed its end (the send fails).
    bool send(std::string_view bytes) {
        return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
    }
    // Everything the server sends until it closes; `closed` is false if it did not
    // close within 10 s.
    std::string read_until_closed(bool& closed) {
        std::string out;
        std::array<char, 4096> chunk;
        for (;;) {
            const ssize_t n = ::recv(fd_, chunk.data(), chunk.size(), 0);
            if (n > 0) {
                out.append(chunk.data(), static_cast<std::size_t>(n));
                continue;
            }
            closed = n == 0 || errno == ECONNRESET;
            return out;
        }
    }
    // Whether the server has closed its end, without waiting.
    bool closed_by_server() {
        char byte = 0;
        const ssize_t n = ::recv(fd_, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
        return n == 0 || (n < 0 && errno == ECONNRESET);
    }

private:
    int fd_;
};

// Sends `request`, reads to the server's close, parses the one response.
http::response<http::string_body> exchange(std::uint16_t port, std::string_view request) {
    connection c(port);
    EXPECT_TRUE(c.send(request));
    bool closed = false;
    const std::string raw = c.read_until_closed(closed);
    EXPECT_TRUE(closed) << "the server did not close the connection after its response";
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t used = 0;
    while (!ec && !parser.is_done() && used < raw.size()) used += parser.put(asio::buffer(raw.data() + used, raw.size() - used), ec);
    EXPECT_FALSE(ec) << ec.message() << " in: " << raw;
    EXPECT_TRUE(parser.is_done()) << "not one whole response: " << raw;
    EXPECT_EQ(used, raw.size()) << "bytes after the response: " << raw;
    return parser.release();
}

metrics_http_options quick() {
    metrics_http_options o;
    o.read_timeout = 200ms;
    return o;
}

TEST(metrics_http, get_metrics_is_the_pools_counters_in_prometheus_text_and_closes) {
    embedded_backend backend;
    proxy_harness proxy(test_options(backend.endpoint()));
    client cl(proxy.port());
    ASSERT_EQ(cl.call({"INCR", "n"}).integer, 1);
    const auto text = [&] { return fairpool::core::prometheus_text(proxy.proxy().pool_stats(), "demo"); };
    metrics_server server(text, quick());
    const auto r = exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(r[http::field::content_type], "text/plain; version=0.0.4");
    EXPECT_EQ(r[http::field::connection], "close");
    EXPECT_NE(r.body().find("\nfairpool_acquires_total{pool=\"demo\"} 1\n"), std::string::npos) << r.body();
    EXPECT_EQ(r.body(), text()) << "the pool is quiet: the page is exactly its current counters";
    EXPECT_EQ(exchange(server.port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").result(), http::status::ok);
}

TEST(metrics_http, another_target_is_a_plain_text_404_not_labelled_as_prometheus_text) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    const auto r = exchange(server.port(), "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(r.result(), http::status::not_found);
    EXPECT_EQ(r[http::field::content_type], "text/plain");
    EXPECT_EQ(r.body(), "not found\n");
    EXPECT_EQ(exchange(server.port(), "GET /metricsx HTTP/1.1\r\n\r\n").result(), http::status::not_found);
}

TEST(metrics_http, another_method_is_a_405_after_its_whole_body_is_read) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    const auto r = exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(r.result(), http::status::method_not_allowed);
    EXPECT_EQ(r[http::field::allow], "GET");
    EXPECT_EQ(r[http::field::content_type], "text/plain");
}

TEST(metrics_http, a_request_over_the_limit_is_a_413_and_garbage_a_400) {
    auto options = quick();
    options.max_request_bytes = 256;
    metrics_server server([] { return std::string("metric 1\n"); }, options);
    const auto big = exchange(server.port(), "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(1000, 'a') + "\r\n\r\n");
    EXPECT_EQ(big.result(), http::status::payload_too_large);
    const auto body = exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 300\r\n\r\n" + std::string(300, 'b'));
    EXPECT_EQ(body.result(), http::status::payload_too_large);
    EXPECT_EQ(exchange(server.port(), "hello there\r\n\r\n").result(), http::status::bad_request);
}

TEST(metrics_http, a_client_that_stalls_mid_head_is_cut_off_unanswered_by_the_read_timeout) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    connection c(server.port());
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // and never the blank line
    bool closed = false;
    EXPECT_EQ(c.read_until_closed(closed), "");
    EXPECT_TRUE(closed) << "the server kept a stalled request open past its read timeout";
}

TEST(metrics_http, a_client_that_stalls_mid_body_is_cut_off_unanswered_the_whole_request_is_awaited) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    connection c(server.port());
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"));
    bool closed = false;
    EXPECT_EQ(c.read_until_closed(closed), "") << "answered before the whole request was read";
    EXPECT_TRUE(closed);
}

// The timeout bounds the whole request, not each read: a byte every 20 ms never
// completes the head, and the server closes long before 500 bytes have trickled in.
TEST(metrics_http, a_client_that_trickles_bytes_is_cut_off_by_the_same_timeout) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    connection c(server.port());
    const std::string head = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(500, 'a');
    std::size_t sent = 0;
    while (sent < head.size() && !c.closed_by_server() && c.send(head.substr(sent, 1))) {
        ++sent;
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_LT(sent, head.size()) << "the server never cut the trickling client off";
    bool closed = false;
    EXPECT_EQ(c.read_until_closed(closed), "");
    EXPECT_TRUE(closed);
}

TEST(metrics_http, connections_beyond_the_limit_are_closed_unanswered) {
    auto options = quick();
    options.max_connections = 1;
    metrics_server server([] { return std::string("metric 1\n"); }, options);
    connection stalled(server.port());
    ASSERT_TRUE(stalled.send("GET /met"));
    connection refused(server.port());
    (void)refused.send("GET /metrics HTTP/1.1\r\n\r\n");  // a whole request: served, it would be answered
    bool closed = false;
    EXPECT_EQ(refused.read_until_closed(closed), "");
    EXPECT_TRUE(closed);
    EXPECT_EQ(stalled.read_until_closed(closed), "");  // its read timeout frees the place
    EXPECT_TRUE(closed);
    EXPECT_EQ(exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n").body(), "metric 1\n");
}

}  // namespace
}  // namespace fairpool::demo::testing
