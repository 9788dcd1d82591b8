#pragma once
// The one generator of scheduler events for the whole-machine tests: the allocation and
// determinism tests (seeded_choices.hpp), the property test (RapidCheck, so that a
// failure shrinks) and the fuzz_events harness (the fuzzer's bytes) draw their events
// here. (The simulator, tools/sim, has its own: it models a world, not a test.)
//
// Every decision is a draw from a source of choices, `choices.pick(n)` in [0, n). The
// generator looks at the machine it drives (slot states, next_deadline) and at the
// results it has observed (live waiters, each slot's current lease), so that most
// events are valid and runs reach deep states:
//   - time moves forward: mostly a little, sometimes a lot, often exactly to
//     next_deadline() or one nanosecond before it;
//   - acquires by new waiters on a few handles, some weighted, some with a deadline
//     (at or before now: a try-acquire; soon; tied with the next deadline; or never);
//   - cancels of live waiters (and of completed or unknown ones), deregistrations;
//   - the release of a leased slot with its current lease (clean or dirty), spawned or
//     spawn_failed for a spawning slot, retired for a retiring one, died for an idle one,
//     checked (alive, sometimes dead) for a checking one, reset_done (ok, sometimes
//     failed) for a resetting one;
//   - rarely, and never early, an event that ends the run's busy part: a shutdown or
//     (one time in eight) the clock's jump to the end of time, within 1000 ns of
//     2^64 - 1, where deadlines saturate;
// and a share that are invalid, aimed at each check of event validation in turn, or
// arbitrary (any kind but shutdown, any fields). Before the start, one event in eight is
// arbitrary (not_started).
//
// A draw of 0 is the plainest choice: RapidCheck shrinks towards it and an exhausted
// fuzzer input gives it. Draws are sequenced (never two in one expression), so a seed
// gives the same events with every compiler. The generator allocates only at
// construction: its bookkeeping is sized from the config (one lease per slot, at most
// max_waiters + 1 live waiters), so it can run inside an allocation-counting window.
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <iterator>
#include <optional>
#include <type_traits>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool::testing {

// Where the generator's decisions come from: pick(n) returns a number in [0, n), n ≥ 1.
template <class C>
concept source_of_choices = requires(C& choices, std::uint64_t n) {
    { choices.pick(n) } -> std::convertible_to<std::uint64_t>;
};

// What the generator reads of the machine it drives (core::scheduler, model::reference_model).
template <class M>
concept observable_machine = requires(const M& machine, std::uint32_t slot) {
    { machine.slot(slot) } -> std::same_as<core::slot_state>;
    { machine.next_deadline() } -> std::same_as<std::optional<core::nanos>>;
};

class event_generator {
public:
    // `run_length` says how soon a run's busy part may end: the chance that an event is
    // a shutdown or a jump to the end of time grows from 0 at the first event to 1 in
    // run_length at event run_length, and stays there.
    event_generator(const core::config& c, std::uint64_t run_length)
        : config_(c.resolved()), run_length_(std::max<std::uint64_t>(run_length, 2)),
          capacity_(static_cast<std::uint32_t>(config_.slot_capacity.value_or(config_.max_slots))),
          lease_of_slot_(capacity_, 0) {
        live_.reserve(config_.max_waiters + 1);
    }

    // The next event for `machine`, which must have taken (and this generator observed)
    // every event drawn so far. Changes nothing here: observe() does.
    template <observable_machine Machine, class Choices>
        requires source_of_choices<std::remove_cvref_t<Choices>>
    [[nodiscard]] core::event next(const Machine& machine, Choices&& choices) const {
        return draw<Machine, std::remove_cvref_t<Choices>>{*this, machine, choices}.event();
    }

