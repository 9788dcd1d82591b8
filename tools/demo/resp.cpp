#include "resp.hpp"

#include <cctype>
#include <charconv>

namespace fairpool::demo::resp {

namespace {

// A cursor over one frame: lines and bulk payloads, within the limits (parse and the
// scans read through it).
class scanner {
public:
    scanner(std::string_view in, const limits& l) : in_(in), limits_(l) {}

    // The next line's text (without CRLF), or the status that stops the scan.
    parse_status line(std::string_view& out) {
        const std::size_t end = in_.find("\r\n", pos_);
        if (end == std::string_view::npos) return beyond(in_.size()) ? parse_status::too_large : parse_status::incomplete;
        if (beyond(end + 2)) return parse_status::too_large;
        out = in_.substr(pos_, end - pos_);
        pos_ = end + 2;
        return parse_status::complete;
    }

    // The whole of `s` as a number.
    static bool number(std::string_view s, std::int64_t& n) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
        return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
    }
    // A header's count ("$5", "*3" without the mark): >= -1.
    static bool count(std::string_view s, std::int64_t& n) { return number(s, n) && n >= -1; }

    // `size` payload bytes and their CRLF.
    parse_status payload(std::size_t size, std::string_view& out) {
        if (size > limits_.max_frame_bytes || beyond(pos_ + size + 2)) return parse_status::too_large;
        if (in_.size() < pos_ + size + 2) return parse_status::incomplete;
        if (in_[pos_ + size] != '\r' || in_[pos_ + size + 1] != '\n') return parse_status::malformed;
        out = in_.substr(pos_, size);
        pos_ += size + 2;
        return parse_status::complete;
    }

    [[nodiscard]] std::size_t position() const noexcept { return pos_; }

private:
    [[nodiscard]] bool beyond(std::size_t end) const noexcept { return end > limits_.max_frame_bytes; }

    std::string_view in_;
    const limits& limits_;
    std::size_t pos_ = 0;
};


class reader {
public:
    reader(std::string_view in, const limits& l) : in_(in, l), limits_(l) {}

    parse_status read(value& out, int depth) {
        if (depth > limits_.max_depth) return parse_status::too_large;
        std::string_view line;
        if (const auto s = in_.line(line); s != parse_status::complete) return s;
        if (line.empty()) return parse_status::malformed;
        const char marker = line.front();
        line.remove_prefix(1);
        switch (marker) {
            case '+':
                out.type = type::simple_string, out.text = line;
                return parse_status::complete;
            case '-':
                out.type = type::error, out.text = line;
                return parse_status::complete;
            case ':':
                out.type = type::integer;
                return scanner::number(line, out.integer) ? parse_status::complete : parse_status::malformed;
            case '$': return read_bulk(line, out);
            case '*': return read_array(line, out, depth);
            default: return parse_status::malformed;
        }
    }

    [[nodiscard]] std::size_t position() const noexcept { return in_.position(); }

private:
    parse_status read_bulk(std::string_view header, value& out) {
        std::int64_t n = 0;
        if (!scanner::count(header, n)) return parse_status::malformed;
        if (n == -1) {
            out.type = type::null;
            return parse_status::complete;
        }
        std::string_view payload;
        if (const auto s = in_.payload(static_cast<std::size_t>(n), payload); s != parse_status::complete) return s;
        out.type = type::bulk_string;
        out.text = payload;
        return parse_status::complete;
    }

    parse_status read_array(std::string_view header, value& out, int depth) {
        std::int64_t n = 0;
        if (!scanner::count(header, n)) return parse_status::malformed;
        if (n == -1) {
            out.type = type::null;
            return parse_status::complete;
        }
        if (static_cast<std::uint64_t>(n) > limits_.max_elements) return parse_status::too_large;
        out.type = type::array;
        out.elements.resize(static_cast<std::size_t>(n));
        for (auto& element : out.elements)
            if (const auto s = read(element, depth + 1); s != parse_status::complete) return s;
        return parse_status::complete;
    }

    scanner in_;
    const limits& limits_;
};

// One RESP line: its type mark, its text, CRLF. Appended piece by piece: g++ 12 at -O3
// reports a false -Wrestrict on `"x" + std::string(...)` chains (GCC bug 105651).
std::string line(char mark, std::string_view text) {
    std::string out;
    out.reserve(text.size() + 3);
    out += mark;
    out += text;
    out += "\r\n";
    return out;
}

}  // namespace

parse_result parse(std::string_view input, const limits& l) {
    parse_result result;
    reader r(input, l);
    result.status = r.read(result.frame, 0);
    if (result.status == parse_status::complete) result.length = r.position();
    return result;
}

namespace {

// One inline line's words, or false if its quotes do not balance.
bool split_inline(std::string_view line, std::vector<std::string>& words) {
    std::size_t i = 0;
    while (true) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        if (i == line.size()) return true;
        std::string word;
        const char quote = line[i] == '"' || line[i] == '\'' ? line[i++] : '\0';
        while (true) {
            if (i == line.size()) {
                if (quote != '\0') return false;
                break;
            }
            const char c = line[i];
            if (quote == '\0' && (c == ' ' || c == '\t')) break;
            if (quote != '\0' && c == quote) {
                ++i;
                // A closing quote must end the word, as in redis-server.
                if (i < line.size() && line[i] != ' ' && line[i] != '\t') return false;
                break;
            }
            if (quote == '"' && c == '\\' && i + 1 < line.size()) {
                const char e = line[++i];
                word += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
            } else {
                word += c;
            }
            ++i;
        }
        words.push_back(std::move(word));
    }
}

}  // namespace

