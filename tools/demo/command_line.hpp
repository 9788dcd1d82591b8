#pragma once
// Command-line values shared by fairpool-demo and bench/redis_sessions.
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string_view>

namespace fairpool::demo {

// A whole decimal number in [0, max]; false (and `out` unspecified) otherwise.
[[nodiscard]] bool parse_number(std::string_view text, unsigned long& out, unsigned long max);

// "HOST:PORT" with a numeric IPv4/IPv6 host or "localhost"; nullopt if malformed.
[[nodiscard]] std::optional<boost::asio::ip::tcp::endpoint> parse_endpoint(std::string_view text);

}  // namespace fairpool::demo
