// core::stats in the Prometheus text exposition format 0.0.4.
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include "fairpool/core/prometheus.hpp"

#include "fairpool/core/detail/prometheus_format.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace fairpool::core {

namespace {

using detail::append_family;
using detail::append_label_value;
using detail::append_seconds_exact;
using detail::append_u64;

// The histogram's le bounds: core bucket i holds waits in [2^(i-1), 2^i) ns, so the
// cumulative count up to bucket i is exactly the number of waits <= 2^i - 1 ns. Exposed:
// i = 0 (le="0": granted without waiting) and i = 10..36 (about 1 us to 69 s), a
// fixed set so that a series never appears or vanishes between scrapes.
constexpr int first_fine_bucket = 10;
constexpr int last_fine_bucket = 36;

void append_double(std::string& out, double value) {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
}

// name{pool="label"[,key="value"]} — the value follows.
void append_series(std::string& out, std::string_view name, std::string_view pool, std::string_view key = {},
                   std::string_view value = {}) {
    out.append(name).append("{pool=\"");
    append_label_value(out, pool);
    out += '"';
    if (!key.empty()) {
        out.append(",").append(key).append("=\"");
        append_label_value(out, value);
        out += '"';
    }
    out += "} ";
}

void append_sample(std::string& out, std::string_view name, std::string_view pool, std::uint64_t value,
                   std::string_view key = {}, std::string_view label = {}) {
    append_series(out, name, pool, key, label);
    append_u64(out, value);
    out += '\n';
}

// One family whose samples are indexed by an enum: every enumerator, zeros included.
template <typename Enum, std::size_t N>
void append_by_enum(std::string& out, std::span<const prometheus_pool> pools, std::string_view name,
                    std::string_view type, std::string_view help, std::string_view key,
                    std::array<std::uint64_t, N> stats::*member) {
    append_family(out, name, type, help);
    for (const auto& pool : pools)
        for (std::size_t i = 0; i < N; ++i)
            append_sample(out, name, pool.label, (pool.values->*member)[i], key, to_string(static_cast<Enum>(i)));
}

void append_scalar(std::string& out, std::span<const prometheus_pool> pools, std::string_view name,
                   std::string_view type, std::string_view help, std::uint64_t stats::*member) {
    append_family(out, name, type, help);
    for (const auto& pool : pools) append_sample(out, name, pool.label, pool.values->*member);
}

// The histogram keeps no sum of waits; _sum counts each wait at the middle of its
// bucket, [2^(i-1), 2^i - 1] ns, so it is within a factor of 1.5 of the true sum and,
// like a true sum, never decreases while the counts grow.
double estimated_wait_sum_seconds(const stats& s) {
    double sum_ns = 0;
    for (int i = 1; i < wait_histogram_buckets; ++i) {
        const double low = std::ldexp(1.0, i - 1);
        const double high = std::ldexp(1.0, i) - 1;
        sum_ns += static_cast<double>(s.wait_histogram[static_cast<std::size_t>(i)]) * ((low + high) / 2);
    }
    return sum_ns / 1e9;
}

void append_wait_histogram(std::string& out, std::span<const prometheus_pool> pools) {
    constexpr std::string_view name = "fairpool_acquire_wait_seconds";
    append_family(out, name, "histogram",
                  "Time from acquire to grant, immediate grants included (_sum is estimated from the buckets).");
    for (const auto& pool : pools) {
        const stats& s = *pool.values;
        std::uint64_t cumulative = 0;
        auto bucket = [&](std::string_view le) {
            append_series(out, "fairpool_acquire_wait_seconds_bucket", pool.label, "le", le);
            append_u64(out, cumulative);
            out += '\n';
        };
        std::string le;
        for (int i = 0; i < wait_histogram_buckets; ++i) {
            cumulative += s.wait_histogram[static_cast<std::size_t>(i)];
            if (i != 0 && (i < first_fine_bucket || i > last_fine_bucket)) continue;
            le.clear();
            append_seconds_exact(le, i == 0 ? 0 : (std::uint64_t{1} << i) - 1);
            bucket(le);
        }
        bucket("+Inf");
        append_series(out, "fairpool_acquire_wait_seconds_sum", pool.label);
        append_double(out, estimated_wait_sum_seconds(s));
        out += '\n';
        append_sample(out, "fairpool_acquire_wait_seconds_count", pool.label, cumulative);
    }
}

}  // namespace

