#include "simulation.hpp"

#include <algorithm>
#include <ostream>
#include <queue>

#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::sim {

namespace {

using core::event;
using core::event_error;
using core::slot_state;

// What the world does next. Each item becomes at most one core event.
enum class action : std::uint8_t {
    arrive,          // a tenant's next acquire (or phase change)
    spawn_result,    // the backend finished a spawn: `spawned` or `spawn_failed`
    release,         // a lease comes back
    retired,         // the backend finished destroying a resource
    death,           // a resource dies (idle: `died`; leased: its release will be dirty)
    cancel,          // a caller gives up
    shutdown_again,  // a second `shutdown` (idempotent)
};

struct item {
    nanos at = 0;
    std::uint64_t seq = 0;  // ties in time: scheduling order
    action kind = action::arrive;
    std::uint32_t slot = 0;
    std::uint64_t value = 0;  // tenant index, lease, incarnation or waiter id
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
    bool dead = false;              // its resource died while leased
};

struct tenant_state {
    bool on = false;
    nanos phase_end = 0;
};

// Bugs to plant between the core and the checks (--plant-fault), the same as
// fairpool-replay --fault, so that a planted failure replays with that option.
void fault_reuse_dirty(const event&, std::vector<core::effect>& effects) {
    std::erase_if(effects, [](const core::effect& f) {
        return f.kind == core::effect_kind::retire && f.retired == core::retire_reason::dirty;
    });
}

void fault_lose_cancel(const event&, std::vector<core::effect>& effects) {
    std::erase_if(effects, [](const core::effect& f) {
        return f.kind == core::effect_kind::reject && f.rejected == core::reject_reason::cancelled;
    });
}

model::lockstep::fault fault_named(const std::string& name) {
    if (name == "reuse-dirty") return fault_reuse_dirty;
    if (name == "lose-cancel") return fault_lose_cancel;
    return nullptr;
}

}  // namespace

struct simulation::impl {
    impl(std::uint64_t seed_, const run_settings& settings_)
        : seed(seed_), settings(settings_), r(seed_), sc(make_scenario(r, settings_)), meter(sc.tenants.size()) {}

    std::uint64_t seed;
    run_settings settings;
    rng r;
    scenario sc;
    std::optional<model::lockstep> pool;
    fairness_meter meter;
    seed_result result;

    // Virtual world.
    std::priority_queue<item, std::vector<item>, later> queue;
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
    bool started = false;
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
    void apply_effect(const event& e, const core::effect& f);
    bool check_views();

    // The world.
    void schedule(nanos delay, item it) {
        nanos at = now + delay;
        if (sc.quantum > 1) at = (at + sc.quantum - 1) / sc.quantum * sc.quantum;
        it.at = at;
        it.seq = seq++;
        queue.push(it);
    }
    nanos draw(span s) { return r.between(s.lo, std::max(s.lo, s.hi)); }
    nanos spread(nanos mean) { return r.chance(0.9) ? r.between(0, 2 * mean) : r.between(0, 10 * mean); }
    void handle(const item& it);
    void arrive(std::uint32_t t);
    event make_acquire(std::uint32_t t);
    std::uint64_t fresh_waiter(std::uint32_t t);
    waiter_record* find_waiter(std::uint64_t id);
    void add_queued(std::uint64_t id);
    void remove_queued(std::uint64_t id);
    void begin_shutdown();
    void inject_invalid();
    void inject_before_start();
    void after_closed();
};

simulation::simulation(std::uint64_t seed, const run_settings& settings)
    : impl_(std::make_unique<impl>(seed, settings)) {}

simulation::~simulation() = default;

seed_result simulation::run() { return impl_->run(); }

