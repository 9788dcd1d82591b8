#include "metrics_http.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_request_head = 8 * 1024;

asio::awaitable<void> answer(tcp::socket socket, std::function<std::string()> body) {
    std::string head;
    auto [ec, n] = co_await asio::async_read_until(socket, asio::dynamic_buffer(head, max_request_head), "\r\n\r\n",
                                                   use_tuple);
    if (ec) co_return;
    const bool metrics = head.starts_with("GET /metrics ") || head.starts_with("GET /metrics?");
    const std::string content = metrics ? body() : std::string("not found\n");
    const std::string response = std::string(metrics ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n") +
                                 "Content-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                                 std::to_string(content.size()) + "\r\nConnection: close\r\n\r\n" + content;
    (void)co_await asio::async_write(socket, asio::buffer(response), use_tuple);
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

asio::awaitable<void> serve_metrics(tcp::acceptor& acceptor, std::function<std::string()> body) {
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
        if (ec) {
            if (!acceptor.is_open()) co_return;
            continue;
        }
        asio::co_spawn(acceptor.get_executor(), answer(std::move(socket), body), asio::detached);
    }
}

}  // namespace fairpool::demo