void append_prometheus_text(std::string& out, std::span<const prometheus_pool> pools) {
    append_scalar(out, pools, "fairpool_acquires_total", "counter",
                  "Valid acquire requests, whatever their outcome.", &stats::acquires);

    append_family(out, "fairpool_grants_total", "counter",
                  "Acquires granted a resource, at once (immediate) or after queueing (after_wait).");
    for (const auto& pool : pools) {
        append_sample(out, "fairpool_grants_total", pool.label, pool.values->grants_immediate, "kind", "immediate");
        append_sample(out, "fairpool_grants_total", pool.label, pool.values->grants_after_wait, "kind", "after_wait");
    }

    append_by_enum<reject_reason>(out, pools, "fairpool_rejections_total", "counter",
                                  "Acquires rejected, by reason.", "reason", &stats::rejections);
    append_scalar(out, pools, "fairpool_busy_rejections_total", "counter",
                  "Acquires refused with busy before they reached the scheduler (the adapter's mailbox was full).",
                  &stats::busy_rejections);
    append_scalar(out, pools, "fairpool_spawns_total", "counter", "Resources the pool asked to create.",
                  &stats::spawns);
    append_scalar(out, pools, "fairpool_spawn_failures_total", "counter", "Resource creations that failed.",
                  &stats::spawn_failures);
    append_by_enum<retire_reason>(out, pools, "fairpool_retirements_total", "counter", "Resources retired, by reason.",
                                  "reason", &stats::retirements);
    append_scalar(out, pools, "fairpool_leaks_suspected_total", "counter",
                  "Leases held longer than leak_threshold (each reported once).", &stats::leaks_suspected);
    append_scalar(out, pools, "fairpool_checks_started_total", "counter",
                  "Health checks started (before a grant of a stale resource, or keepalive).", &stats::checks_started);
    append_family(out, "fairpool_checks_total", "counter", "Health checks finished, by outcome.");
    for (const auto& pool : pools) {
        append_sample(out, "fairpool_checks_total", pool.label, pool.values->checks_passed, "outcome", "alive");
        append_sample(out, "fairpool_checks_total", pool.label, pool.values->checks_failed, "outcome", "dead");
    }
    append_scalar(out, pools, "fairpool_resets_started_total", "counter", "Resets of released resources started.",
                  &stats::resets_started);
    append_scalar(out, pools, "fairpool_resets_failed_total", "counter",
                  "Resets that failed (the resource was retired).", &stats::resets_failed);
    append_scalar(out, pools, "fairpool_resizes_total", "counter", "Runtime resizes of the pool (resize events).",
                  &stats::resizes);
    append_by_enum<slot_state>(out, pools, "fairpool_slots", "gauge", "Slots by state.", "state", &stats::slots);
    append_scalar(out, pools, "fairpool_waiters", "gauge", "Acquires queued, waiting for a resource.",
                  &stats::queued_waiters);
    append_scalar(out, pools, "fairpool_active_handles", "gauge", "Handles with at least one queued waiter.",
                  &stats::active_handles);
    append_scalar(out, pools, "fairpool_active_weight", "gauge",
                  "Sum of the weights of the handles with at least one queued waiter.", &stats::active_weight);
    append_scalar(out, pools, "fairpool_waiters_behind_cap", "gauge",
                  "Queued acquires of handles holding their max_leases (not eligible until a lease comes back).",
                  &stats::waiters_behind_cap);
    append_scalar(out, pools, "fairpool_handles_at_cap", "gauge", "Handles holding their max_leases leases.",
                  &stats::handles_at_cap);
    append_wait_histogram(out, pools);
}

void append_prometheus_text(std::string& out, const stats& s, std::string_view pool_label) {
    const prometheus_pool pool{&s, pool_label};
    append_prometheus_text(out, std::span<const prometheus_pool>(&pool, 1));
}

std::string prometheus_text(const stats& s, std::string_view pool_label) {
    std::string out;
    append_prometheus_text(out, s, pool_label);
    return out;
}

}  // namespace fairpool::core
