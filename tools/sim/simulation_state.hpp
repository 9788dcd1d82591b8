#pragma once
// Internals of one seed's simulation, shared by simulation.cpp (the run loop and the
// core), world.cpp (what the world does: tenants, backend, callers) and
// invalid_events.cpp (the invalid events it injects). Not part of any interface.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "fairness.hpp"
#include "fairpool/model/lockstep.hpp"
#include "rng.hpp"
#include "simulation.hpp"
#include "workload.hpp"

namespace fairpool::sim {

namespace detail {

using core::event;
using core::event_error;
using core::slot_state;

// Time arithmetic saturates at 2^64-1, as the core's does: some seeds run into the
// end of time.
inline nanos plus(nanos t, nanos d) { return d > core::never - t ? core::never : t + d; }

// What the world does next. Each item becomes at most one core event.
enum class action : std::uint8_t {
    arrive,          // a tenant's next acquire (or phase change)
    spawn_result,    // the backend finished a spawn: `spawned` or `spawn_failed`
    release,         // a lease comes back
    retired,         // the backend finished destroying a resource
    death,           // a resource dies (idle: `died`, or unnoticed; else found by its holder, check or reset)
    check_result,    // the backend finished a check: `checked` alive or dead
    reset_result,    // the backend finished a reset: `reset_done` ok or failed
    cancel,          // a caller gives up
    shutdown_again,  // a second `shutdown` (idempotent)
    resize,          // the operator resizes the pool (issue 15)
};

struct item {
    nanos at = 0;
    std::uint64_t seq = 0;  // ties in time: scheduling order
    action kind = action::arrive;
    std::uint32_t slot = 0;
    std::uint64_t value = 0;  // tenant index, lease, incarnation, waiter id or check/reset number
    bool dirty = false;       // release
};

struct later {
    bool operator()(const item& a, const item& b) const { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }
};

enum class waiter_state : std::uint8_t { sent, queued, done };

struct waiter_record {
    std::uint32_t tenant = 0;
    waiter_state state = waiter_state::sent;
    std::uint32_t position = 0;  // in queued_ids while queued
};

// The adapter's own view of a slot, from the events it sent and the effects it saw.
struct slot_view {
    slot_state state = slot_state::empty;
    std::uint64_t lease = 0;
    std::uint64_t incarnation = 0;  // resources spawned into this slot so far
    std::uint64_t operation = 0;    // checks and resets started on this slot so far
    bool dead = false;              // its resource died unnoticed: its holder, check or reset finds out
};

struct tenant_state {
    bool on = false;
    nanos phase_end = 0;
};

}  // namespace detail

struct simulation::impl {
    using event = detail::event;
    using event_error = detail::event_error;
    using slot_state = detail::slot_state;
    using item = detail::item;
    using action = detail::action;
    using waiter_record = detail::waiter_record;
    using waiter_state = detail::waiter_state;
    using slot_view = detail::slot_view;
    using tenant_state = detail::tenant_state;

    impl(std::uint64_t seed_, const run_settings& settings_)
        : seed(seed_), settings(settings_), r(seed_), health(~seed_),
          isolation(seed_ ^ 0x1515151515151515ULL), sc(make_scenario(r, health, isolation, settings_)),
          meter(sc.tenants.size()) {}

    std::uint64_t seed;
    run_settings settings;
    rng r;
    rng health;  // health settings, faults and delays only: seeds without health play as before
    rng isolation;  // caps and resizes only: seeds without them play as before
    scenario sc;
    std::optional<model::lockstep> pool;
    std::uint64_t restore_hash_seed = 0;  // of the cores restored from snapshots (--snapshot-every)
    fairness_meter meter;
    seed_result result;

    // Virtual world.
    std::priority_queue<item, std::vector<item>, detail::later> queue;
    std::uint64_t seq = 0;
    nanos now = 0;       // the virtual clock
    nanos last_now = 0;  // now of the last valid event
    std::optional<nanos> timer;
    std::vector<slot_view> slots;
    std::vector<tenant_state> tenants;
    std::vector<waiter_record> waiters;  // by waiter id - sc.waiter_base
    std::vector<std::uint64_t> queued_ids;
    std::uint64_t next_waiter = 0;
    std::uint64_t last_lease = 0;
    nanos outage_end = 0;
    bool shutting_down = false;
    bool closed = false;
    std::uint64_t late_acquires_left = 0;
    std::uint64_t events_since_shutdown = 0;
    std::uint64_t shutdown_budget = 0;

    // The trace so far.
    std::vector<event> rec_events;
    std::vector<core::effect> rec_effects;
    std::vector<std::size_t> rec_effects_end;
    std::vector<event_error> rec_errors;

    seed_result run();
    void begin();
    void loop();
    void finish_run();

    bool fail(std::string why, bool by_lockstep = false) {
        if (!result.failure) result.failure = std::move(why), result.found_by_lockstep = by_lockstep;
        return false;
    }

    // Sending one event.
    bool send(const event& e, event_error expected, bool from_timer = false);
    void apply_event(const event& e);
    void apply_effect(const core::effect& f);
    bool check_views();
    bool restore_from_snapshot();
    [[nodiscard]] bool snapshot_due() const {
        return settings.snapshot_every != 0 && result.events % settings.snapshot_every == 0;
    }

    // The world.
    void schedule(nanos delay, item it) {
        nanos at = detail::plus(now, delay);
        if (sc.quantum > 1 && at <= core::never - (sc.quantum - 1)) at = (at + sc.quantum - 1) / sc.quantum * sc.quantum;
        it.at = at;
        it.seq = seq++;
        queue.push(it);
    }
    nanos draw(span s) { return r.between(s.lo, std::max(s.lo, s.hi)); }
    nanos draw_health(span s) { return health.between(s.lo, std::max(s.lo, s.hi)); }
    nanos spread(nanos mean) { return r.chance(0.9) ? r.between(0, 2 * mean) : r.between(0, 10 * mean); }
    void handle(const item& it);
    void arrive(std::uint32_t t);
    event make_acquire(std::uint32_t t);
    std::uint64_t fresh_waiter(std::uint32_t t);
    waiter_record* find_waiter(std::uint64_t id);
    // A grant or a reject: its waiter is done (and leaves the queue if it was queued).
    // False, and the run fails, if the simulator never sent that waiter.
    bool settle_waiter(const core::effect& f);
    void add_queued(std::uint64_t id);
    void remove_queued(std::uint64_t id);
    void begin_shutdown();
    void resize();
    [[nodiscard]] std::uint32_t slot_capacity() const { return static_cast<std::uint32_t>(slots.size()); }
    void inject_invalid();
    void inject_before_start();
    void after_closed();
};


}  // namespace fairpool::sim
