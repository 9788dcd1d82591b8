#pragma once
// Reading trace formats v1 and v2 (docs/CONTRACT.md sections 7 and 7.2). Accepts fields in any order; refuses unknown or repeated
// keys, missing fields, numbers that are not plain ASCII decimal u64 (no sign, no
// overflow), slots ≥ 65536, unknown events, effects, reasons and error codes, a missing
// or wrong header or config line, an effect or error before any event, two `!` records
// for one event, and an invalid config ("invalid config: FIELD …").
#include <istream>
#include <string>
#include <variant>

#include "fairpool/trace/trace.hpp"

namespace fairpool::trace {

struct read_error {
    std::size_t line = 0;  // 1-based; the line the problem is on (the last line + 1 for a missing record)
    std::string message;   // without the "FILE:LINE: " prefix

    // "FILE:LINE: message"
    [[nodiscard]] std::string describe(const std::string& file) const {
        return file + ":" + std::to_string(line) + ": " + message;
    }
};

using read_result = std::variant<trace, read_error>;

[[nodiscard]] read_result read(std::istream& in);
[[nodiscard]] read_result read(const std::string& text);

}  // namespace fairpool::trace
