#pragma once
// The pieces of the Prometheus text exposition format 0.0.4 that every renderer of
// fairpool's metrics shares: the core's (prometheus.hpp) and the adapter's per-handle
// families (fairpool/asio/prometheus_handles.hpp). They allocate (into `out`).
#include <cstdint>
#include <string>
#include <string_view>

namespace fairpool::core::detail {

void append_u64(std::string& out, std::uint64_t value);

// `ns` nanoseconds as seconds, exact: integer part, then up to nine decimals without
// trailing zeros (1023 ns -> 0.000001023).
void append_seconds_exact(std::string& out, std::uint64_t ns);

// A label value, escaped as the format wants: backslash, double quote, line feed.
void append_label_value(std::string& out, std::string_view value);

// A family's # HELP and # TYPE lines.
void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help);

}  // namespace fairpool::core::detail
