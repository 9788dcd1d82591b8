#pragma once
// The per-seed scenario: a random scheduler configuration and a random workload and
// fault profile, all drawn from the seed's generator. Nothing here runs anything;
// simulation.cpp plays the scenario.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "rng.hpp"

namespace fairpool::sim {

using core::nanos;

// What the command line decides for every seed of a run.
struct run_settings {
    std::uint64_t events = 10000;          // events per seed (the run stops there unless shutting down)
    std::optional<std::uint64_t> handles;  // tenants per seed; default: random 1..12
    double fault_rate = 0.5;               // 0..1, scales every fault probability
    bool shutdown = true;                  // shut down mid-load in some seeds
    std::string plant_fault;               // testing the tooling: a bug planted in the core's effects
    std::uint64_t snapshot_every = 0;      // restore core, model and checker from a snapshot every N events (0: never)
};

// A uniform draw in [lo, hi].
struct span {
    nanos lo = 0;
    nanos hi = 0;
};

// One tenant: on/off phases; while on, acquires arrive in bursts.
struct tenant {
    std::uint64_t handle = 0;  // the handle id it uses
    bool greedy = false;       // a much higher demand than the others
    nanos on_mean = 0;         // mean length of an on phase
    nanos off_mean = 0;        // mean length of an off phase
    nanos gap_mean = 0;        // mean gap between bursts while on
    double p_burst = 0;        // another acquire at the same instant
    // Tenant isolation (issue 15).
    std::optional<std::uint64_t> max_leases;  // sent on its acquires (its handle's cap; 0 = none)
    std::uint64_t hold_factor = 1;            // its leases are held this many times longer
};

struct scenario {
    core::config config;
    std::vector<tenant> tenants;
    double load = 1;  // offered load relative to max_slots / mean holding time
    nanos hold_mean = 0;

    // Workload.
    span hold;                   // holding time of a lease
    double p_long_hold = 0;      // a hold 5..30 times longer (leak reports)
    double p_deadline = 0;       // an acquire carries its own deadline
    nanos deadline_max = 0;      // own deadline: now + [0, deadline_max]; some are try-acquires or "never"
    double p_weight = 0;         // an acquire carries a weight
    double p_cancel = 0;         // the caller gives up after its patience
    span patience;
    double p_late_cancel = 0;    // the cancel is sent even though the waiter completed (crosses a grant)
    double p_deregister = 0;     // a tenant going off deregisters its handle
    double p_other_cap = 0;      // an acquire names another max_leases (ignored while its handle is known)
    nanos resize_gap_mean = 0;   // mean time between `resize` events (0: none)
    std::uint64_t waiter_base = 1;  // first waiter id
    nanos start_at = 0;          // now of `start`
    nanos quantum = 1;           // scheduled times are rounded up to a multiple (ties)

    // Adapter delays.
    span spawn_delay;
    span retire_delay;
    span death_delay;            // after `spawned`, when a death is due
    span check_delay;            // a `check` until its `checked`
    span reset_delay;            // a `reset` until its `reset_done`

    // Faults (already scaled by the fault rate). The health faults are 0 when no health
    // feature is on, and drawn from the health generator.
    double p_spawn_fail = 0;     // one spawn fails
    double p_outage = 0;         // at a spawn's completion the backend goes down
    span outage;                 // for this long every spawn fails
    double p_slow_spawn = 0;     // a spawn takes 10x longer
    double p_dirty = 0;          // a release is dirty
    double p_die = 0;            // a fresh resource dies later (idle: `died`; leased: a dirty release)
    double p_silent_death = 0;   // a death while idle goes unnoticed: only a check (or its holder) finds it
    double p_check_dead = 0;     // a check of a live resource says `dead` anyway (a failed ping)
    double p_slow_check = 0;     // a check takes 10..50x longer
    double p_reset_fail = 0;     // a reset of a live resource fails
    double p_health_invalid = 0; // an injected invalid event is a checked or reset_done instead
    double p_slow_retire = 0;    // a retirement takes 20..100x longer
    double p_invalid = 0;        // per step: an invalid event is injected
    double p_bad_size = 0;       // an injected invalid event is a `resize` with a bad size instead

    // Ending.
    std::optional<std::uint64_t> shutdown_after;  // events before `shutdown`
    std::uint64_t late_acquires = 0;              // acquires after `shutdown` (rejected `closed`)
    double p_second_shutdown = 0;
    std::uint64_t after_closed = 0;               // events sent after `closed`
};

// Draws the scenario of one seed (the first draws of its generator `r`; the health
// settings and faults from `health`, so that a seed without them plays as it always did).
// Caps and resizes come from `isolation`, so that a seed without them plays as before.
[[nodiscard]] scenario make_scenario(rng& r, rng& health, rng& isolation, const run_settings& s);

// Caps or resizes are in play in this scenario.
[[nodiscard]] bool isolation_on(const scenario& s);

// "slots=3/1 waiters=17 rr lifo timeout=… | 5 tenants (1 greedy) load=1.70 hold=3.2ms | faults …"
[[nodiscard]] std::string describe(const scenario& s);

}  // namespace fairpool::sim
