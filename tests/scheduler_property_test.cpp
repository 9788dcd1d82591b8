// Stateful property test: random event sequences run through the core scheduler and
// the reference model; after every step both must return the same error, emit the
// same effects, keep the same counters and report the same next_deadline; the
// invariant checker must find no breach; and next_deadline must be exact (a tick at
// it does something, a tick just before it does nothing).
//
// Sizes: RC_PARAMS (see tests/meson.build) sets ≥ 300 sequences of up to ~1000 events
// in the default suite and far more in `meson test --setup long`. A failure prints
// RapidCheck's `RC_PARAMS="reproduce=…"` string and the shrunk sequence as a trace.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <map>
#include <set>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/model/reference_model.hpp"
#include "fairpool/trace/format.hpp"

namespace fairpool::testing {
namespace {

using core::event;
using core::nanos;

// What generation knows: the reference model after the events so far, plus the
// bookkeeping it needs to pick meaningful events (live waiters, leases by slot).
struct generation_state {
    explicit generation_state(const core::config& c) : ref(c) {}
    model::reference_model ref;
    nanos now = 0;
    bool started = false;
    std::uint64_t next_waiter = 1;
    std::set<std::uint64_t> live_waiters;
    std::map<std::uint32_t, std::uint64_t> lease_of_slot;
};

// The core, the model and the invariant checker in lock step (model/lockstep.hpp: the
// same oracle as fairpool-replay --invariants, fairpool-sim and the fuzzers).
struct system_under_test {
    model::lockstep machines;
    nanos now = 0;  // of the last valid event
};

using step_command = rc::state::Command<generation_state, system_under_test>;

void observe(generation_state& g, const event& e, const core::step_result& r) {
    if (!r.ok()) return;
    g.now = e.now;
    if (e.kind == core::event_kind::start) g.started = true;
    if (e.kind == core::event_kind::acquire) g.live_waiters.insert(e.waiter);
    for (const core::effect& f : r.effects) {
        if (f.kind == core::effect_kind::grant) g.lease_of_slot[f.slot] = f.lease;
        if (f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject) g.live_waiters.erase(f.waiter);
    }
}

template <class T>
T element_of(const std::vector<T>& items) { return *rc::gen::elementOf(items); }

nanos next_time(const generation_state& g) {
    const auto deadline = g.ref.next_deadline();
    switch (*rc::gen::inRange(0, 10)) {
        case 0: return deadline ? *deadline : g.now;           // exactly at the next deadline
        case 1: return deadline && *deadline > g.now ? *deadline - 1 : g.now;  // just before it
        case 2: return g.now + *rc::gen::inRange<nanos>(0, 2000);
        default: return g.now + *rc::gen::inRange<nanos>(0, 30);
    }
}

std::vector<std::uint32_t> slots_in(const generation_state& g, core::slot_state s) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i = 0; i < g.ref.configuration().max_slots; ++i)
        if (g.ref.slot(i) == s) out.push_back(i);
    return out;
}

event generate_acquire(generation_state const& g, nanos now) {
    std::optional<nanos> deadline;
    if (*rc::gen::inRange(0, 3) == 0) deadline = now + *rc::gen::inRange<nanos>(0, 400) - std::min<nanos>(now, 20);
    std::optional<std::uint64_t> weight;
    if (*rc::gen::inRange(0, 4) == 0) weight = *rc::gen::inRange<std::uint64_t>(1, 4);
    return event::acquire(now, g.next_waiter, *rc::gen::inRange<std::uint64_t>(1, 6), deadline, weight);
}

event generate_slot_event(const generation_state& g, nanos now) {
    using core::slot_state;
    const int pick = *rc::gen::inRange(0, 10);
    if (pick < 4) {
        auto leased = slots_in(g, slot_state::leased);
        if (!leased.empty()) {
            const std::uint32_t s = element_of(leased);
            const bool dirty = *rc::gen::inRange(0, 5) == 0;
            return event::release(now, s, g.lease_of_slot.at(s), dirty ? core::release_outcome::dirty
                                                                         : core::release_outcome::clean);
        }
    } else if (pick < 7) {
        auto spawning = slots_in(g, slot_state::spawning);
        if (!spawning.empty()) {
            const std::uint32_t s = element_of(spawning);
            return *rc::gen::inRange(0, 5) == 0 ? event::spawn_failed(now, s) : event::spawned(now, s);
        }
    } else if (pick < 9) {
        auto retiring = slots_in(g, slot_state::retiring);
        if (!retiring.empty()) return event::retired(now, element_of(retiring));
    } else {
        auto idle = slots_in(g, slot_state::idle);
        if (!idle.empty()) return event::died(now, element_of(idle));
    }
    return event::tick(now);
}

// Anything at all, mostly invalid: every error path must agree too.
event generate_arbitrary(const generation_state& g) {
    const auto kind = static_cast<core::event_kind>(*rc::gen::inRange(0, core::event_kind_count));
    event e = event::of(kind, g.now + *rc::gen::inRange<nanos>(0, 5) - std::min<nanos>(g.now, 2));
    e.waiter = *rc::gen::inRange<std::uint64_t>(0, g.next_waiter + 1);
    e.handle = *rc::gen::inRange<std::uint64_t>(0, 7);
    e.slot = *rc::gen::inRange<std::uint32_t>(0, static_cast<std::uint32_t>(g.ref.configuration().max_slots) + 2);
    e.lease = *rc::gen::inRange<std::uint64_t>(0, 5);
    if (*rc::gen::inRange(0, 2) == 0) e.weight = *rc::gen::inRange<std::uint64_t>(0, 70000);
    return e;
}

