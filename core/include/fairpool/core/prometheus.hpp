#pragma once
// core::stats in the Prometheus text exposition format 0.0.4 (docs/METRICS.md lists
// every metric and its OpenTelemetry name).
//
// Not part of the scheduler: these functions allocate (the output string) and are meant
// for a scrape handler or a log line, never for the decision path. No Boost.Asio, no I/O.
//
// Every sample carries the label pool="<label>", its value escaped as the format wants
// (backslash, double quote, newline). The wait histogram fairpool_acquire_wait_seconds
// is exact in its buckets and _count; its _sum is an estimate (see the .cpp and
// docs/METRICS.md): the core keeps no running sum of waits.
#include <span>
#include <string>
#include <string_view>

#include "fairpool/core/stats.hpp"

namespace fairpool::core {

// The complete exposition of one pool: # HELP and # TYPE lines, then its samples.
[[nodiscard]] std::string prometheus_text(const stats& s, std::string_view pool_label);

// The same, appended to `out`. Calling it twice on one string for two pools repeats
// the # HELP/# TYPE lines, which a scrape must not contain: use the span overload.
void append_prometheus_text(std::string& out, const stats& s, std::string_view pool_label);

// Several pools in one exposition: each metric family once, a sample per pool.
struct prometheus_pool {
    const stats* values = nullptr;
    std::string_view label;
};
void append_prometheus_text(std::string& out, std::span<const prometheus_pool> pools);

}  // namespace fairpool::core
