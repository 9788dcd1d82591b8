#pragma once
// The counters of a snapshot (docs/CONTRACT.md section 7.2), in the contract's order,
// mapped to the fields of core::stats. The model's own table: the oracle does not use
// the core's (core::counter_of), so a field the core maps wrongly shows up as a
// difference. Shared by the reference model and the invariant checker.
#include <array>
#include <cstdint>

#include "fairpool/core/snapshot.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::model::detail {

inline std::uint64_t& stats_field(core::stats& s, core::counter c) {
    using core::counter;
    using core::reject_reason;
    using core::retire_reason;
    auto rejected = [&](reject_reason r) -> std::uint64_t& { return s.rejections[static_cast<std::size_t>(r)]; };
    auto retired = [&](retire_reason r) -> std::uint64_t& { return s.retirements[static_cast<std::size_t>(r)]; };
    switch (c) {
        case counter::acquires: return s.acquires;
        case counter::grants_immediate: return s.grants_immediate;
        case counter::grants_after_wait: return s.grants_after_wait;
        case counter::rejections_saturated: return rejected(reject_reason::saturated);
        case counter::rejections_timeout: return rejected(reject_reason::timeout);
        case counter::rejections_cancelled: return rejected(reject_reason::cancelled);
        case counter::rejections_deregistered: return rejected(reject_reason::deregistered);
        case counter::rejections_closed: return rejected(reject_reason::closed);
        case counter::spawns: return s.spawns;
        case counter::spawn_failures: return s.spawn_failures;
        case counter::retirements_dirty: return retired(retire_reason::dirty);
        case counter::retirements_max_uses: return retired(retire_reason::max_uses);
        case counter::retirements_max_lifetime: return retired(retire_reason::max_lifetime);
        case counter::retirements_idle: return retired(retire_reason::idle);
        case counter::retirements_died: return retired(retire_reason::died);
        case counter::retirements_shutdown: return retired(retire_reason::shutdown);
        case counter::retirements_reset_failed: return retired(retire_reason::reset_failed);
        case counter::retirements_resize: return retired(retire_reason::resize);
        case counter::leaks_suspected: return s.leaks_suspected;
        case counter::checks_started: return s.checks_started;
        case counter::checks_passed: return s.checks_passed;
        case counter::checks_failed: return s.checks_failed;
        case counter::resets_started: return s.resets_started;
        case counter::resets_failed: return s.resets_failed;
        case counter::resizes: return s.resizes;
    }
    return s.acquires;  // unreachable: every counter is listed
}

// Every non-zero counter, then every non-zero histogram bucket, as snapshot records.
template <typename Out>
void put_counters(const core::stats& s, Out&& out) {
    core::stats copy = s;
    for (int c = 0; c < core::counter_count; ++c)
        if (const std::uint64_t v = stats_field(copy, static_cast<core::counter>(c)); v != 0)
            out(core::snapshot_record{core::snapshot_counter{static_cast<core::counter>(c), v}});
    for (std::uint32_t b = 0; b < static_cast<std::uint32_t>(core::wait_histogram_buckets); ++b)
        if (const std::uint64_t v = s.wait_histogram[b]; v != 0)
            out(core::snapshot_record{core::snapshot_bucket{b, v}});
}

}  // namespace fairpool::model::detail
