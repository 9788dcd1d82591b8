#pragma once
// A number in a bench row's JSON: std::to_chars's shortest form that reads back to the
// same double (printf's %.6g drops digits), and null for a non-finite one (JSON has no
// nan or inf, and its readers refuse them).
#include <charconv>
#include <cmath>
#include <string>

namespace fairpool::bench {

inline std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buffer[64];
    const auto [end, err] = std::to_chars(buffer, buffer + sizeof buffer, v);
    return err == std::errc{} ? std::string(buffer, end) : "null";
}

}  // namespace fairpool::bench
