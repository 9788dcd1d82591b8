#pragma once
// Counters and gauges of the scheduler (contract: docs/CONTRACT.md, section 9).
#include <array>
#include <bit>
#include <cstdint>

#include "fairpool/core/event.hpp"

namespace fairpool::core {

// Bucket 0 holds waits of 0 ns; bucket i > 0 holds waits in [2^(i-1), 2^i) ns.
inline constexpr int wait_histogram_buckets = 65;

// (libstdc++ 12's bit_width returns the argument's type, not int: at most 64 here.)
[[nodiscard]] constexpr int wait_bucket(nanos wait) noexcept { return static_cast<int>(std::bit_width(wait)); }

struct stats {
    std::uint64_t acquires = 0;  // valid acquire events, whatever their outcome
    std::uint64_t grants_immediate = 0;
    std::uint64_t grants_after_wait = 0;
    std::array<std::uint64_t, reject_reason_count> rejections{};  // by reject_reason
    std::uint64_t spawns = 0;
    std::uint64_t spawn_failures = 0;
    std::array<std::uint64_t, retire_reason_count> retirements{};  // by retire_reason
    std::uint64_t leaks_suspected = 0;
    // Health (check_after_idle, keepalive_interval, reset_on_release).
    std::uint64_t checks_started = 0;
    std::uint64_t checks_passed = 0;   // `checked` alive
    std::uint64_t checks_failed = 0;   // `checked` dead
    std::uint64_t resets_started = 0;
    std::uint64_t resets_failed = 0;   // `reset_done` failed
    std::uint64_t resizes = 0;         // valid `resize` events
    // Acquires refused with error::busy by the Boost.Asio adapter's admission (its mailbox
    // was full) before they reached a scheduler: counted by the adapter beside these
    // counters (pool.stats()); a scheduler's own counters always hold 0.
    std::uint64_t busy_rejections = 0;
    // Gauges.
    std::uint64_t queued_waiters = 0;
    std::uint64_t active_handles = 0;
    std::uint64_t active_weight = 0;       // the weights of the active handles, summed
    std::uint64_t waiters_behind_cap = 0;  // queued waiters of handles at their lease cap
    std::uint64_t handles_at_cap = 0;      // handles holding max_leases leases
    std::array<std::uint64_t, slot_state_count> slots{};  // by slot_state
    // Time from acquire to grant, immediate grants included.
    std::array<std::uint64_t, wait_histogram_buckets> wait_histogram{};

    friend bool operator==(const stats&, const stats&) = default;
};

}  // namespace fairpool::core
