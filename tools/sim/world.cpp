// What the world does: tenants arrive and give up, the backend spawns, checks, resets
// and destroys resources (and fails), holders release leases (some dirty), resources
// die (some unnoticed until a check, a reset or their holder finds out), and the pool is
// shut down. Each queue item becomes at most one core event.
#include "simulation_state.hpp"

namespace fairpool::sim {

using detail::plus;

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
                outage_end = plus(it.at, draw(sc.outage));
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
            if (s.incarnation != it.value || s.dead) return;  // that resource is gone already
            if (s.state == slot_state::idle && !(sc.p_silent_death > 0 && health.chance(sc.p_silent_death))) {
                ++result.adapter.deaths_idle;
                send(event::died(it.at, it.slot), event_error::ok);
            } else if (s.state == slot_state::leased) {
                s.dead = true;  // its holder will find out and release it dirty
                ++result.adapter.deaths_leased;
            } else if (s.state == slot_state::idle || s.state == slot_state::checking ||
                       s.state == slot_state::resetting) {
                s.dead = true;  // unnoticed: a check says dead, a reset fails, a holder releases dirty
                ++result.adapter.deaths_unnoticed;
            }
            return;
        }
        case action::check_result: {
            slot_view& s = slots[it.slot];
            if (s.state != slot_state::checking || s.operation != it.value) {
                fail("simulator bug: a check result for slot " + std::to_string(it.slot) + ", which is not checking");
                return;
            }
            bool dead = s.dead;
            if (dead) ++result.adapter.checks_found_dead;
            else if ((dead = health.chance(sc.p_check_dead))) ++result.adapter.checks_failed;
            send(event::checked(it.at, it.slot, dead ? core::check_outcome::dead : core::check_outcome::alive),
                 event_error::ok);
            return;
        }
        case action::reset_result: {
            slot_view& s = slots[it.slot];
            if (s.state != slot_state::resetting || s.operation != it.value) {
                fail("simulator bug: a reset result for slot " + std::to_string(it.slot) + ", which is not resetting");
                return;
            }
            const bool failed = s.dead || health.chance(sc.p_reset_fail);
            if (failed) ++result.adapter.resets_failed;
            send(event::reset_done(it.at, it.slot, failed ? core::reset_outcome::failed : core::reset_outcome::ok),
                 event_error::ok);
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
        case action::resize: resize(); return;
    }
}

// Random sizes under load, between 0 (no slot: acquires wait for the next resize, or
// time out) and slot_capacity; after `shutdown` no more are scheduled (one already due
// still comes: a resize while shutting down).
void simulation::impl::resize() {
    const std::uint64_t max_slots = isolation.between(0, slot_capacity());
    const std::uint64_t min_slots = isolation.chance(0.5) ? 0 : isolation.between(0, max_slots);
    if (!shutting_down) {
        item it;
        it.kind = action::resize;
        schedule(isolation.between(0, 2 * sc.resize_gap_mean), it);
    }
    send(event::resize(now, max_slots, min_slots), event_error::ok);
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
        ts.phase_end = plus(now, std::max<nanos>(1, spread(ts.on ? tp.on_mean : tp.off_mean)));
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

detail::event simulation::impl::make_acquire(std::uint32_t t) {
    const std::uint64_t id = fresh_waiter(t);
    std::optional<nanos> deadline;
    if (r.chance(sc.p_deadline)) {
        const std::uint64_t k = r.below(10);
        if (k < 2) deadline = r.between(0, now);  // try-acquire
        else if (k == 2) deadline = core::never;
        else deadline = plus(now, r.between(0, sc.deadline_max));
    }
    std::optional<std::uint64_t> max_leases = sc.tenants[t].max_leases;
    if (sc.p_other_cap > 0 && isolation.chance(sc.p_other_cap)) max_leases = isolation.between(0, 3);
    if (max_leases.value_or(0) > 0) ++result.adapter.capped_acquires;
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
    return event::acquire(now, id, sc.tenants[t].handle, deadline, weight, max_leases);
}

void simulation::impl::begin_shutdown() {
    result.shut_down = true;
    shutdown_budget = queue.size() + 8 * std::uint64_t{slot_capacity()} + 64;
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
    // A second `start` is invalid: only when invalid events are injected at all.
    for (std::uint64_t i = 0; i < sc.after_closed && !result.failure; ++i) {
        switch (r.below(sc.p_invalid > 0 ? 4 : 3)) {
            case 0: send(make_acquire(static_cast<std::uint32_t>(r.below(sc.tenants.size()))), event_error::ok); break;
            case 1: send(event::shutdown(now), event_error::ok); break;
            case 2: send(event::tick(plus(now, r.between(0, sc.hold_mean))), event_error::ok); break;
            default: send(event::start(now), event_error::already_started); break;
        }
    }
}

}  // namespace fairpool::sim
