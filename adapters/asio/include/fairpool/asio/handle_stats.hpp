#pragma once
// A handle's own statistics (handle::stats()): a plain copy, every count since
// make_handle. Kept by the handle's shared block, written by the pool's actor (and, for
// busy, by the caller's thread), read from any thread without a lock.
#include <cstdint>

namespace fairpool {

struct handle_stats {
    // Acquires that reached the scheduler (as pool.stats().acquires counts them: an
    // acquire refused with busy never did and counts only in rejected_busy), and those
    // granted.
    std::uint64_t acquires = 0, grants = 0;
    // One per rejection reason: the scheduler's (core::reject_reason, closed = the pool
    // was shutting down or closed) and the adapter's busy.
    std::uint64_t rejected_timeout = 0, rejected_cancelled = 0, rejected_deregistered = 0, rejected_closed = 0,
                  rejected_saturated = 0, rejected_busy = 0;
    // Leases of this handle out now (granted and not yet released, whether or not the
    // handle object still exists), and the most ever out at once.
    std::uint64_t leases_out = 0, leases_out_max = 0;
    // Over the grants: the time from the acquire reaching the scheduler to its grant, by
    // the pool's clock, in total and at most.
    std::uint64_t wait_total_ns = 0, wait_max_ns = 0;

    friend bool operator==(const handle_stats&, const handle_stats&) = default;
};

}  // namespace fairpool
