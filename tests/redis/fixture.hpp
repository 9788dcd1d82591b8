#pragma once
// What the redis suite needs: a redis-server child process on a free loopback port
// (tools/demo/redis_process.hpp), a blocking RESP client with a receive timeout, the
// proxy running on a thread, and a blocking HTTP client for the metrics endpoint.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proxy_server.hpp"
#include "redis_process.hpp"
#include "resp.hpp"

namespace fairpool::demo::testing {

using fairpool::demo::free_port;
using fairpool::demo::redis_process;

// The redis-server the build found (FAIRPOOL_REDIS_SERVER), or empty.
[[nodiscard]] std::string redis_server_path();

// Starts that redis-server with `args` into `into`, or fails the test fatally (naming
// the Debian package) when there is none: a SetUp returns if HasFatalFailure().
void start_redis_server(std::unique_ptr<redis_process>& into, std::vector<std::string> args = {});

// A blocking RESP client on a plain socket. Every read gives up after `timeout`
// (throws), so a missing reply fails the test instead of hanging it.
class client {
public:
    explicit client(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5));
    client(client&& other) noexcept : fd_(other.fd_), buffer_(std::move(other.buffer_)) { other.fd_ = -1; }
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    ~client() { close(); }

    void send(const std::vector<std::string>& args);
    void send_raw(const std::string& bytes);
    // The next reply; nullopt if the server closed the connection.
    [[nodiscard]] std::optional<resp::value> receive();
    // send + receive; throws if the connection closed.
    resp::value call(const std::vector<std::string>& args);
    void close();

private:
    int fd_ = -1;
    std::string buffer_;
};

// A plain blocking loopback socket for the HTTP tests; a read gives up after 10 s.
class http_connection {
public:
    explicit http_connection(std::uint16_t port);
    http_connection(const http_connection&) = delete;
    http_connection& operator=(const http_connection&) = delete;
    ~http_connection();

    // False once the server has closed its end (the send fails).
    bool send(std::string_view bytes);
    // Everything the server sends until it closes; `closed` is false if it did not
    // close within 10 s.
    std::string read_until_closed(bool& closed);
    // Whether the server has closed its end, without waiting.
    bool closed_by_server();

private:
    int fd_;
};

// Sends `request`, reads to the server's close and parses the one response (a gtest
// failure if the server does not close, or sends anything but one whole response).
boost::beast::http::response<boost::beast::http::string_body> http_exchange(std::uint16_t port,
                                                                            std::string_view request);

// A sample's value in Prometheus text: the line `series value`; nullopt if absent.
[[nodiscard]] std::optional<std::uint64_t> prometheus_sample(std::string_view text, std::string_view series);

// Redis's CLIENT LIST, as (id, cmd) pairs.
struct client_info {
    std::int64_t id = 0;
    std::string cmd;
};
[[nodiscard]] std::vector<client_info> client_list(client& admin);

// Test options: the given backend, short timeouts and backoff.
[[nodiscard]] proxy_options test_options(boost::asio::ip::tcp::endpoint backend);

// A test with its own redis-server (started in SetUp, gone with the test).
class with_redis : public ::testing::Test {
protected:
    void SetUp() override { start_redis_server(redis_); }
    // test_options against this test's redis-server.
    [[nodiscard]] proxy_options options() const { return test_options(redis_->endpoint()); }

    std::unique_ptr<redis_process> redis_;
};

// The proxy on an io_context of its own, run by one thread.
class proxy_harness {
public:
    explicit proxy_harness(proxy_options options);
    proxy_harness(const proxy_harness&) = delete;
    proxy_harness& operator=(const proxy_harness&) = delete;
    ~proxy_harness();

    [[nodiscard]] std::uint16_t port() const { return proxy_->local_endpoint().port(); }
    [[nodiscard]] proxy_server& proxy() { return *proxy_; }
    [[nodiscard]] boost::asio::any_io_executor executor() { return io_.get_executor(); }
    // f() run on the proxy's thread, waited for: for what may only be read there.
    template <class F>
    auto on_proxy_thread(F f) {
        return boost::asio::post(io_, boost::asio::use_future(std::move(f))).get();
    }
    // proxy_server::close, waited for; idempotent.
    fairpool::close_report close(std::chrono::milliseconds grace = std::chrono::seconds(2));

private:
    boost::asio::io_context io_;
    std::unique_ptr<proxy_server> proxy_;
    std::thread thread_;
    std::optional<fairpool::close_report> report_;
};


// Polls `done` every 10 ms for up to `limit`; returns its last value.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace fairpool::demo::testing