std::size_t simulation::write_trace(std::ostream& out) const {
    const impl& s = *impl_;
    trace::write_header(out, s.sc.config);
    std::size_t line = 3;
    std::size_t last_event_line = 0;
    std::size_t begin = 0;
    for (std::size_t i = 0; i < s.rec_events.size(); ++i) {
        const std::size_t end = s.rec_effects_end[i];
        const std::span<const core::effect> effects(s.rec_effects.data() + begin, end - begin);
        trace::write_step(out, s.rec_events[i], effects, s.rec_errors[i]);
        last_event_line = line;
        line += 1 + effects.size() + (s.rec_errors[i] != event_error::ok ? 1 : 0);
        begin = end;
    }
    return last_event_line;
}

seed_result simulation::impl::run() {
    result.seed = seed;
    result.scenario = describe(sc);
    result.policy = sc.config.policy;
    const std::uint64_t hash_seed = r.next();
    try {
        pool.emplace(sc.config, hash_seed);
        pool->plant(fault_named(settings.plant_fault));
    } catch (const core::config_error& e) {
        fail(std::string("simulator bug: generated an invalid config: ") + e.what());
        return result;
    }
    const std::size_t reserve = static_cast<std::size_t>(std::min<std::uint64_t>(settings.events, 1'000'000) + 64);
    rec_events.reserve(reserve);
    rec_effects_end.reserve(reserve);
    rec_errors.reserve(reserve);
    rec_effects.reserve(reserve * 2);
    waiters.reserve(reserve / 2);
    begin();
    if (!result.failure) loop();
    finish_run();
    return result;
}

void simulation::impl::begin() {
    now = sc.start_at;
    next_waiter = sc.waiter_base;
    late_acquires_left = sc.late_acquires;
    slots.assign(static_cast<std::size_t>(sc.config.max_slots), slot_view{});
    if (r.chance(sc.p_invalid * 10)) inject_before_start();
    if (result.failure || !send(event::start(now), event_error::ok)) return;
    tenants.resize(sc.tenants.size());
    for (std::uint32_t t = 0; t < tenants.size(); ++t) {
        tenant_state& ts = tenants[t];
        const tenant& tp = sc.tenants[t];
        ts.on = r.chance(0.5);
        ts.phase_end = now + spread(ts.on ? tp.on_mean : tp.off_mean);
        item it;
        it.kind = action::arrive;
        it.value = t;
        schedule(ts.on ? std::min(spread(tp.gap_mean), ts.phase_end - now) : ts.phase_end - now, it);
    }
}

void simulation::impl::loop() {
    while (!result.failure) {
        if (closed) {
            after_closed();
            return;
        }
        if (shutting_down) {
            if (events_since_shutdown > shutdown_budget) {
                fail("no `closed` within " + std::to_string(shutdown_budget) +
                     " events after `shutdown` (bound: pending work at shutdown + 8 per slot + 64)");
                return;
            }
        } else {
            if (result.events >= settings.events) return;
            if (sc.shutdown_after && result.events >= *sc.shutdown_after) {
                begin_shutdown();
                continue;
            }
            if (r.chance(sc.p_invalid)) {
                inject_invalid();
                continue;
            }
        }
        const bool have_item = !queue.empty();
        if (timer && (!have_item || *timer < queue.top().at)) {
            ++result.adapter.timer_ticks;
            send(event::tick(*timer), event_error::ok, true);
            continue;
        }
        if (!have_item) {
            if (shutting_down) fail("stuck after `shutdown`: nothing pending, no timer armed, and no `closed`");
            return;
        }
        const item it = queue.top();
        queue.pop();
        now = it.at;
        handle(it);
    }
}

void simulation::impl::finish_run() {
    if (pool) result.counters = pool->core().counters();
    result.fairness = meter.finish();
    result.virtual_time = now - sc.start_at;
    result.closed = closed;
}

// ---- sending one event -------------------------------------------------------------

