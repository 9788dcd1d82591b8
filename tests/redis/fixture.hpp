#pragma once
// What the redis suite needs: a redis-server child process on a free loopback port
// (tools/demo/redis_process.hpp), a blocking RESP client with a receive timeout, and the
// proxy running on a thread.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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

// Redis's CLIENT LIST, as (id, cmd) pairs.
struct client_info {
    std::int64_t id = 0;
    std::string cmd;
};
[[nodiscard]] std::vector<client_info> client_list(client& admin);

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

// Test options: the given backend, short timeouts and backoff.
[[nodiscard]] proxy_options test_options(boost::asio::ip::tcp::endpoint backend);

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
