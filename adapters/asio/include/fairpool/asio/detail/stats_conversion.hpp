#pragma once
// The scheduler's counters (core::stats, arrays by reason and state) as the pool's
// named fields (pool_stats).
#include "fairpool/asio/pool_stats.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

[[nodiscard]] pool_stats to_pool_stats(const core::stats& s) noexcept;

}  // namespace fairpool::detail
