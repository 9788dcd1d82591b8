#include "command_line.hpp"

#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <cstdint>
#include <string>

namespace fairpool::demo {

bool parse_number(std::string_view text, unsigned long& out, unsigned long max) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && out <= max;
}

std::optional<boost::asio::ip::tcp::endpoint> parse_endpoint(std::string_view text) {
    const auto colon = text.rfind(':');
    unsigned long port = 0;
    if (colon == std::string_view::npos || !parse_number(text.substr(colon + 1), port, 65535)) return std::nullopt;
    std::string host(text.substr(0, colon));
    if (host == "localhost") host = "127.0.0.1";
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return std::nullopt;
    return boost::asio::ip::tcp::endpoint(address, static_cast<std::uint16_t>(port));
}

}  // namespace fairpool::demo
