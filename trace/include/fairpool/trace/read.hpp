#pragma once
// Reading trace formats v1, v2 (docs/CONTRACT.md sections 7 and 7.2) and v3 (7.3, binary.hpp). Accepts fields in any order; refuses unknown or repeated
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
    bool binary = false;   // a v3 file: `line` is the byte offset of the problem

    // "FILE:LINE: message", or "FILE: byte OFFSET: message" in a v3 file
    [[nodiscard]] std::string describe(const std::string& file) const {
        return where(file, binary ? 3 : 1, line) + message;
    }
};

using read_result = std::variant<trace, read_error>;

// A v3 file (it starts with v3::magic) is read by v3::read, as a whole file (not the
// last input of a recording: a torn tail is an error); anything else as text.
[[nodiscard]] read_result read(std::istream& in);
[[nodiscard]] read_result read(const std::string& text);

}  // namespace fairpool::trace
