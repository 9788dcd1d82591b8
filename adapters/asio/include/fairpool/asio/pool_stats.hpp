#pragma once
// A pool's statistics (pool::stats()): a plain copy, read from any thread without a
// lock; counts since the pool was made, and gauges as of the pool's last step. The
// Prometheus families of docs/METRICS.md are made from the same counters.
#include <array>
#include <cstdint>

namespace fairpool {

struct pool_stats {
    // --- Acquires ------------------------------------------------------------------
    std::uint64_t acquires = 0;           // that reached the scheduler, whatever their outcome
    std::uint64_t grants = 0;             // grants_immediate + grants_after_wait
    std::uint64_t grants_immediate = 0;   // granted on arrival
    std::uint64_t grants_after_wait = 0;  // granted after queueing
    // Rejections, by outcome (the acquire's error code; cancelled = through its
    // cancellation slot, completed with operation_aborted; busy = refused by the
    // mailbox before reaching the scheduler, so not among `acquires`).
    std::uint64_t rejected_saturated = 0, rejected_timeout = 0, rejected_cancelled = 0, rejected_deregistered = 0,
                  rejected_closed = 0, rejected_busy = 0;

    // --- Resources -----------------------------------------------------------------
    std::uint64_t spawns = 0, spawn_failures = 0;
    // Retirements, by reason: released dirty, max_uses, max_lifetime, idle_timeout, a
    // failed check, the pool's shutdown, a failed reset, a resize.
    std::uint64_t retired_dirty = 0, retired_max_uses = 0, retired_max_lifetime = 0, retired_idle = 0,
                  retired_died = 0, retired_shutdown = 0, retired_reset_failed = 0, retired_resize = 0;
    std::uint64_t leaks_suspected = 0;
    std::uint64_t checks_started = 0, checks_passed = 0, checks_failed = 0;
    std::uint64_t resets_started = 0, resets_failed = 0;
    std::uint64_t resizes = 0;

    // --- Gauges --------------------------------------------------------------------
    std::uint64_t queued_waiters = 0;
    std::uint64_t active_handles = 0;      // handles with a waiter queued
    std::uint64_t active_weight = 0;       // their weights, summed (round robin shares grants by them)
    std::uint64_t waiters_behind_cap = 0;  // queued waiters of handles at their lease cap
    std::uint64_t handles_at_cap = 0;      // handles holding their max_leases
    // Slots by state; `held` is every slot with a resource or one on its way in or out
    // (spawning + idle + leased + checking + resetting + retiring): what the pool takes
    // of its backend's connections.
    std::uint64_t slots_spawning = 0, slots_idle = 0, slots_leased = 0, slots_checking = 0, slots_resetting = 0,
                  slots_retiring = 0, held = 0;
    // What the pool's users ask of it now: slots_leased + slots_spawning + the eligible
    // waiters (queued_waiters - waiters_behind_cap: a waiter behind its handle's lease
    // cap could not take a slot if one were free, so it asks for none). A pool with
    // more max_slots would hold about this many.
    std::uint64_t demand = 0;
    // The highest `demand` the pool has published (after each drain, and before each
    // completion) since the last pool::take_demand_peak(), or since the pool was made;
    // at least `demand`. Reading stats() does not reset it.
    std::uint64_t demand_peak = 0;

    // --- Waits ---------------------------------------------------------------------
    // Time from acquire to grant, immediate grants included: bucket 0 holds waits of
    // 0 ns, bucket i > 0 waits in [2^(i-1), 2^i) ns.
    std::array<std::uint64_t, 65> wait_histogram{};

    friend bool operator==(const pool_stats&, const pool_stats&) = default;
};

}  // namespace fairpool
