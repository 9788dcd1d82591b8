#pragma once
// The budget client's own connection to Redis: connect (TCP, AUTH, SCRIPT LOAD) and one
// command at a time, every step bounded by a timeout (the socket is closed when it
// runs out, which fails the step). Used only on the client's strand.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fairpool/budget/detail/reply.hpp"

namespace fairpool::budget::detail {

class redis_link {
public:
    using executor = boost::asio::strand<boost::asio::any_io_executor>;
    explicit redis_link(executor ex) : socket_(ex), timer_(ex) {}

    [[nodiscard]] bool connected() const noexcept { return socket_.is_open(); }
    // Throws std::runtime_error (what failed, Redis's error text) on a failure or timeout.
    boost::asio::awaitable<void> connect(boost::asio::ip::tcp::endpoint at, const std::string& user,
                                         const std::string& password, std::chrono::nanoseconds timeout);
    // One command and its reply (an error reply is returned, not thrown); throws on a
    // broken connection or timeout, having closed it.
    boost::asio::awaitable<reply> call(const std::vector<std::string>& args, std::chrono::nanoseconds timeout);
    void close() noexcept;

private:
    // Runs with a watchdog: the socket is closed if `timeout` passes first.
    boost::asio::awaitable<reply> exchange(std::string request);
    void arm(std::chrono::nanoseconds timeout);
    void disarm() noexcept;

    boost::asio::ip::tcp::socket socket_;
    boost::asio::steady_timer timer_;
    std::string buffer_;
    bool timed_out_ = false;
    std::uint64_t watch_ = 0;  // the armed watch's number
};

}  // namespace fairpool::budget::detail
