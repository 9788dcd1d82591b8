// The demo's /metrics endpoint (tools/demo/metrics_http.hpp, Boost.Beast) over real
// loopback sockets: the page, the 404 and 405, the size limit, the connection limit, and
// clients that stall or trickle, which the read timeout cuts off. Nothing asserts on
// time: a read that sees no answer and no close within 10 s fails the test instead of
// hanging it.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <string>
#include <thread>

#include "embedded_backend.hpp"
#include "fairpool/asio/prometheus.hpp"
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
    const auto text = [&] { return fairpool::prometheus_text(proxy.proxy().backend_pool(), "demo"); };
    metrics_server server(text, quick());
    const auto r = http_exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(r[http::field::content_type], "text/plain; version=0.0.4");
    EXPECT_EQ(r[http::field::connection], "close");
    EXPECT_NE(r.body().find("\nfairpool_acquires_total{pool=\"demo\"} 1\n"), std::string::npos) << r.body();
    EXPECT_EQ(r.body(), text()) << "the pool is quiet: the page is exactly its current counters";
    EXPECT_EQ(http_exchange(server.port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").result(), http::status::ok);
}

TEST(metrics_http, another_target_is_a_plain_text_404_not_labelled_as_prometheus_text) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    const auto r = http_exchange(server.port(), "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(r.result(), http::status::not_found);
    EXPECT_EQ(r[http::field::content_type], "text/plain");
    EXPECT_EQ(r.body(), "not found\n");
    EXPECT_EQ(http_exchange(server.port(), "GET /metricsx HTTP/1.1\r\n\r\n").result(), http::status::not_found);
}

TEST(metrics_http, another_method_is_a_405_after_its_whole_body_is_read) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    const auto r = http_exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(r.result(), http::status::method_not_allowed);
    EXPECT_EQ(r[http::field::allow], "GET");
    EXPECT_EQ(r[http::field::content_type], "text/plain");
}

TEST(metrics_http, a_request_over_the_limit_is_a_413_and_garbage_a_400) {
    auto options = quick();
    options.max_request_bytes = 256;
    metrics_server server([] { return std::string("metric 1\n"); }, options);
    const auto big = http_exchange(server.port(), "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(1000, 'a') + "\r\n\r\n");
    EXPECT_EQ(big.result(), http::status::payload_too_large);
    const auto body = http_exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 300\r\n\r\n" + std::string(300, 'b'));
    EXPECT_EQ(body.result(), http::status::payload_too_large);
    EXPECT_EQ(http_exchange(server.port(), "hello there\r\n\r\n").result(), http::status::bad_request);
}

TEST(metrics_http, a_client_that_stalls_mid_head_is_cut_off_unanswered_by_the_read_timeout) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    http_connection c(server.port());
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // and never the blank line
    bool closed = false;
    EXPECT_EQ(c.read_until_closed(closed), "");
    EXPECT_TRUE(closed) << "the server kept a stalled request open past its read timeout";
}

TEST(metrics_http, a_client_that_stalls_mid_body_is_cut_off_unanswered_the_whole_request_is_awaited) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    http_connection c(server.port());
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"));
    bool closed = false;
    EXPECT_EQ(c.read_until_closed(closed), "") << "answered before the whole request was read";
    EXPECT_TRUE(closed);
}

// The timeout bounds the whole request, not each read: a byte every 20 ms never
// completes the head, and the server closes long before 500 bytes have trickled in.
TEST(metrics_http, a_client_that_trickles_bytes_is_cut_off_by_the_same_timeout) {
    metrics_server server([] { return std::string("metric 1\n"); }, quick());
    http_connection c(server.port());
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
    http_connection stalled(server.port());
    ASSERT_TRUE(stalled.send("GET /met"));
    http_connection refused(server.port());
    (void)refused.send("GET /metrics HTTP/1.1\r\n\r\n");  // a whole request: served, it would be answered
    bool closed = false;
    EXPECT_EQ(refused.read_until_closed(closed), "");
    EXPECT_TRUE(closed);
    EXPECT_EQ(stalled.read_until_closed(closed), "");  // its read timeout frees the place
    EXPECT_TRUE(closed);
    EXPECT_EQ(http_exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n").body(), "metric 1\n");
}

}  // namespace
}  // namespace fairpool::demo::testing