    // Call with each step's result: accepted events move the clock, admitted waiters
    // are live until their grant or rejection, and each grant's lease is remembered.
    void observe(const core::event& e, const core::step_result& r) {
        ++steps_;
        if (!r.ok()) return;  // a refused event changed nothing
        now_ = e.now;
        if (e.kind == core::event_kind::start) started_ = true;
        if (e.kind == core::event_kind::acquire) {
            next_waiter_ = std::max(next_waiter_, e.waiter + 1);
            if (live_.size() <= config_.max_waiters) live_.push_back(e.waiter);
        }
        for (const core::effect& f : r.effects) {
            if (f.kind == core::effect_kind::grant && f.slot < lease_of_slot_.size()) {
                lease_of_slot_[f.slot] = f.lease;
                last_lease_ = std::max(last_lease_, f.lease);
            }
            if (f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject) forget(f.waiter);
        }
    }

private:
    template <class Machine, class Choices>
    struct draw;

    static constexpr std::uint64_t handles = 6;  // acquires use handles 1..6

    void forget(std::uint64_t waiter) {
        const auto at = std::find(live_.begin(), live_.end(), waiter);
        if (at == live_.end()) return;
        *at = live_.back();
        live_.pop_back();
    }

    core::config config_;
    std::uint64_t run_length_;
    std::uint64_t steps_ = 0;  // events observed
    bool started_ = false;
    core::nanos now_ = 0;  // of the last accepted event
    std::uint64_t next_waiter_ = 1;
    std::uint64_t last_lease_ = 0;
    std::uint32_t capacity_;                    // slot_capacity: slots are below it
    std::vector<std::uint64_t> lease_of_slot_;  // the lease of its last grant
    std::vector<std::uint64_t> live_;           // admitted, not yet granted or rejected
};

// One draw: the generator's bookkeeping, the machine and the source of choices.
template <class Machine, class Choices>
struct event_generator::draw {
    using nanos = core::nanos;

    const event_generator& g;
    const Machine& machine;
    Choices& choices;

    core::event event() {
        if (!g.started_) return one_in(8) ? arbitrary() : core::event::start(g.now_);
        if (run_ends()) return one_in(8) ? core::event::tick(end_of_time()) : core::event::shutdown(later());
        const nanos now = later();
        const std::uint64_t roll = pick(200);
        if (roll < 70) return acquire(now);
        if (roll < 82) return cancel(now);
        if (roll < 86) return core::event::deregister(now, handle());
        if (roll < 96) return invalid();
        if (roll < 102) return arbitrary();
        if (roll < 114) return core::event::tick(now);
        if (roll < 115) return resize(now);
        return slot_event(now);
    }

    std::uint64_t pick(std::uint64_t n) { return static_cast<std::uint64_t>(choices.pick(n)); }
    bool one_in(std::uint64_t n) { return pick(n) == n - 1; }

    // Whether this event ends the run's busy part (see the constructor).
    bool run_ends() { return one_in(g.run_length_) && pick(g.run_length_) < g.steps_; }

    static nanos plus(nanos t, nanos d) { return t > core::never - d ? core::never : t + d; }
    std::uint64_t handle() { return 1 + pick(handles); }
    std::uint32_t any_slot() { return static_cast<std::uint32_t>(pick(g.capacity_)); }

    // When the next valid event happens: mostly soon, sometimes much later, and often
    // exactly at next_deadline() or one nanosecond before it.
    nanos later() {
        const nanos now = g.now_;
        const std::optional<nanos> deadline = machine.next_deadline();
        switch (pick(10)) {
            case 7: return deadline ? std::max(now, *deadline) : now;
            case 8: return deadline && *deadline > 0 ? std::max(now, *deadline - 1) : now;
            case 9: return plus(now, pick(2000));
            default: return plus(now, pick(30));
        }
    }

    nanos end_of_time() { return std::max(g.now_, core::never - pick(1000)); }

    core::event acquire(nanos now) {
        const std::uint64_t h = handle();
        std::optional<nanos> due;
        if (one_in(3)) due = deadline(now);
        std::optional<std::uint64_t> weight;
        if (one_in(4)) weight = 1 + pick(4);
        std::optional<std::uint64_t> max_leases;  // the handle's cap if this acquire makes it known
        if (one_in(8)) max_leases = pick(4);
        return core::event::acquire(now, g.next_waiter_, h, due, weight, max_leases);
    }