struct step final : step_command {
    event e;

    explicit step(const generation_state& g) : e(generate(g)) {}

    static event generate(const generation_state& g) {
        if (!g.started) return event::start(0);
        const nanos now = next_time(g);
        const int pick = *rc::gen::inRange(0, 200);
        if (pick < 70) return generate_acquire(g, now);
        if (pick < 82 && !g.live_waiters.empty())
            return event::cancel(now, *rc::gen::elementOf(g.live_waiters));
        if (pick < 86) return event::deregister(now, *rc::gen::inRange<std::uint64_t>(1, 6));
        if (pick < 88) return event::shutdown(now);
        if (pick < 98) return generate_arbitrary(g);
        if (pick < 110) return event::tick(now);
        return generate_slot_event(g, now);
    }

    void apply(generation_state& g) const override {
        const core::step_result r = g.ref.step(e);
        if (e.kind == core::event_kind::acquire && r.ok()) g.next_waiter = e.waiter + 1;
        observe(g, e, r);
    }

    void run(const generation_state&, system_under_test& sut) const override {
        const auto outcome = sut.machines.step(e);
        RC_ASSERT(outcome.breach.value_or("") == std::string());
        if (outcome.error == core::event_error::ok) sut.now = e.now;
        check_deadline_is_exact(sut.machines.core(), sut.now);
    }

    // A tick at next_deadline() emits an effect; a tick one nanosecond earlier (if
    // still in the future) emits none.
    static void check_deadline_is_exact(const core::scheduler& s, nanos now) {
        const auto deadline = s.next_deadline();
        if (!deadline) return;
        RC_ASSERT(*deadline > now);
        core::scheduler at = s;
        RC_ASSERT(!at.step(event::tick(*deadline)).effects.empty());
        core::scheduler before = s;
        const core::step_result quiet = before.step(event::tick(*deadline - 1));
        if (quiet.ok()) RC_ASSERT(quiet.effects.empty());
    }

    void show(std::ostream& os) const override { os << trace::format_line(e); }
};

core::config generate_config() {
    core::config c;
    c.max_slots = *rc::gen::inRange<std::uint64_t>(1, 7);
    c.min_slots = *rc::gen::inRange<std::uint64_t>(0, c.max_slots + 1);
    c.max_waiters = *rc::gen::inRange<std::uint64_t>(1, 20);
    if (*rc::gen::arbitrary<bool>()) c.max_waiters_per_handle = *rc::gen::inRange<std::uint64_t>(1, c.max_waiters + 1);
    c.policy = *rc::gen::element(core::fairness_policy::round_robin, core::fairness_policy::fifo);
    c.idle_order = *rc::gen::element(core::idle_order::lifo, core::idle_order::fifo);
    const auto duration = [] { return *rc::gen::element<nanos>(0, 0, 1, 50, 200, 1000); };
    c.acquire_timeout = duration();
    c.idle_timeout = duration();
    c.max_lifetime = duration();
    c.max_uses = *rc::gen::element<std::uint64_t>(0, 0, 1, 3);
    c.spawn_backoff_initial = *rc::gen::element<nanos>(1, 10, 100);
    c.spawn_backoff_max = c.spawn_backoff_initial * *rc::gen::element<nanos>(1, 4, 100);
    if (*rc::gen::arbitrary<bool>()) c.max_concurrent_spawns = *rc::gen::inRange<std::uint64_t>(1, c.max_slots + 2);
    c.leak_threshold = duration();
    return c;
}

RC_GTEST_PROP(scheduler_property, core_matches_model_and_invariants_hold, ()) {
    const core::config c = generate_config();
    RC_TAG(c.policy == core::fairness_policy::fifo ? "fifo" : "round_robin");
    RC_LOG() << trace::format_canonical(c) << "\n";
    const generation_state initial(c);
    system_under_test sut{model::lockstep(c, *rc::gen::arbitrary<std::uint64_t>())};
    rc::state::check(initial, sut, rc::state::gen::execOneOfWithArgs<step>());
    // How deep the sequences reach, printed in the summary.
    const core::stats& s = sut.machines.core().counters();
    RC_CLASSIFY(s.grants_after_wait >= 10, "10+ grants after waiting");
    RC_CLASSIFY(s.rejections[static_cast<int>(core::reject_reason::timeout)] > 0, "timeouts");
    RC_CLASSIFY(s.rejections[static_cast<int>(core::reject_reason::saturated)] > 0, "saturated");
    RC_CLASSIFY(s.retirements[static_cast<int>(core::retire_reason::shutdown)] > 0, "shutdown retirements");
    RC_CLASSIFY(s.leaks_suspected > 0, "leaks");
    RC_CLASSIFY(s.spawn_failures > 0, "spawn failures");
    RC_CLASSIFY(s.retirements[static_cast<int>(core::retire_reason::idle)] > 0, "idle timeouts");
}

}  // namespace
}  // namespace fairpool::testing
