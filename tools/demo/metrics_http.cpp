#include "metrics_http.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <memory>

namespace fairpool::demo {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

http::response<http::string_body> response(http::status status, std::string content_type, std::string body) {
    http::response<http::string_body> r(status, 11);
    r.set(http::field::content_type, content_type);
    r.keep_alive(false);
    r.body() = std::move(body);
    r.prepare_payload();
    return r;
}

// [answer]
http::response<http::string_body> answer(const http::request<http::string_body>& request,
                                         const std::function<std::string()>& body) {
    const std::string_view target = request.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (path != "/metrics") return response(http::status::not_found, "text/plain", "not found\n");
    if (request.method() != http::verb::get) {
        auto r = response(http::status::method_not_allowed, "text/plain", "only GET\n");
        r.set(http::field::allow, "GET");
        return r;
    }
    return response(http::status::ok, "text/plain; version=0.0.4", body());
}
// [/answer]

// The response to what was read: a whole request, or bytes that are not one.
http::response<http::string_body> respond(beast::error_code ec, const http::request<http::string_body>& request,
                                          const std::function<std::string()>& body) {
    if (!ec) return answer(request, body);
    if (ec == http::error::header_limit || ec == http::error::body_limit || ec == http::error::buffer_overflow)
        return response(http::status::payload_too_large, "text/plain", "request too large\n");
    return response(http::status::bad_request, "text/plain", "bad request\n");
}

// A whole request, or bytes that are not HTTP (or over the limits): worth an answer. Not
// so a timeout, a socket error, or a client that closed before its request was whole.
bool answerable(beast::error_code ec) {
    if (!ec) return true;
    return ec.category() == http::make_error_code(http::error::bad_target).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

asio::awaitable<void> session(tcp::socket socket, std::function<std::string()> body, metrics_http_options options,
                              std::shared_ptr<std::size_t> active) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer(options.max_request_bytes);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.max_request_bytes));
    parser.body_limit(options.max_request_bytes);
    stream.expires_after(options.read_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
    if (answerable(ec)) {
        auto r = respond(ec, parser.get(), body);
        stream.expires_after(options.read_timeout);
        (void)co_await http::async_write(stream, r, use_tuple);
    }
    // Timed out, closed by the client, or answered: close.
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.close();
    --*active;
}

}  // namespace

asio::awaitable<void> serve_metrics(tcp::acceptor& acceptor, std::function<std::string()> body,
                                    metrics_http_options options) {
    const auto active = std::make_shared<std::size_t>(0);
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
        if (ec) {
            if (!acceptor.is_open()) co_return;
            continue;
        }
        if (*active >= options.max_connections) continue;  // `socket` closes here
        ++*active;
        asio::co_spawn(acceptor.get_executor(), session(std::move(socket), body, options, active), asio::detached);
    }
}

}  // namespace fairpool::demo