    // A valid resize (decision 16): any size up to slot_capacity, any min_slots up to it.
    core::event resize(nanos now) {
        const std::uint64_t max_slots = 1 + pick(g.capacity_);
        return core::event::resize(now, max_slots, pick(max_slots + 1));
    }

    nanos deadline(nanos now) {
        switch (pick(10)) {
            case 7: return now - std::min(now, pick(4));  // already reached: a try-acquire
            case 8: {
                const std::optional<nanos> next = machine.next_deadline();
                return next && *next > now ? *next : plus(now, 1);  // tied with the next deadline
            }
            case 9: return core::never - pick(2);  // never (as if none), or the last nanosecond
            default: return plus(now, 1 + pick(400));
        }
    }

    // Valid (1..65535) or not (0, above 65535).
    std::uint64_t any_weight() {
        switch (pick(4)) {
            case 0: return 1 + pick(4);
            case 1: return pick(70000);
            case 2: return core::max_weight;
            default: return bad_weight();
        }
    }

    std::uint64_t bad_weight() {
        switch (pick(3)) {
            case 0: return 0;
            case 1: return core::max_weight + 1;
            default: return ~std::uint64_t{0};
        }
    }

    // A live waiter, mostly; otherwise one seen before (perhaps completed) or never seen.
    core::event cancel(nanos now) {
        if (!g.live_.empty() && !one_in(6)) return core::event::cancel(now, g.live_[pick(g.live_.size())]);
        return core::event::cancel(now, pick(g.next_waiter_ + 1));
    }

    // The slot event that some slot's state allows, or a tick if no slot has that state.
    // Checks and resets come back first, most of the time, when a slot waits for one.
    core::event slot_event(nanos now) {
        using core::slot_state;
        if (pick(3) != 0) {
            using core::check_outcome, core::reset_outcome;
            if (const auto s = some_slot(slot_state::checking))
                return core::event::checked(now, *s, one_in(4) ? check_outcome::dead : check_outcome::alive);
            if (const auto s = some_slot(slot_state::resetting))
                return core::event::reset_done(now, *s, one_in(5) ? reset_outcome::failed : reset_outcome::ok);
        }
        const std::uint64_t roll = pick(10);
        if (roll < 4) {
            if (const auto s = some_slot(slot_state::leased)) {
                const auto outcome = one_in(5) ? core::release_outcome::dirty : core::release_outcome::clean;
                return core::event::release(now, *s, g.lease_of_slot_[*s], outcome);
            }
        } else if (roll < 7) {
            if (const auto s = some_slot(slot_state::spawning))
                return one_in(5) ? core::event::spawn_failed(now, *s) : core::event::spawned(now, *s);
        } else if (roll < 9) {
            if (const auto s = some_slot(slot_state::retiring)) return core::event::retired(now, *s);
        } else if (const auto s = some_slot(slot_state::idle)) {
            return core::event::died(now, *s);
        }
        return core::event::tick(now);
    }

    std::optional<std::uint32_t> some_slot(core::slot_state wanted) {
        std::uint64_t count = 0;
        for (std::uint32_t s = 0; s < g.capacity_; ++s) count += machine.slot(s) == wanted ? 1 : 0;
        if (count == 0) return std::nullopt;
        std::uint64_t skip = pick(count);
        for (std::uint32_t s = 0; s < g.capacity_; ++s)
            if (machine.slot(s) == wanted && skip-- == 0) return s;
        return std::nullopt;
    }

