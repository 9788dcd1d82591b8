#include "fairpool/asio/detail/stats_conversion.hpp"

#include <algorithm>

namespace fairpool::detail {

namespace {

template <class Enum, std::size_t N>
std::uint64_t at(const std::array<std::uint64_t, N>& counts, Enum e) noexcept {
    return counts[static_cast<std::size_t>(e)];
}

}  // namespace

pool_stats to_pool_stats(const core::stats& s, std::uint64_t demand_peak) noexcept {
    using core::reject_reason, core::retire_reason, core::slot_state;
    pool_stats p;
    p.acquires = s.acquires;
    p.grants_immediate = s.grants_immediate;
    p.grants_after_wait = s.grants_after_wait;
    p.grants = s.grants_immediate + s.grants_after_wait;
    p.rejected_saturated = at(s.rejections, reject_reason::saturated);
    p.rejected_timeout = at(s.rejections, reject_reason::timeout);
    p.rejected_cancelled = at(s.rejections, reject_reason::cancelled);
    p.rejected_deregistered = at(s.rejections, reject_reason::deregistered);
    p.rejected_closed = at(s.rejections, reject_reason::closed);
    p.rejected_busy = s.busy_rejections;
    p.spawns = s.spawns;
    p.spawn_failures = s.spawn_failures;
    p.retired_dirty = at(s.retirements, retire_reason::dirty);
    p.retired_max_uses = at(s.retirements, retire_reason::max_uses);
    p.retired_max_lifetime = at(s.retirements, retire_reason::max_lifetime);
    p.retired_idle = at(s.retirements, retire_reason::idle);
    p.retired_died = at(s.retirements, retire_reason::died);
    p.retired_shutdown = at(s.retirements, retire_reason::shutdown);
    p.retired_reset_failed = at(s.retirements, retire_reason::reset_failed);
    p.retired_resize = at(s.retirements, retire_reason::resize);
    p.leaks_suspected = s.leaks_suspected;
    p.checks_started = s.checks_started;
    p.checks_passed = s.checks_passed;
    p.checks_failed = s.checks_failed;
    p.resets_started = s.resets_started;
    p.resets_failed = s.resets_failed;
    p.resizes = s.resizes;
    p.queued_waiters = s.queued_waiters;
    p.active_handles = s.active_handles;
    p.active_weight = s.active_weight;
    p.waiters_behind_cap = s.waiters_behind_cap;
    p.handles_at_cap = s.handles_at_cap;
    p.slots_spawning = at(s.slots, slot_state::spawning);
    p.slots_idle = at(s.slots, slot_state::idle);
    p.slots_leased = at(s.slots, slot_state::leased);
    p.slots_checking = at(s.slots, slot_state::checking);
    p.slots_resetting = at(s.slots, slot_state::resetting);
    p.slots_retiring = at(s.slots, slot_state::retiring);
    p.held = p.slots_spawning + p.slots_idle + p.slots_leased + p.slots_checking + p.slots_resetting + p.slots_retiring;
    p.demand = demand_of(s);  // slots_leased + slots_spawning + (queued_waiters - waiters_behind_cap)
    p.demand_peak = std::max(demand_peak, p.demand);
    static_assert(std::tuple_size_v<decltype(p.wait_histogram)> == core::wait_histogram_buckets);
    p.wait_histogram = s.wait_histogram;
    return p;
}

}  // namespace fairpool::detail
