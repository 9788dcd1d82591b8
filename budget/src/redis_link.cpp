#include "redis_link.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <array>
#include <stdexcept>

namespace fairpool::budget::detail {

namespace asio = boost::asio;

void redis_link::arm(std::chrono::nanoseconds timeout) {
    timed_out_ = false;
    const std::uint64_t armed = ++watch_;
    timer_.expires_after(timeout);
    timer_.async_wait([this, armed](boost::system::error_code ec) {
        // A watch disarmed after it had already fired (queued) must not close the
        // connection of a later step.
        if (ec || armed != watch_) return;
        timed_out_ = true;
        boost::system::error_code ignored;
        socket_.close(ignored);
    });
}

void redis_link::disarm() noexcept {
    ++watch_;
    timer_.cancel();
}

void redis_link::close() noexcept {
    boost::system::error_code ignored;
    socket_.close(ignored);
    disarm();
    buffer_.clear();
}

asio::awaitable<reply> redis_link::exchange(std::string request) {
    try {
        co_await asio::async_write(socket_, asio::buffer(request), asio::use_awaitable);
        std::array<char, 4096> chunk;
        for (;;) {
            if (auto parsed = parse_reply(buffer_)) {
                buffer_.erase(0, parsed->length);
                co_return std::move(parsed->value);
            }
            const std::size_t n = co_await socket_.async_read_some(asio::buffer(chunk), asio::use_awaitable);
            buffer_.append(chunk.data(), n);
        }
    } catch (const boost::system::system_error& e) {
        close();
        throw std::runtime_error(timed_out_ ? "Redis did not answer in time" : "Redis connection: " + e.code().message());
    } catch (...) {
        close();
        throw;
    }
}

asio::awaitable<void> redis_link::connect(asio::ip::tcp::endpoint at, const std::string& user,
                                          const std::string& password, std::chrono::nanoseconds timeout) {
    close();
    arm(timeout);
    try {
        co_await socket_.async_connect(at, asio::use_awaitable);
        socket_.set_option(asio::ip::tcp::no_delay(true));
    } catch (const boost::system::system_error& e) {
        close();
        throw std::runtime_error(timed_out_ ? "connect to Redis timed out" : "connect to Redis: " + e.code().message());
    }
    if (!password.empty()) {
        std::vector<std::string> auth{"AUTH"};
        if (!user.empty()) auth.push_back(user);
        auth.push_back(password);
        const reply r = co_await exchange(encode_command(auth));
        if (r.type == reply::kind::error) {
            close();
            throw std::runtime_error("Redis refused AUTH: " + r.text);
        }
    }
    disarm();
}

asio::awaitable<reply> redis_link::call(const std::vector<std::string>& args, std::chrono::nanoseconds timeout) {
    if (!socket_.is_open()) throw std::runtime_error("not connected to Redis");
    arm(timeout);
    reply r = co_await exchange(encode_command(args));
    disarm();
    co_return r;
}

}  // namespace fairpool::budget::detail
