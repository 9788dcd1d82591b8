#pragma once
// Coalesced wake-ups of the actor (model-checked in model/wake_protocol.pml):
//   producer:  push the command; if (!scheduled.exchange(true)) post a drain
//   drain:     scheduled.store(false) FIRST, then consume every queue until empty
// A push after the drain cleared the flag posts a new drain; a push before it is seen
// by this drain. So no wake-up is lost, and at most one drain is posted and not yet
// started at any time.
#include <atomic>

namespace fairpool::detail {

class wake_flag {
public:
    // True when the caller must post a drain.
    [[nodiscard]] bool raise() noexcept { return !scheduled_.exchange(true, std::memory_order_acq_rel); }
    // At the start of a drain, before consuming. A read-modify-write, not a store: its
    // acquire half orders the drain's pops after the flag is cleared, so a producer whose
    // exchange saw `true` is guaranteed to have its command seen by this drain (a plain
    // store, even seq_cst, gives no such order against Boost.Lockfree's acquire pops).
    void clear() noexcept { scheduled_.exchange(false, std::memory_order_acq_rel); }

private:
    std::atomic<bool> scheduled_{false};
};

}  // namespace fairpool::detail
