#pragma once
// A Redis reply (RESP2), as the budget client reads them: what a script and AUTH, PING
// and SCRIPT LOAD answer. Bounded: a reply over max_reply_bytes, or nested deeper than
// max_depth, is malformed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairpool::budget::detail {

struct reply {
    enum class kind { simple, error, integer, bulk, null, array };
    kind type = kind::null;
    std::int64_t integer = 0;
    std::string text;  // simple, error, bulk
    std::vector<reply> elements;
};

inline constexpr std::size_t max_reply_bytes = 64 * 1024;
inline constexpr int max_depth = 4;

// The first whole reply in `bytes` and its length; nullopt if more bytes are needed.
// Throws std::runtime_error if the bytes are not RESP2 (or exceed the bounds).
struct parsed_reply {
    reply value;
    std::size_t length = 0;
};
[[nodiscard]] std::optional<parsed_reply> parse_reply(std::string_view bytes);

// A command as a RESP2 array of bulk strings.
[[nodiscard]] std::string encode_command(const std::vector<std::string>& args);

}  // namespace fairpool::budget::detail
