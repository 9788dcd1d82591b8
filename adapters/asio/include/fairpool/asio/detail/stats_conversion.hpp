#pragma once
// The scheduler's counters (core::stats, arrays by reason and state) as the pool's
// named fields (pool_stats).
#include <cstddef>
#include <cstdint>

#include "fairpool/asio/pool_stats.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

// pool_stats::demand: leased + spawning + eligible waiters (the queued ones not behind
// their handle's lease cap). The actor computes it after each publish (demand_peak).
[[nodiscard]] inline std::uint64_t demand_of(const core::stats& s) noexcept {
    return s.slots[static_cast<std::size_t>(core::slot_state::leased)] +
           s.slots[static_cast<std::size_t>(core::slot_state::spawning)] + (s.queued_waiters - s.waiters_behind_cap);
}

// `demand_peak`: the pool's peak of the current interval (pool_state::demand_peak); the
// field is at least the demand of `s`.
[[nodiscard]] pool_stats to_pool_stats(const core::stats& s, std::uint64_t demand_peak = 0) noexcept;

}  // namespace fairpool::detail