bool simulation::impl::send(const event& e, event_error expected, bool from_timer) {
    const model::lockstep::outcome out = pool->step(e);
    const std::vector<core::effect>& effects = *out.effects;
    rec_events.push_back(e);
    rec_effects.insert(rec_effects.end(), effects.begin(), effects.end());
    rec_effects_end.push_back(rec_effects.size());
    rec_errors.push_back(out.error);
    ++result.events;
    if (shutting_down) ++events_since_shutdown;

    if (out.breach) return fail(*out.breach, true);
    if (out.error != expected)
        return fail(std::string("the event should have returned ") + core::to_string(expected) + ", it returned " +
                    core::to_string(out.error));
    if (out.error != event_error::ok) {
        ++result.adapter.invalid_events;
        return true;
    }
    now = last_now = e.now;
    apply_event(e);
    for (const core::effect& f : effects) {
        apply_effect(e, f);
        if (result.failure) return false;
    }
    if (e.kind == core::event_kind::acquire) {
        waiter_record* w = find_waiter(e.waiter);
        if (w && w->state == waiter_state::sent) {
            w->state = waiter_state::queued;
            add_queued(e.waiter);
            const bool weighted = sc.config.policy == core::fairness_policy::round_robin && e.weight;
            meter.queued(w->tenant, weighted ? *e.weight : 1);
        }
    }
    if (from_timer && effects.empty())
        return fail("a tick at next_deadline() emitted nothing (an armed timer would spin)");
    if (!check_views()) return false;
    timer = pool->core().next_deadline();
    if (timer && *timer <= now)
        return fail("next_deadline() is " + std::to_string(*timer) + ", not after now (" + std::to_string(now) +
                    "): an armed timer would spin");
    return true;
}

void simulation::impl::apply_event(const event& e) {
    using core::event_kind;
    switch (e.kind) {
        case event_kind::start: started = true; break;
        case event_kind::release: slots[e.slot].state = slot_state::idle, slots[e.slot].lease = 0; break;
        case event_kind::spawned: {
            slots[e.slot].state = slot_state::idle;
            if (!shutting_down && r.chance(sc.p_die)) {
                item it;
                it.kind = action::death;
                it.slot = e.slot;
                it.value = slots[e.slot].incarnation;
                schedule(draw(sc.death_delay), it);
            }
            break;
        }
        case event_kind::spawn_failed:
        case event_kind::retired: slots[e.slot].state = slot_state::empty; break;
        case event_kind::shutdown: shutting_down = true; break;
        case event_kind::acquire:
        case event_kind::cancel:
        case event_kind::deregister:
        case event_kind::died:
        case event_kind::tick: break;
    }
}

void simulation::impl::apply_effect(const event& e, const core::effect& f) {
    using core::effect_kind;
    if (f.kind != effect_kind::closed && f.kind != effect_kind::reject && f.slot >= slots.size()) {
        fail("simulator: an effect names slot " + std::to_string(f.slot));
        return;
    }
    switch (f.kind) {
        case effect_kind::grant: {
            slot_view& s = slots[f.slot];
            s.state = slot_state::leased;
            s.lease = f.lease;
            last_lease = std::max(last_lease, f.lease);
            waiter_record* w = find_waiter(f.waiter);
            if (!w) {
                fail("simulator: a grant names waiter " + std::to_string(f.waiter) + ", which it never sent");
                return;
            }
            if (w->state == waiter_state::queued) remove_queued(f.waiter), meter.left(w->tenant, true);
            w->state = waiter_state::done;
            nanos hold = draw(sc.hold);
            if (r.chance(sc.p_long_hold)) hold *= r.between(5, 30);
            item it;
            it.kind = action::release;
            it.slot = f.slot;
            it.value = f.lease;
            it.dirty = r.chance(sc.p_dirty);
            schedule(hold, it);
            break;
        }
        case effect_kind::reject: {
            waiter_record* w = find_waiter(f.waiter);
            if (!w) {
                fail("simulator: a reject names waiter " + std::to_string(f.waiter) + ", which it never sent");
                return;
            }
            if (w->state == waiter_state::queued) remove_queued(f.waiter), meter.left(w->tenant, false);
            w->state = waiter_state::done;
            break;
        }
        case effect_kind::spawn: {
            slot_view& s = slots[f.slot];
            s.state = slot_state::spawning;
            s.dead = false;
            ++s.incarnation;
            nanos delay = draw(sc.spawn_delay);
            if (r.chance(sc.p_slow_spawn)) delay *= 10;
            item it;
            it.kind = action::spawn_result;
            it.slot = f.slot;
            it.value = s.incarnation;
            schedule(delay, it);
            break;
        }
        case effect_kind::retire: {
            slots[f.slot].state = slot_state::retiring;
            nanos delay = draw(sc.retire_delay);
            if (r.chance(sc.p_slow_retire)) delay *= r.between(20, 100);
            item it;
            it.kind = action::retired;
            it.slot = f.slot;
            schedule(delay, it);
            break;
        }
        case effect_kind::leak_suspected: break;
        case effect_kind::closed: closed = true; break;
    }
    (void)e;
}