parse_result parse_request(std::string_view input, const limits& l) {
    if (input.empty() || input.front() == '*') return parse(input, l);
    parse_result result;
    const auto bounds = scan_request(input, l);  // where the line ends, within the limits
    if (bounds.status != parse_status::complete) {
        result.status = bounds.status;
        return result;
    }
    const std::size_t end = bounds.length - 1;  // its LF
    std::string_view line = input.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string> words;
    if (!split_inline(line, words)) {
        result.status = parse_status::malformed;
        return result;
    }
    if (words.size() > l.max_elements) {
        result.status = parse_status::too_large;
        return result;
    }
    result.status = parse_status::complete;
    result.length = end + 1;
    result.frame.type = type::array;
    for (auto& w : words) result.frame.elements.push_back(value{type::bulk_string, std::move(w), 0, {}});
    return result;
}

frame_scan scan_frame(std::string_view input, const limits& l) {
    scanner sc(input, l);
    std::uint64_t remaining = 1;  // frames still to read, nested elements included
    while (remaining > 0) {
        --remaining;
        std::string_view text;
        if (const auto s = sc.line(text); s != parse_status::complete) return {s, 0};
        if (text.empty()) return {parse_status::malformed, 0};
        const char mark = text.front();
        text.remove_prefix(1);
        std::int64_t n = 0;
        switch (mark) {
            case '+':
            case '-': break;
            case ':':
                if (!scanner::number(text, n)) return {parse_status::malformed, 0};
                break;
            case '$': {
                if (!scanner::count(text, n)) return {parse_status::malformed, 0};
                std::string_view payload;
                if (n >= 0)
                    if (const auto s = sc.payload(static_cast<std::size_t>(n), payload); s != parse_status::complete)
                        return {s, 0};
                break;
            }
            case '*':
                if (!scanner::count(text, n)) return {parse_status::malformed, 0};
                if (n > 0 && static_cast<std::uint64_t>(n) > l.max_elements) return {parse_status::too_large, 0};
                if (n > 0) remaining += static_cast<std::uint64_t>(n);
                break;
            default: return {parse_status::malformed, 0};
        }
    }
    return {parse_status::complete, sc.position()};
}

request_scan scan_request(std::string_view input, const limits& l) {
    request_scan r;
    if (input.empty()) return r;
    if (input.front() != '*') {
        r.inline_form = true;
        const std::size_t end = input.find('\n');
        if (end == std::string_view::npos) r.status = input.size() > l.max_frame_bytes ? parse_status::too_large : parse_status::incomplete;
        else r.status = end + 1 > l.max_frame_bytes ? parse_status::too_large : parse_status::complete;
        r.length = r.status == parse_status::complete ? end + 1 : 0;
        return r;
    }
    // Not an array of bulk strings all through: the general scan says how long it is.
    const auto other = [&]() {
        const auto f = scan_frame(input, l);
        r.status = f.status, r.length = f.length, r.not_bulk = true, r.argc = 0;
        return r;
    };
    scanner sc(input, l);
    std::string_view text;
    if (const auto s = sc.line(text); s != parse_status::complete) return r.status = s, r;
    std::int64_t n = 0;
    if (!scanner::count(text.substr(1), n)) return r.status = parse_status::malformed, r;
    if (n < 0) return other();
    if (static_cast<std::uint64_t>(n) > l.max_elements) return r.status = parse_status::too_large, r;
    for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t at = sc.position();
        if (at < input.size() && input[at] != '$') return other();
        if (const auto s = sc.line(text); s != parse_status::complete) return r.status = s, r;
        std::int64_t size = 0;
        if (!scanner::count(text.substr(1), size)) return r.status = parse_status::malformed, r;
        if (size < 0) return other();
        std::string_view arg;
        if (const auto s = sc.payload(static_cast<std::size_t>(size), arg); s != parse_status::complete)
            return r.status = s, r;
        if (i == 0) r.name = arg;
        if (i == 1) r.first = arg;
    }
    r.status = parse_status::complete;
    r.length = sc.position();
    r.argc = static_cast<std::size_t>(n);
    return r;
}

std::string command(std::span<const std::string> args) {
    std::string out = line('*', std::to_string(args.size()));
    for (const auto& a : args) out += bulk(a);
    return out;
}

std::string command(std::initializer_list<std::string_view> args) {
    std::string out = line('*', std::to_string(args.size()));
    for (const auto a : args) out += bulk(a);
    return out;
}

std::string simple(std::string_view s) { return line('+', s); }
std::string error(std::string_view message) { return line('-', message); }
std::string integer(std::int64_t n) { return line(':', std::to_string(n)); }
std::string bulk(std::string_view s) {
    std::string out = line('$', std::to_string(s.size()));
    out += s;
    out += "\r\n";
    return out;
}
std::string null_bulk() { return "$-1\r\n"; }

std::vector<std::string> arguments(const value& request) {
    std::vector<std::string> args;
    if (request.type != type::array || request.elements.empty()) return args;
    for (const auto& e : request.elements) {
        if (e.type != type::bulk_string) return {};
        args.push_back(e.text);
    }
    return args;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace fairpool::demo::resp
