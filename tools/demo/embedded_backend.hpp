#pragma once
// A tiny in-process RESP server with an in-memory map, so the demo needs nothing else
// installed. It speaks PING, ECHO, GET, SET, INCR, DEL, CLIENT ID|LIST|SETNAME, RESET,
// QUIT and BLPOP (no lists: it waits out its timeout, which must be above 0, and replies
// the null array), with an optional artificial latency per command (timers: it never
// blocks).
// It runs on a thread of its own and listens on 127.0.0.1, on a free port.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fairpool::demo {

struct embedded_backend_options {
    std::chrono::microseconds latency{0};  // added to every command
    std::size_t max_clients = 4096;        // beyond: "-ERR max number of clients reached", then close
    std::uint16_t port = 0;                // 0: a free port
};

class embedded_backend {
public:
    explicit embedded_backend(const embedded_backend_options& options = {});
    embedded_backend(const embedded_backend&) = delete;
    embedded_backend& operator=(const embedded_backend&) = delete;
    ~embedded_backend();

    [[nodiscard]] boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
    [[nodiscard]] std::size_t open_connections() const noexcept { return open_.load(); }

private:
    struct client;
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(std::shared_ptr<client> c);
    // The reply; `hold` is how much longer than the latency the reply waits (BLPOP).
    std::string execute(client& c, const std::vector<std::string>& args, bool& quit, std::chrono::microseconds& hold);

    embedded_backend_options options_;
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::endpoint endpoint_;
    std::unordered_map<std::string, std::string> data_;  // touched only on io_'s thread
    std::map<std::int64_t, std::weak_ptr<client>> clients_;
    std::int64_t next_id_ = 1;
    std::atomic<std::size_t> open_{0};
    std::thread thread_;
};

}  // namespace fairpool::demo