bool simulation::impl::check_views() {
    const core::scheduler& core = pool->core();
    for (std::uint32_t i = 0; i < slots.size(); ++i) {
        if (core.slot(i) != slots[i].state)
            return fail("the adapter's view of slot " + std::to_string(i) + " is " + core::to_string(slots[i].state) +
                        ", the core says " + core::to_string(core.slot(i)));
    }
    return true;
}

// ---- waiters -----------------------------------------------------------------------

waiter_record* simulation::impl::find_waiter(std::uint64_t id) {
    const std::uint64_t index = id - sc.waiter_base;
    if (id < sc.waiter_base || index >= waiters.size()) return nullptr;
    return &waiters[static_cast<std::size_t>(index)];
}

std::uint64_t simulation::impl::fresh_waiter(std::uint32_t t) {
    waiter_record w;
    w.tenant = t;
    waiters.push_back(w);
    return next_waiter++;
}

void simulation::impl::add_queued(std::uint64_t id) {
    find_waiter(id)->position = static_cast<std::uint32_t>(queued_ids.size());
    queued_ids.push_back(id);
}

void simulation::impl::remove_queued(std::uint64_t id) {
    const std::uint32_t pos = find_waiter(id)->position;
    queued_ids[pos] = queued_ids.back();
    find_waiter(queued_ids[pos])->position = pos;
    queued_ids.pop_back();
}

// ---- the world ---------------------------------------------------------------------

void simulation::impl::handle(const item& it) {
    switch (it.kind) {
        case action::arrive: arrive(static_cast<std::uint32_t>(it.value)); return;
        case action::spawn_result: {
            const slot_view& s = slots[it.slot];
            if (s.state != slot_state::spawning || s.incarnation != it.value) {
                fail("simulator bug: a spawn result for slot " + std::to_string(it.slot) + ", which is not spawning");
                return;
            }
            bool failed = now < outage_end || r.chance(sc.p_spawn_fail);
            if (!failed && r.chance(sc.p_outage)) {
                outage_end = it.at + draw(sc.outage);
                ++result.adapter.outages;
                failed = true;
            }
            send(failed ? event::spawn_failed(it.at, it.slot) : event::spawned(it.at, it.slot), event_error::ok);
            return;
        }
        case action::release: {
            const slot_view& s = slots[it.slot];
            if (s.state != slot_state::leased || s.lease != it.value) {
                fail("simulator bug: a release of slot " + std::to_string(it.slot) + " lease " +
                     std::to_string(it.value) + ", which is not out");
                return;
            }
            const bool dirty = it.dirty || s.dead;
            if (dirty) ++result.adapter.dirty_releases;
            send(event::release(it.at, it.slot, it.value, dirty ? core::release_outcome::dirty : core::release_outcome::clean),
                 event_error::ok);
            return;
        }
        case action::retired: {
            if (slots[it.slot].state != slot_state::retiring) {
                fail("simulator bug: a retirement of slot " + std::to_string(it.slot) + ", which is not retiring");
                return;
            }
            send(event::retired(it.at, it.slot), event_error::ok);
            return;
        }
        case action::death: {
            slot_view& s = slots[it.slot];
            if (s.incarnation != it.value) return;  // that resource is gone already
            if (s.state == slot_state::idle) {
                ++result.adapter.deaths_idle;
                send(event::died(it.at, it.slot), event_error::ok);
            } else if (s.state == slot_state::leased && !s.dead) {
                s.dead = true;  // its holder will find out and release it dirty
                ++result.adapter.deaths_leased;
            }
            return;
        }
        case action::cancel: {
            const waiter_record* w = find_waiter(it.value);
            if (!w) return;
            if (w->state == waiter_state::done) {
                if (!r.chance(sc.p_late_cancel)) return;
                ++result.adapter.late_cancels;
            }
            ++result.adapter.cancels;
            send(event::cancel(it.at, it.value), event_error::ok);
            return;
        }
        case action::shutdown_again: send(event::shutdown(it.at), event_error::ok); return;
    }
}

