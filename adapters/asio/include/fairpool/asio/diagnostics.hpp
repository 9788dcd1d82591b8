#pragma once
// What a pool's internals did (pool::diagnostics()): for benchmarks, tests and tools,
// not for a server's logic; the fields may change between minor versions.
#include <cstdint>
#include <memory>

#include "fairpool/core/stats.hpp"

namespace fairpool {

struct pool_diagnostics {
    // Drains posted to the pool's executor so far (wake-ups are coalesced, so this grows
    // by at most one per command), drains run (inline in an initiating function or a
    // release on the pool's executor, or posted), and commands fed to the scheduler
    // (their ratio: commands per drain).
    std::uint64_t drains_posted = 0, drains_run = 0, commands_fed = 0;
    // The scheduler's own counters (docs/CONTRACT.md section 9), with the adapter's busy
    // refusals: what the Prometheus text is made of; pool::stats() names them.
    core::stats scheduler;
    // Expires once the pool, its handles and its leases are all gone.
    std::weak_ptr<const void> lifetime;
};

}  // namespace fairpool
