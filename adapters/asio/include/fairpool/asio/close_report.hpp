#pragma once
// What async_close reports: whether the pool closed, and what was still out if not.
#include <cstdint>

namespace fairpool {

struct close_report {
    bool closed = false;
    std::uint64_t leases_out = 0;      // leased slots: their leases are still held
    std::uint64_t waiters_queued = 0;  // 0 once shutdown began: queued waiters are rejected
    std::uint64_t slots_spawning = 0;  // resources still being created
    std::uint64_t slots_retiring = 0;  // resources still being closed
    std::uint64_t slots_checking = 0;  // resources whose check is still running
    std::uint64_t slots_resetting = 0; // resources whose reset is still running
};

}  // namespace fairpool