void simulation::impl::arrive(std::uint32_t t) {
    tenant_state& ts = tenants[t];
    const tenant& tp = sc.tenants[t];
    item next;
    next.kind = action::arrive;
    next.value = t;
    if (shutting_down) {
        // Arrivals stop; a few late acquires must be rejected `closed`.
        if (late_acquires_left > 0 && !closed) {
            --late_acquires_left;
            send(make_acquire(t), event_error::ok);
        }
        return;
    }
    if (now >= ts.phase_end) {
        ts.on = !ts.on;
        ts.phase_end = now + std::max<nanos>(1, spread(ts.on ? tp.on_mean : tp.off_mean));
        if (!ts.on && r.chance(sc.p_deregister)) {
            schedule(ts.phase_end - now, next);
            ++result.adapter.deregisters;
            send(event::deregister(now, tp.handle), event_error::ok);
            return;
        }
    }
    if (!ts.on) {
        schedule(ts.phase_end - now, next);
        return;
    }
    const nanos gap = r.chance(tp.p_burst) ? 0 : spread(tp.gap_mean);
    schedule(std::min(gap, ts.phase_end - now), next);
    send(make_acquire(t), event_error::ok);
}

event simulation::impl::make_acquire(std::uint32_t t) {
    const std::uint64_t id = fresh_waiter(t);
    std::optional<nanos> deadline;
    if (r.chance(sc.p_deadline)) {
        const std::uint64_t k = r.below(10);
        if (k < 2) deadline = r.between(0, now);  // try-acquire
        else if (k == 2) deadline = core::never;
        else deadline = now + r.between(0, sc.deadline_max);
    }
    std::optional<std::uint64_t> weight;
    if (r.chance(sc.p_weight)) {
        const std::uint64_t k = r.below(20);
        weight = k < 16 ? r.between(1, 4) : k < 19 ? r.between(5, 100) : core::max_weight;
    }
    if (r.chance(sc.p_cancel)) {
        item it;
        it.kind = action::cancel;
        it.value = id;
        schedule(draw(sc.patience), it);
    }
    return event::acquire(now, id, sc.tenants[t].handle, deadline, weight);
}

void simulation::impl::begin_shutdown() {
    result.shut_down = true;
    shutdown_budget = queue.size() + 8 * sc.config.max_slots + 64;
    if (!send(event::shutdown(now), event_error::ok)) return;
    if (r.chance(sc.p_second_shutdown)) {
        item it;
        it.kind = action::shutdown_again;
        schedule(r.between(0, sc.hold_mean), it);
        ++shutdown_budget;
    }
}

void simulation::impl::after_closed() {
    // Events after `closed` are handled as usual.
    for (std::uint64_t i = 0; i < sc.after_closed && !result.failure; ++i) {
        switch (r.below(4)) {
            case 0: send(make_acquire(static_cast<std::uint32_t>(r.below(sc.tenants.size()))), event_error::ok); break;
            case 1: send(event::shutdown(now), event_error::ok); break;
            case 2: send(event::tick(now + r.between(0, sc.hold_mean)), event_error::ok); break;
            default: send(event::start(now), event_error::already_started); break;
        }
    }
}

