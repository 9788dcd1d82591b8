// Invalid events, injected now and then: each is built so that exactly one error is
// right (the first check of section 3 that fails), and none may change anything.
#include <iterator>

#include "simulation_state.hpp"

namespace fairpool::sim {

using detail::plus;

void simulation::impl::inject_before_start() {
    event e;
    switch (r.below(4)) {
        case 0: e = event::tick(plus(now, r.between(0, sc.hold_mean))); break;
        case 1: e = event::acquire(now, fresh_waiter(0), sc.tenants[0].handle); break;
        case 2: e = event::release(now, 0, 1); break;
        default: e = event::shutdown(now); break;
    }
    send(e, event_error::not_started);
}

void simulation::impl::inject_invalid() {
    // Slots are numbered by slot_capacity (decision 16): a bad one is at or above it.
    const std::uint32_t capacity = slot_capacity();
    const std::uint32_t slot = static_cast<std::uint32_t>(r.below(capacity));
    const slot_view& s = slots[slot];
    const auto bad_slot = [&] {
        const std::uint32_t bad = static_cast<std::uint32_t>(r.between(capacity, 65535));
        static constexpr core::event_kind kinds[] = {core::event_kind::release, core::event_kind::spawned,
                                                     core::event_kind::spawn_failed, core::event_kind::retired,
                                                     core::event_kind::died};
        static constexpr core::event_kind health_kinds[] = {core::event_kind::checked, core::event_kind::reset_done};
        core::event_kind kind = kinds[r.below(std::size(kinds))];
        if (sc.p_health_invalid > 0 && health.chance(sc.p_health_invalid)) kind = health_kinds[health.below(2)];
        event e = event::of_slot(kind, now, bad);
        if (e.kind == core::event_kind::release) e.lease = r.between(0, last_lease + 1);
        send(e, event_error::bad_slot);
    };
    // Seeds with caps or resizes sometimes send a bad size: max_slots above
    // slot_capacity, or min_slots above max_slots (max_slots 0 is a size: decision 16).
    if (sc.p_bad_size > 0 && isolation.chance(sc.p_bad_size)) {
        const std::uint64_t k = isolation.below(3);
        const std::uint64_t max_slots = k == 0   ? 0
                                        : k == 1 ? isolation.between(capacity + 1, 70000)
                                                 : isolation.between(1, capacity);
        const std::uint64_t min_slots = k == 1 ? isolation.below(2) : isolation.between(max_slots + 1, max_slots + 3);
        ++result.adapter.bad_sizes;
        send(event::resize(now, max_slots, min_slots), event_error::bad_size);
        return;
    }
    // Health seeds (and only they: the others play as before) sometimes send a result
    // for a slot that waits for none.
    if (sc.p_health_invalid > 0 && health.chance(sc.p_health_invalid)) {
        if (health.chance(0.5)) {
            if (s.state == slot_state::checking) return bad_slot();
            const bool dead = health.chance(0.5);
            send(event::checked(now, slot, dead ? core::check_outcome::dead : core::check_outcome::alive),
                 event_error::not_checking);
        } else {
            if (s.state == slot_state::resetting) return bad_slot();
            const bool failed = health.chance(0.5);
            send(event::reset_done(now, slot, failed ? core::reset_outcome::failed : core::reset_outcome::ok),
                 event_error::not_resetting);
        }
        return;
    }
    switch (r.below(9)) {
        case 0: {  // time first: even an otherwise bad event says time_went_backwards
            if (last_now == 0) return bad_slot();
            event e = r.chance(0.5) ? event::tick(last_now - 1)
                                    : event::release(r.between(0, last_now - 1), capacity, 0);
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
