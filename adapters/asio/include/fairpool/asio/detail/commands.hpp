#pragma once
// The commands that reach the actor through its lock-free queues. All trivially
// copyable (Boost.Lockfree 1.81 requires it).
#include <cstdint>
#include <type_traits>

#include "fairpool/core/event.hpp"

namespace fairpool::detail {

class acquire_operation;

struct acquire_command {
    acquire_operation* operation;
    std::uint64_t waiter;  // 0: the actor gives it one (no cancel needs it before the actor sees it)
    std::uint64_t handle;
    core::nanos deadline;      // core::never: none given
    std::uint64_t max_leases;  // its handle's lease cap, if capped (0 = no cap)
    std::uint32_t weight;      // 0: none given
    bool capped;               // max_leases given (else the config's max_leases_per_handle)
};

// Releases, and the results of spawns, checks, resets and retirements: at most one is
// pending per slot at any time (the slot's state allows one of them at a time), so a
// queue of slot_capacity never fills.
struct slot_command {
    core::event_kind kind;  // release, spawned, spawn_failed, retired, checked, reset_done
    std::uint32_t slot;
    std::uint64_t lease;            // release
    core::release_outcome outcome;  // release
    bool passed;                    // checked: alive; reset_done: ok
};

static_assert(std::is_trivially_copyable_v<acquire_command>);
static_assert(std::is_trivially_copyable_v<slot_command>);

}  // namespace fairpool::detail
