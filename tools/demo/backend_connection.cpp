#include "backend_connection.hpp"

#include <cstring>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <stdexcept>
#include <variant>

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// What a reply may be: max_backend_reply_bytes, arrays of up to a million elements.
constexpr resp::limits reply_limits{max_backend_reply_bytes, 1024 * 1024, 8};

}  // namespace

asio::awaitable<backend_connection> backend_connection::connect(tcp::endpoint endpoint,
                                                                std::chrono::milliseconds timeout) {
    using namespace asio::experimental::awaitable_operators;
    const auto ex = co_await asio::this_coro::executor;
    backend_connection c{tcp::socket(ex)};
    auto handshake = [](backend_connection& conn, tcp::endpoint ep) -> asio::awaitable<boost::system::error_code> {
        auto [ec] = co_await conn.socket_.async_connect(ep, use_tuple);
        if (ec) co_return ec;
        conn.socket_.set_option(tcp::no_delay(true));
        const std::string hello = resp::command({"PING"}) + resp::command({"CLIENT", "ID"});
        auto [wec, n] = co_await asio::async_write(conn.socket_, asio::buffer(hello), use_tuple);
        if (wec) co_return wec;
        const auto pong = co_await conn.read_reply();
        if (pong.ec) co_return pong.ec;
        const auto id = co_await conn.read_reply();
        if (id.ec) co_return id.ec;
        const auto p = resp::parse(pong.frame), i = resp::parse(id.frame);
        if (p.frame.type != resp::type::simple_string || p.frame.text != "PONG" || i.frame.type != resp::type::integer)
            co_return asio::error::make_error_code(asio::error::connection_refused);
        conn.client_id_ = i.frame.integer;
        co_return boost::system::error_code{};
    };
    asio::steady_timer timer(ex, timeout);
    auto outcome = co_await (handshake(c, endpoint) || timer.async_wait(use_tuple));
    if (outcome.index() == 1) throw std::runtime_error("backend connect: timed out");
    if (const auto ec = std::get<0>(outcome)) throw boost::system::system_error(ec, "backend connect");
    co_return c;
}

asio::awaitable<backend_reply> backend_connection::round_trip(std::string_view request) {
    ++requests_;
    co_return co_await exchange(request);
}

void backend_connection::start_pipeline(std::string_view requests, std::size_t count, reply_sink& sink) {
    requests_ += count;
    in_flight_ = true;
    cancelled_ = false;
    asio::async_write(socket_, asio::buffer(requests.data(), requests.size()),
                      asio::bind_allocator(handler_allocator<int>(*memory_),
                                           [this, count, &sink](boost::system::error_code ec, std::size_t) {
                                               if (ec) return sink.on_done(ec);
                                               read_replies(count, sink);
                                           }));
}

void backend_connection::read_replies(std::size_t remaining, reply_sink& sink) {
    if (!deliver(remaining, sink)) return sink.on_done(asio::error::make_error_code(asio::error::message_size));
    if (remaining == 0) {
        in_flight_ = false;
        return sink.on_done({});
    }
    // A cancel() that came while a read's completion was already on its way finds no
    // operation to end: the exchange ends here instead.
    if (cancelled_) return sink.on_done(asio::error::make_error_code(asio::error::operation_aborted));
    socket_.async_read_some(read_room(), asio::bind_allocator(handler_allocator<int>(*memory_),
                                                              [this, remaining, &sink](boost::system::error_code ec,
                                                                                       std::size_t n) {
                                                                  if (ec) return sink.on_done(ec);
                                                                  buffered_ += n;
                                                                  read_replies(remaining, sink);
                                                              }));
}

bool backend_connection::deliver(std::size_t& remaining, reply_sink& sink) {
    std::size_t consumed = 0;
    bool ok = true;
    while (remaining > 0) {
        const auto scan = resp::scan_frame(std::string_view(buffer_.data() + consumed, buffered_ - consumed), reply_limits);
        if (scan.status == resp::parse_status::incomplete) break;
        if (scan.status != resp::parse_status::complete) {
            ok = false;
            break;
        }
        sink.on_reply(std::string_view(buffer_.data() + consumed, scan.length));
        consumed += scan.length;
        --remaining;
    }
    consume(consumed);
    return ok;
}

void backend_connection::consume(std::size_t n) noexcept {
    std::memmove(buffer_.data(), buffer_.data() + n, buffered_ - n);
    buffered_ -= n;
}

asio::mutable_buffer backend_connection::read_room() {
    constexpr std::size_t room = 16 * 1024;
    if (buffer_.size() - buffered_ < room) buffer_.resize(buffered_ + room);
    return asio::buffer(buffer_.data() + buffered_, buffer_.size() - buffered_);
}

void backend_connection::cancel() noexcept {
    cancelled_ = true;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
}

asio::awaitable<backend_reply> backend_connection::exchange(std::string_view request) {
    in_flight_ = true;
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(request), use_tuple);
    if (ec) co_return backend_reply{ec, {}};
    auto reply = co_await read_reply();
    if (!reply.ec) in_flight_ = false;
    co_return reply;
}

asio::awaitable<bool> backend_connection::answers(std::string request, std::string_view expected) {
    const auto reply = co_await exchange(request);
    if (reply.ec) co_return false;
    const auto parsed = resp::parse(reply.frame);
    co_return parsed.frame.type == resp::type::simple_string && parsed.frame.text == expected;
}

// The requests are encoded outside the coroutine: g++ 12 cannot compile an
// initializer_list built inside one ("array used as initializer").
asio::awaitable<bool> backend_connection::ping() { return answers(resp::command({"PING"}), "PONG"); }

asio::awaitable<bool> backend_connection::reset() { return answers(resp::command({"RESET"}), "RESET"); }

asio::awaitable<backend_reply> backend_connection::read_reply() {
    for (;;) {
        const auto scan = resp::scan_frame(std::string_view(buffer_.data(), buffered_), reply_limits);
        if (scan.status == resp::parse_status::complete) {
            backend_reply reply{{}, buffer_.substr(0, scan.length)};
            consume(scan.length);
            co_return reply;
        }
        if (scan.status != resp::parse_status::incomplete)
            co_return backend_reply{asio::error::make_error_code(asio::error::message_size), {}};
        auto [ec, n] = co_await socket_.async_read_some(read_room(), use_tuple);
        if (ec) co_return backend_reply{ec, {}};
        buffered_ += n;
    }
}

asio::awaitable<void> backend_connection::close() {
    if (!in_flight_ && socket_.is_open()) {
        const std::string quit = resp::command({"QUIT"});
        auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(quit), use_tuple);
        if (!ec) (void)co_await read_reply();
    }
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
}

}  // namespace fairpool::demo
