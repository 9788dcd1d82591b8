#pragma once
// One seed's simulation: the simulator plays the adapter in virtual time.
//
// An event queue ordered by (virtual time, sequence) holds what the world will do
// next: tenants' arrivals, the backend finishing spawns, checks, resets and
// retirements (some checks slow, some failing, some resets failing), leases coming
// back, resources dying (some unnoticed while idle, until a check finds them dead),
// callers giving up. Each item becomes (at most) one
// core event when its time comes. Every event goes through model::lockstep (core,
// reference model and invariant checker side by side). The effects of each step
// schedule their consequences. One timer is armed at the core's next_deadline() and
// fires a `tick` when nothing else comes first.
//
// Beyond the lockstep's checks, the simulator checks what it can see as the adapter:
// every event it sends returns the error it expects (`ok` for the events a correct
// adapter sends, the right code for the invalid ones it injects), its view of every
// slot's state agrees with the core's, next_deadline() is after now, a tick fired at
// next_deadline() emits something (no timer spin), and after `shutdown` the core
// reaches `closed` within a bounded number of events.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fairness.hpp"
#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/stats.hpp"
#include "workload.hpp"

namespace fairpool::sim {

// What the simulated adapter did, beyond the core's counters.
struct adapter_counters {
    std::uint64_t timer_ticks = 0;
    std::uint64_t cancels = 0;          // cancel events sent
    std::uint64_t late_cancels = 0;     // of which for a waiter that had completed
    std::uint64_t deregisters = 0;
    std::uint64_t dirty_releases = 0;
    std::uint64_t deaths_idle = 0;      // `died` events
    std::uint64_t deaths_leased = 0;    // died while leased: released dirty
    std::uint64_t deaths_unnoticed = 0; // died while idle, checking or resetting without a `died`
    std::uint64_t checks_found_dead = 0;  // `checked dead` for a resource that had died
    std::uint64_t checks_failed = 0;    // `checked dead` for a live resource (a failed ping)
    std::uint64_t slow_checks = 0;
    std::uint64_t resets_failed = 0;    // `reset_done failed` (dead resource or injected failure)
    std::uint64_t outages = 0;          // backend down windows begun
    std::uint64_t invalid_events = 0;   // injected, refused with the expected error
    std::uint64_t bad_sizes = 0;        // of which `resize` with a bad size
    std::uint64_t capped_acquires = 0;  // acquires naming max_leases > 0
    std::uint64_t steps_at_cap = 0;     // steps after which a handle held its cap
    std::uint64_t steps_behind_cap = 0; // steps after which a waiter queued behind a cap
};

struct seed_result {
    std::uint64_t seed = 0;
    std::string scenario;  // describe(scenario)
    core::fairness_policy policy = core::fairness_policy::round_robin;
    std::uint64_t events = 0;
    nanos virtual_time = 0;  // from `start` to the last event
    core::stats counters{};  // the core's, at the end
    adapter_counters adapter{};
    fairness_sample fairness;
    bool isolation = false;  // caps or resizes in play (isolation_on)
    bool shut_down = false;
    bool closed = false;
    std::optional<std::string> failure;  // a breach or a failed simulator check
    bool found_by_lockstep = false;      // the failure is a lockstep breach (replay --invariants finds it)
};

class simulation {
public:
    simulation(std::uint64_t seed, const run_settings& settings);
    ~simulation();
    simulation(const simulation&) = delete;
    simulation& operator=(const simulation&) = delete;

    // Runs the seed to its end (event budget, `closed`, or the first failure).
    seed_result run();

    // Writes the trace of every event sent so far (header with the config, then each
    // event with its effects and error). Returns the 1-based line of the last event.
    std::size_t write_trace(std::ostream& out) const;

    // The seed's config and every event sent so far, valid or not, in order (what the
    // trace holds; the snapshot-equivalence test replays them).
    [[nodiscard]] const core::config& config() const;
    [[nodiscard]] const std::vector<core::event>& events() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace fairpool::sim