    // An event for one check of validation in turn to refuse (a drawn slot may happen to
    // be in the state asked for, and a reused waiter id may have completed: then valid).
    core::event invalid() {
        const nanos now = g.now_;
        switch (pick(7)) {
            case 0: return core::event::tick(now - std::min(now, 1 + pick(5)));  // time_went_backwards
            case 1: return core::event::start(now);                               // already_started
            case 2: {                                                             // bad_weight
                const std::uint64_t h = handle();
                return core::event::acquire(now, g.next_waiter_, h, std::nullopt, bad_weight());
            }
            case 3: {  // duplicate_waiter
                const std::uint64_t waiter = g.live_.empty() ? g.next_waiter_ - 1 : g.live_[pick(g.live_.size())];
                return core::event::acquire(now, waiter, handle());
            }
            case 4: {  // stale_lease: a leased slot's next lease, or an earlier lease of any slot
                const std::uint32_t s = any_slot();
                const std::uint64_t lease = g.lease_of_slot_[s];
                return core::event::release(now, s, machine.slot(s) == core::slot_state::leased ? lease + 1 : lease);
            }
            case 5: {  // not_spawning, not_retiring, not_idle, not_checking, not_resetting
                const core::event_kind kind = slot_event_kind();
                core::event e = core::event::of_slot(kind, now, any_slot());
                if (one_in(2)) e.check = core::check_outcome::dead;
                if (one_in(2)) e.reset = core::reset_outcome::failed;
                return e;
            }
            default: {  // bad_slot
                const core::event_kind kind = one_in(2) ? core::event_kind::release : slot_event_kind();
                const std::uint32_t s = one_in(4) ? ~std::uint32_t{0}
                                                  : static_cast<std::uint32_t>(g.capacity_ + pick(3));
                core::event e = core::event::of_slot(kind, now, s);
                e.lease = g.last_lease_;
                return e;
            }
        }
    }

    core::event_kind slot_event_kind() {
        static constexpr core::event_kind kinds[] = {core::event_kind::spawned, core::event_kind::spawn_failed,
                                                     core::event_kind::retired, core::event_kind::died,
                                                     core::event_kind::checked, core::event_kind::reset_done};
        return kinds[pick(std::size(kinds))];
    }

    // Any kind but shutdown (kept rare: it ends a run's busy part), at about now (perhaps
    // a little earlier), with every field drawn whether the kind reads it or not.
    core::event arbitrary() {
        // Kinds after shutdown move down one place: shutdown itself is never drawn.
        constexpr auto shutdown = static_cast<std::uint64_t>(core::event_kind::shutdown);
        std::uint64_t k = pick(core::event_kind_count - 1);
        if (k >= shutdown) ++k;
        const auto kind = static_cast<core::event_kind>(k);
        core::event e = core::event::of(kind, plus(g.now_ - std::min<nanos>(g.now_, 2), pick(5)));
        e.waiter = pick(g.next_waiter_ + 2);
        e.handle = pick(handles + 2);
        e.slot = static_cast<std::uint32_t>(pick(g.capacity_ + 2));
        if (e.slot < g.capacity_ && one_in(2)) e.lease = g.lease_of_slot_[e.slot];
        else e.lease = pick(g.last_lease_ + 3);
        if (one_in(4)) e.outcome = core::release_outcome::dirty;
        if (one_in(4)) e.check = core::check_outcome::dead;
        if (one_in(4)) e.reset = core::reset_outcome::failed;
        if (one_in(3)) e.deadline = deadline(e.now);
        if (one_in(3)) e.set_weight(any_weight());
        if (one_in(3)) {  // acquire: a cap, 0 = none (kept in the lease word: only an acquire's)
            const std::uint64_t cap = pick(4);
            if (kind == core::event_kind::acquire) e.set_max_leases(cap);
        }
        // resize: 0..capacity (0: no slot at all, decision 16), now and then bad_size
        const std::uint64_t max_slots = pick(std::uint64_t{g.capacity_} + 2);
        const std::uint64_t min_slots = pick(max_slots + 2);
        if (kind == core::event_kind::resize) e = core::event::resize(e.now, max_slots, min_slots);
        return e;
    }
};

}  // namespace fairpool::testing
