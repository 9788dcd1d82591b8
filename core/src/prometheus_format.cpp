// The shared pieces of the Prometheus text exposition format 0.0.4.
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include "fairpool/core/detail/prometheus_format.hpp"

#include <charconv>
#include <cstddef>

namespace fairpool::core::detail {

void append_u64(std::string& out, std::uint64_t value) {
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
}

void append_seconds_exact(std::string& out, std::uint64_t ns) {
    append_u64(out, ns / 1'000'000'000);
    std::uint64_t fraction = ns % 1'000'000'000;
    if (fraction == 0) return;
    char digits[9];
    for (int i = 8; i >= 0; --i, fraction /= 10) digits[i] = static_cast<char>('0' + fraction % 10);
    int length = 9;
    while (digits[length - 1] == '0') --length;
    out += '.';
    out.append(digits, static_cast<std::size_t>(length));
}

void append_label_value(std::string& out, std::string_view value) {
    for (const char c : value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace fairpool::core::detail
