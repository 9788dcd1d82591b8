#pragma once
// RESP2, the Redis protocol: a bounded parser and the few encoders the demo needs.
//
// parse() looks at the start of a buffer and says whether a whole frame is there. It
// never reads past `limits`: a frame longer than max_frame_bytes, an array with more
// than max_elements, or nesting deeper than max_depth is refused (too_large), so a
// peer cannot make the reader grow without bound.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fairpool::demo::resp {

enum class type : std::uint8_t { simple_string, error, integer, bulk_string, null, array };

struct value {
    resp::type type = resp::type::null;
    std::string text;          // simple_string, error, bulk_string
    std::int64_t integer = 0;  // integer
    std::vector<value> elements;  // array
};

struct limits {
    std::size_t max_frame_bytes = 64 * 1024;
    std::size_t max_elements = 1024;
    int max_depth = 4;
};

enum class parse_status : std::uint8_t { complete, incomplete, malformed, too_large };

struct parse_result {
    parse_status status = parse_status::incomplete;
    std::size_t length = 0;  // bytes of the frame, when complete
    value frame;
};

[[nodiscard]] parse_result parse(std::string_view input, const limits& l = {});

// A client's request at the start of `input`: a RESP array, or an inline command (any
// other first byte), as telnet and nc users type it: one line ending in LF (a CR before
// it is dropped), split at spaces and tabs, where "double quotes" (with the escapes \",
// \\, \n, \r, \t) and 'single quotes' group words, as redis-server's own inline parser
// does. An inline request comes back as an array of bulk strings; an empty line as an
// empty array (the caller skips it). The line counts against max_frame_bytes and its
// words against max_elements; unbalanced quotes are malformed.
[[nodiscard]] parse_result parse_request(std::string_view input, const limits& l = {});

// The proxy's hot path reads frames without building values: these scans allocate
// nothing and look at each byte at most once per call.
//
// scan_frame: the length of the whole frame at the start of `input` (any RESP2 type,
// nested arrays included), under the same limits as parse() except max_depth (a scan
// does not recurse).
struct frame_scan {
    parse_status status = parse_status::incomplete;
    std::size_t length = 0;  // when complete
};
[[nodiscard]] frame_scan scan_frame(std::string_view input, const limits& l = {});

// scan_request: a client's request at the start of `input`, as parse_request() would
// read it. A RESP array of bulk strings comes back with its argument count and its first
// two arguments (views into `input`); any other complete array is `not_bulk`; an inline
// command (first byte other than '*') is `inline_form`: parse it with parse_request().
struct request_scan {
    parse_status status = parse_status::incomplete;
    std::size_t length = 0;       // bytes of the request, when complete
    std::size_t argc = 0;         // arguments (0: an empty array, which the caller skips)
    std::string_view name;        // the first argument
    std::string_view first;       // the second, or empty
    bool not_bulk = false;        // a complete array with an element that is not a bulk string, or a null array
    bool inline_form = false;     // not an array at all
};
[[nodiscard]] request_scan scan_request(std::string_view input, const limits& l = {});

// A command as clients send it: an array of bulk strings.
[[nodiscard]] std::string command(std::span<const std::string> args);
[[nodiscard]] std::string command(std::initializer_list<std::string_view> args);

[[nodiscard]] std::string simple(std::string_view s);
[[nodiscard]] std::string error(std::string_view message);  // message includes its prefix, e.g. "ERR ..."
[[nodiscard]] std::string integer(std::int64_t n);
[[nodiscard]] std::string bulk(std::string_view s);
[[nodiscard]] std::string null_bulk();

// A request's arguments if it is a non-empty array of bulk strings, else empty.
[[nodiscard]] std::vector<std::string> arguments(const value& request);

// "ping" -> "PING"
[[nodiscard]] std::string upper(std::string_view s);

}  // namespace fairpool::demo::resp
