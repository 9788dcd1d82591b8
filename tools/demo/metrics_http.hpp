#pragma once
// The demo's loopback HTTP/1.1 endpoint, on Boost.Beast: GET /metrics answers the
// Prometheus text that `body` makes (`Content-Type: text/plain; version=0.0.4`); any
// other target is a plain-text 404, any other method a 405, a request over the size
// limit a 413, a malformed one a 400. Every response closes its connection. The whole
// request (head and body) must arrive within `read_timeout`, or the connection is
// closed unanswered; writing the response is bounded by the same time. Run the
// acceptor's executor on one thread.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace fairpool::demo {

struct metrics_http_options {
    std::chrono::milliseconds read_timeout{5000};
    std::size_t max_request_bytes = 8 * 1024;  // head and body together
    std::size_t max_connections = 16;          // beyond: closed at once, unanswered
};

// Serves until the acceptor is closed.
boost::asio::awaitable<void> serve_metrics(boost::asio::ip::tcp::acceptor& acceptor, std::function<std::string()> body,
                                           metrics_http_options options = {});

}  // namespace fairpool::demo
