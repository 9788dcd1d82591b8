#include "simulation.hpp"

#include <algorithm>
#include <ostream>

#include "fairpool/model/planted_faults.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/write.hpp"
#include "simulation_state.hpp"

namespace fairpool::sim {

using detail::plus;

simulation::simulation(std::uint64_t seed, const run_settings& settings)
    : impl_(std::make_unique<impl>(seed, settings)) {}

simulation::~simulation() = default;

seed_result simulation::run() { return impl_->run(); }

const core::config& simulation::config() const { return impl_->sc.config; }

const std::vector<core::event>& simulation::events() const { return impl_->rec_events; }

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
        line += 1 + effects.size() + (s.rec_errors[i] != core::event_error::ok ? 1 : 0);
        begin = end;
    }
    return last_event_line;
}

seed_result simulation::impl::run() {
    result.seed = seed;
    result.scenario = describe(sc);
    result.isolation = isolation_on(sc);
    result.policy = sc.config.policy;
    const std::uint64_t hash_seed = r.next();
    restore_hash_seed = hash_seed;
    try {
        pool.emplace(sc.config, hash_seed);
        pool->plant(model::planted_fault(settings.plant_fault));
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
    slots.assign(static_cast<std::size_t>(sc.config.slot_capacity.value_or(sc.config.max_slots)), slot_view{});
    if (r.chance(sc.p_invalid * 10)) inject_before_start();
    if (result.failure || !send(event::start(now), event_error::ok)) return;
    tenants.resize(sc.tenants.size());
    for (std::uint32_t t = 0; t < tenants.size(); ++t) {
        tenant_state& ts = tenants[t];
        const tenant& tp = sc.tenants[t];
        ts.on = r.chance(0.5);
        ts.phase_end = plus(now, spread(ts.on ? tp.on_mean : tp.off_mean));
        item it;
        it.kind = action::arrive;
        it.value = t;
        schedule(ts.on ? std::min(spread(tp.gap_mean), ts.phase_end - now) : ts.phase_end - now, it);
    }
    if (sc.resize_gap_mean > 0) {
        item it;
        it.kind = action::resize;
        schedule(isolation.between(0, 2 * sc.resize_gap_mean), it);
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
        return !snapshot_due() || restore_from_snapshot();
    }
    now = last_now = e.now;
    apply_event(e);
    for (const core::effect& f : effects) {
        apply_effect(f);
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
    const core::stats& gauges = pool->core().counters();
    if (gauges.handles_at_cap > 0) ++result.adapter.steps_at_cap;
    if (gauges.waiters_behind_cap > 0) ++result.adapter.steps_behind_cap;
    timer = pool->core().next_deadline();
    if (timer && *timer <= now)
        return fail("next_deadline() is " + std::to_string(*timer) + ", not after now (" + std::to_string(now) +
                    "): an armed timer would spin");
    // Last: `effects` belongs to the machines being replaced.
    return !snapshot_due() || restore_from_snapshot();
}

void simulation::impl::apply_event(const event& e) {
    using core::event_kind;
    switch (e.kind) {
        case event_kind::release: slots[e.slot].state = slot_state::idle, slots[e.slot].lease = 0; break;
        // A check or a reset that ended leaves the slot idle unless this step's effects say
        // otherwise (retire, grant, another check).
        case event_kind::checked:
        case event_kind::reset_done: slots[e.slot].state = slot_state::idle; break;
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
        case event_kind::start:
        case event_kind::acquire:
        case event_kind::cancel:
        case event_kind::deregister:
        case event_kind::died:
        case event_kind::tick:
        case event_kind::resize: break;  // retirements and spawns come as effects
    }
}

void simulation::impl::apply_effect(const core::effect& f) {
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
            const waiter_record* w = find_waiter(f.waiter);
            const std::uint64_t hold_factor = w ? sc.tenants[w->tenant].hold_factor : 1;
            if (!settle_waiter(f)) return;
            nanos hold = draw(sc.hold);
            if (r.chance(sc.p_long_hold)) hold *= r.between(5, 30);
            hold *= hold_factor;  // a greedy tenant's long holds (issue 15)
            item it;
            it.kind = action::release;
            it.slot = f.slot;
            it.value = f.lease;
            it.dirty = r.chance(sc.p_dirty);
            schedule(hold, it);
            break;
        }
        case effect_kind::reject: settle_waiter(f); break;
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
        case effect_kind::check: {
            slot_view& s = slots[f.slot];
            s.state = slot_state::checking;
            nanos delay = draw_health(sc.check_delay);
            if (health.chance(sc.p_slow_check)) delay *= health.between(10, 50), ++result.adapter.slow_checks;
            item it;
            it.kind = action::check_result;
            it.slot = f.slot;
            it.value = ++s.operation;
            schedule(delay, it);
            break;
        }
        case effect_kind::reset: {
            slot_view& s = slots[f.slot];
            s.state = slot_state::resetting;
            item it;
            it.kind = action::reset_result;
            it.slot = f.slot;
            it.value = ++s.operation;
            schedule(draw_health(sc.reset_delay), it);
            break;
        }
        case effect_kind::leak_suspected: break;
        case effect_kind::closed: closed = true; break;
    }
}

// --snapshot-every: the run goes on with machines restored from the core's snapshot,
// which must be the model's, record for record (section 7.2).
bool simulation::impl::restore_from_snapshot() {
    std::vector<core::snapshot_record> snapshot;
    auto put = [&](const core::snapshot_record& rec) { snapshot.push_back(rec); };
    pool->core().snapshot(put);
    const std::vector<core::snapshot_record> of_model = pool->model().snapshot();
    for (std::size_t i = 0; i < std::max(snapshot.size(), of_model.size()); ++i)
        if (i >= snapshot.size() || i >= of_model.size() || !(snapshot[i] == of_model[i]))
            return fail("core and model snapshots differ at record " + std::to_string(i) + ": core `" +
                            (i < snapshot.size() ? trace::format(snapshot[i]) : "(none)") + "`, model `" +
                            (i < of_model.size() ? trace::format(of_model[i]) : "(none)") + "`");
    try {
        pool.emplace(sc.config, snapshot, ++restore_hash_seed);
    } catch (const core::snapshot_error& e) {
        return fail("the core refused its own snapshot at record " + std::to_string(e.record()) + ": " + e.what());
    }
    pool->plant(model::planted_fault(settings.plant_fault));
    return true;
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

detail::waiter_record* simulation::impl::find_waiter(std::uint64_t id) {
    const std::uint64_t index = id - sc.waiter_base;
    if (id < sc.waiter_base || index >= waiters.size()) return nullptr;
    return &waiters[static_cast<std::size_t>(index)];
}

bool simulation::impl::settle_waiter(const core::effect& f) {
    waiter_record* w = find_waiter(f.waiter);
    if (!w)
        return fail(std::string("simulator: a ") + core::to_string(f.kind) + " names waiter " +
                    std::to_string(f.waiter) + ", which it never sent");
    if (w->state == waiter_state::queued)
        remove_queued(f.waiter), meter.left(w->tenant, f.kind == core::effect_kind::grant);
    w->state = waiter_state::done;
    return true;
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

}  // namespace fairpool::sim
