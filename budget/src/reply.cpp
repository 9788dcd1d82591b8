#include "fairpool/budget/detail/reply.hpp"

#include <charconv>
#include <stdexcept>

namespace fairpool::budget::detail {

namespace {

[[noreturn]] void malformed(const char* why) { throw std::runtime_error(std::string("malformed Redis reply: ") + why); }

// Parses one reply at `at`; false if incomplete.
bool parse_at(std::string_view bytes, std::size_t& at, reply& out, int depth) {
    if (depth > max_depth) malformed("nested too deep");
    if (at >= bytes.size()) return false;
    const std::size_t eol = bytes.find("\r\n", at);
    if (eol == std::string_view::npos) {
        if (bytes.size() - at > max_reply_bytes) malformed("line too long");
        return false;
    }
    const char tag = bytes[at];
    const std::string_view line = bytes.substr(at + 1, eol - at - 1);
    auto number = [&] {
        std::int64_t n = 0;
        const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
        if (ec != std::errc{} || end != line.data() + line.size()) malformed("bad number");
        return n;
    };
    switch (tag) {
        case '+':
        case '-':
            out.type = tag == '+' ? reply::kind::simple : reply::kind::error;
            out.text = std::string(line);
            at = eol + 2;
            return true;
        case ':':
            out.type = reply::kind::integer;
            out.integer = number();
            at = eol + 2;
            return true;
        case '$': {
            const std::int64_t n = number();
            if (n == -1) {
                out.type = reply::kind::null;
                at = eol + 2;
                return true;
            }
            if (n < 0 || static_cast<std::uint64_t>(n) > max_reply_bytes) malformed("bad bulk length");
            const std::size_t first = eol + 2, size = static_cast<std::size_t>(n);
            if (bytes.size() < first + size + 2) return false;
            if (bytes.substr(first + size, 2) != "\r\n") malformed("bulk not ended by CRLF");
            out.type = reply::kind::bulk;
            out.text = std::string(bytes.substr(first, size));
            at = first + size + 2;
            return true;
        }
        case '*': {
            const std::int64_t n = number();
            at = eol + 2;
            if (n == -1) {
                out.type = reply::kind::null;
                return true;
            }
            if (n < 0 || n > 1024) malformed("bad array length");
            out.type = reply::kind::array;
            out.elements.resize(static_cast<std::size_t>(n));
            for (auto& e : out.elements)
                if (!parse_at(bytes, at, e, depth + 1)) return false;
            return true;
        }
        default:
            malformed("unknown type byte");
    }
}

}  // namespace

std::optional<parsed_reply> parse_reply(std::string_view bytes) {
    if (bytes.size() > max_reply_bytes + 64) malformed("reply too long");
    parsed_reply p;
    std::size_t at = 0;
    if (!parse_at(bytes, at, p.value, 0)) return std::nullopt;
    p.length = at;
    return p;
}

std::string encode_command(const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

}  // namespace fairpool::budget::detail
