#pragma once
// What a budget client did so far (budget_client::stats(), from any thread).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace fairpool::budget {

// joining: never granted (the pool at 0, or at fallback if start_at_fallback);
// granted: applying Redis's grant; learning: Redis lost its state and only confirms
// what members hold (for lease + grace); fallback: Redis not reached past the lease,
// at min(last grant, fallback); forgotten: not reached past forget_after, at 0;
// stopped: stop() was called (the pool keeps its last size).
enum class member_state { joining, granted, learning, fallback, forgotten, stopped };
[[nodiscard]] std::string_view to_string(member_state s) noexcept;

struct budget_stats {
    member_state state = member_state::joining;
    std::uint64_t limit = 0;   // the pool's max_slots as this client last set it
    std::uint64_t grant = 0;   // Redis's last grant (what `limit` is, unless falling back)
    std::uint64_t target = 0;  // this member's weighted max-min fair share in the last refresh
    // What the last refresh sent: demand (the pool's peak since the refresh before),
    // weight (its active handles' weights, at least 1) and held (live + retiring slots).
    std::uint64_t demand = 0, weight = 0, held = 0;
    // The fleet as the last refresh saw it: live members, Σ committed, the violation count.
    std::uint64_t members_live = 0, fleet_committed = 0, violations = 0;
    std::uint64_t epoch = 0, version = 0;
    // Time left on the lease (0 when expired or never granted), by this member's clock.
    std::chrono::nanoseconds lease_left{0};
    std::uint64_t refreshes = 0, refresh_failures = 0, connects = 0, connect_failures = 0;
    std::uint64_t resizes = 0;  // sizes this client applied to the pool
    // Round trip of a refresh (send to reply): the last, the longest, the sum.
    std::chrono::nanoseconds latency_last{0}, latency_max{0}, latency_total{0};
    std::string last_error;  // of the last failed connect or refresh, empty if none yet
};

}  // namespace fairpool::budget