// ---- invalid events ----------------------------------------------------------------
// Each is built so that exactly one error is right (the first check of section 3 that
// fails); none may change anything.

void simulation::impl::inject_before_start() {
    event e;
    switch (r.below(4)) {
        case 0: e = event::tick(now + r.between(0, sc.hold_mean)); break;
        case 1: e = event::acquire(now, fresh_waiter(0), sc.tenants[0].handle); break;
        case 2: e = event::release(now, 0, 1); break;
        default: e = event::shutdown(now); break;
    }
    send(e, event_error::not_started);
}

void simulation::impl::inject_invalid() {
    const std::uint32_t max_slots = static_cast<std::uint32_t>(sc.config.max_slots);
    const std::uint32_t slot = static_cast<std::uint32_t>(r.below(max_slots));
    const slot_view& s = slots[slot];
    const auto bad_slot = [&] {
        const std::uint32_t bad = static_cast<std::uint32_t>(r.between(max_slots, 65535));
        static constexpr core::event_kind kinds[] = {core::event_kind::release, core::event_kind::spawned,
                                                     core::event_kind::spawn_failed, core::event_kind::retired,
                                                     core::event_kind::died};
        event e = event::of_slot(kinds[r.below(5)], now, bad);
        if (e.kind == core::event_kind::release) e.lease = r.between(0, last_lease + 1);
        send(e, event_error::bad_slot);
    };
    switch (r.below(9)) {
        case 0: {  // time first: even an otherwise bad event says time_went_backwards
            if (last_now == 0) return bad_slot();
            event e = r.chance(0.5) ? event::tick(last_now - 1)
                                    : event::release(r.between(0, last_now - 1), max_slots, 0);
            send(e, event_error::time_went_backwards);
            return;
        }
        case 1: return bad_slot();
        case 2: {  // fields before state: a bad weight on a queued waiter's id is bad_weight
            const std::uint64_t id = !queued_ids.empty() && r.chance(0.5)
                                         ? queued_ids[static_cast<std::size_t>(r.below(queued_ids.size()))]
                                         : fresh_waiter(0);
            const std::uint64_t k = r.below(3);
            const std::uint64_t weight = k == 0 ? 0 : k == 1 ? core::max_weight + 1 + r.below(1000) : ~std::uint64_t{0};
            send(event::acquire(now, id, sc.tenants[0].handle, std::nullopt, weight), event_error::bad_weight);
            return;
        }
        case 3: {
            if (queued_ids.empty()) return bad_slot();
            const std::uint64_t id = queued_ids[static_cast<std::size_t>(r.below(queued_ids.size()))];
            const auto t = static_cast<std::size_t>(r.below(sc.tenants.size()));
            send(event::acquire(now, id, sc.tenants[t].handle), event_error::duplicate_waiter);
            return;
        }
        case 4: {
            const std::uint64_t lease = s.state == slot_state::leased ? s.lease + 1 + r.below(3) : r.between(0, last_lease + 1);
            send(event::release(now, slot, lease, r.chance(0.5) ? core::release_outcome::dirty : core::release_outcome::clean),
                 event_error::stale_lease);
            return;
        }
        case 5:
            if (s.state == slot_state::spawning) return bad_slot();
            send(r.chance(0.5) ? event::spawned(now, slot) : event::spawn_failed(now, slot), event_error::not_spawning);
            return;
        case 6:
            if (s.state == slot_state::retiring) return bad_slot();
            send(event::retired(now, slot), event_error::not_retiring);
            return;
        case 7:
            if (s.state == slot_state::idle) return bad_slot();
            send(event::died(now, slot), event_error::not_idle);
            return;
        default: send(event::start(now), event_error::already_started); return;
    }
}

}  // namespace fairpool::sim
