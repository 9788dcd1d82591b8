// Per-handle statistics in the Prometheus text exposition format 0.0.4.
#include "fairpool/asio/detail/prometheus_handles.hpp"

#include <array>
#include <cstdint>
#include <utility>

#include "fairpool/core/detail/prometheus_format.hpp"

namespace fairpool::detail {

namespace {

using core::detail::append_family;
using core::detail::append_label_value;
using core::detail::append_seconds_exact;
using core::detail::append_u64;

// name{pool="..",tenant=".."[,reason=".."]} — the value follows.
void append_series(std::string& out, std::string_view name, std::string_view pool, std::string_view tenant,
                   std::string_view reason = {}) {
    out.append(name).append("{pool=\"");
    append_label_value(out, pool);
    out.append("\",tenant=\"");
    append_label_value(out, tenant);
    if (!reason.empty()) out.append("\",reason=\"").append(reason);
    out += "\"} ";
}


using count_of = std::uint64_t handle_stats::*;

// One family: its # HELP and # TYPE, then `sample(pool label, handle)` for every handle
// of every pool, pool by pool.
template <class Sample>
void append_per_handle(std::string& out, std::span<const prometheus_pool_handles> pools, std::string_view name,
                       std::string_view type, std::string_view help, Sample sample) {
    append_family(out, name, type, help);
    for (const prometheus_pool_handles& pool : pools)
        for (const prometheus_handle& h : pool.handles) sample(pool.label, h);
}

// A family of one value per handle: `member`, written by `format` (a count, or
// nanoseconds as seconds).
void append_values(std::string& out, std::span<const prometheus_pool_handles> pools, std::string_view name,
                   std::string_view type, std::string_view help, count_of member,
                   void (*format)(std::string&, std::uint64_t) = append_u64) {
    append_per_handle(out, pools, name, type, help, [&](std::string_view pool, const prometheus_handle& h) {
        append_series(out, name, pool, h.tenant);
        format(out, h.stats.*member);
        out += '\n';
    });
}

// The scheduler's reasons in core::reject_reason's order (fairpool_rejections_total's),
// then the adapter's busy.
constexpr std::array<std::pair<std::string_view, count_of>, 6> rejection_reasons{{
    {"saturated", &handle_stats::rejected_saturated},
    {"timeout", &handle_stats::rejected_timeout},
    {"cancelled", &handle_stats::rejected_cancelled},
    {"deregistered", &handle_stats::rejected_deregistered},
    {"closed", &handle_stats::rejected_closed},
    {"busy", &handle_stats::rejected_busy},
}};

}  // namespace

void append_prometheus_handles(std::string& out, std::string_view pool_label,
                               std::span<const prometheus_handle> handles) {
    const prometheus_pool_handles one[] = {{pool_label, handles}};
    append_prometheus_handles(out, one);
}

void append_prometheus_handles(std::string& out, std::span<const prometheus_pool_handles> pools) {
    append_values(out, pools, "fairpool_handle_acquires_total", "counter",
                  "Acquires of the handle that reached the scheduler.", &handle_stats::acquires);
    append_values(out, pools, "fairpool_handle_grants_total", "counter", "Acquires of the handle granted a resource.",
                  &handle_stats::grants);
    constexpr std::string_view rejections = "fairpool_handle_rejections_total";
    append_per_handle(out, pools, rejections, "counter", "Acquires of the handle rejected, by reason.",
                      [&](std::string_view pool, const prometheus_handle& h) {
                          for (const auto& [reason, member] : rejection_reasons) {
                              append_series(out, rejections, pool, h.tenant, reason);
                              append_u64(out, h.stats.*member);
                              out += '\n';
                          }
                      });
    append_values(out, pools, "fairpool_handle_leases_out", "gauge", "Leases of the handle out now.",
                  &handle_stats::leases_out);
    append_values(out, pools, "fairpool_handle_leases_out_max", "gauge", "The most leases of the handle out at once.",
                  &handle_stats::leases_out_max);
    append_values(out, pools, "fairpool_handle_wait_seconds_total", "counter",
                  "Time from acquire to grant, summed over the handle's grants.", &handle_stats::wait_total_ns,
                  append_seconds_exact);
    append_values(out, pools, "fairpool_handle_wait_seconds_max", "gauge",
                  "The longest time from acquire to grant of one of the handle's grants.", &handle_stats::wait_max_ns,
                  append_seconds_exact);
}

}  // namespace fairpool::detail
