#pragma once
// A minimal loopback HTTP/1.1 responder: GET /metrics answers the pool's counters in
// the Prometheus text format; anything else gets 404. One request per connection,
// request head bounded to 8 KiB.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

namespace fairpool::demo {

// Serves until the acceptor is closed. `body` makes the /metrics text.
boost::asio::awaitable<void> serve_metrics(boost::asio::ip::tcp::acceptor& acceptor, std::function<std::string()> body);

}  // namespace fairpool::demo
