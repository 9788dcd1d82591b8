// Stateful property test: event sequences drawn by the tests' event generator
// (tests/support/event_generator.hpp) run through the core scheduler and the reference
// model; after every step both must return the same error, emit the same effects, keep
// the same counters and report the same next_deadline; the invariant checker must find
// no breach; and next_deadline must be exact (a tick at it does something, a tick just
// before it does nothing).
//
// Sizes: RC_PARAMS (see tests/meson.build) sets ≥ 300 sequences of up to ~1000 events
// in the default suite and far more in `meson test --setup long`. A failure prints
// RapidCheck's `RC_PARAMS="reproduce=…"` string and the shrunk sequence as a trace.
#include <algorithm>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/model/reference_model.hpp"
#include "fairpool/trace/format.hpp"
#include "support/event_generator.hpp"

namespace fairpool::testing {
namespace {

using core::event;
using core::nanos;

// Draws every choice of the event generator from RapidCheck, so that a failing
// sequence shrinks event by event and choice by choice.
struct rapidcheck_choices {
    std::uint64_t pick(std::uint64_t n) const { return *rc::gen::inRange<std::uint64_t>(0, n); }
};

// How soon a sequence may end (see event_generator's constructor). Sequences are up
// to ~1000 events long (RC_PARAMS max_size), a third of them under 100: endings that
// become likely around event 100 let long sequences get deep first and still give
// most of them a shutdown.
constexpr std::uint64_t run_length = 100;

// What generation knows: the reference model after the events so far, and the event
// generator (tests/support/event_generator.hpp) that has observed them.
struct generation_state {
    explicit generation_state(const core::config& c) : ref(c), events(c, run_length) {}
    model::reference_model ref;
    event_generator events;
};

// The core, the model and the invariant checker in lock step (model/lockstep.hpp: the
// same oracle as fairpool-replay --invariants, fairpool-sim and the fuzzers).
struct system_under_test {
    model::lockstep machines;
    nanos now = 0;  // of the last valid event
};

using step_command = rc::state::Command<generation_state, system_under_test>;

struct step final : step_command {
    event e;

    explicit step(const generation_state& g) : e(g.events.next(g.ref, rapidcheck_choices{})) {}

    void apply(generation_state& g) const override { g.events.observe(e, g.ref.step(e)); }

    void run(const generation_state&, system_under_test& sut) const override {
        const core::stats before = sut.machines.core().counters();
        const auto outcome = sut.machines.step(e);
        RC_ASSERT(outcome.breach.value_or("") == std::string());
        if (outcome.error == core::event_error::ok) sut.now = e.now;
        check_deadline_is_exact(sut.machines.core(), sut.now);
        check_rare_counters_kept(e, *outcome.effects, before, sut.machines.core().counters());
    }

    // docs/CONTRACT.md section 9: an acquire or a release that emits only grants moves
    // no counter but acquires, the grants, the gauges and the wait histogram (the
    // adapter publishes the rest only after a step that may have moved them).
    static void check_rare_counters_kept(const event& e, const std::vector<core::effect>& effects,
                                         const core::stats& before, const core::stats& after) {
        if (e.kind != core::event_kind::acquire && e.kind != core::event_kind::release) return;
        if (!std::ranges::all_of(effects, [](const core::effect& f) { return f.kind == core::effect_kind::grant; }))
            return;
        RC_ASSERT(rare_counters(before) == rare_counters(after));
    }

    static core::stats rare_counters(core::stats s) {
        s.acquires = s.grants_immediate = s.grants_after_wait = 0;
        s.queued_waiters = s.active_handles = s.active_weight = s.waiters_behind_cap = s.handles_at_cap = 0;
        s.slots = {};
        s.wait_histogram = {};
        return s;
    }

    // A tick at next_deadline() emits an effect; a tick one nanosecond earlier (if
    // still in the future) emits none.
    // surely_no_deadline() (the adapter's shortcut) is true only without a deadline, and
    // deadline_lower_bound() (its lazy timer's) is never after the deadline.
    static void check_deadline_is_exact(const core::scheduler& s, nanos now) {
        const auto deadline = s.next_deadline();
        RC_ASSERT(!(s.surely_no_deadline() && deadline.has_value()));
        if (s.surely_no_deadline()) RC_ASSERT(s.deadline_lower_bound() == core::never);
        if (!deadline) return;
        RC_ASSERT(s.deadline_lower_bound() <= *deadline);
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
    // Health (issue 13): mostly off; when on, often short against the generator's time
    // steps (mostly < 30 ns, sometimes up to 2000 ns), so that checks and keepalives fire.
    c.check_after_idle = *rc::gen::element<nanos>(0, 0, 1, 10, 50, 300);
    c.keepalive_interval = *rc::gen::element<nanos>(0, 0, 1, 20, 100, 600);
    c.max_concurrent_checks = *rc::gen::inRange<std::uint64_t>(1, c.max_slots + 2);
    c.reset_on_release = *rc::gen::element(false, false, true);
    if (c.max_lifetime > 0 && *rc::gen::arbitrary<bool>())
        c.max_lifetime_jitter = *rc::gen::inRange<nanos>(0, c.max_lifetime + 1);
    c.jitter_seed = *rc::gen::arbitrary<std::uint64_t>();
    // Tenant isolation (issue 15): sometimes a cap for every handle (acquires draw their
    // own max_leases too), sometimes room above max_slots for resizes to grow into.
    c.max_leases_per_handle = *rc::gen::element<std::uint64_t>(0, 0, 1, 2);
    if (*rc::gen::arbitrary<bool>()) c.slot_capacity = c.max_slots + *rc::gen::inRange<std::uint64_t>(0, 4);
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
    RC_CLASSIFY(s.checks_passed > 0, "checks passed");
    RC_CLASSIFY(s.checks_failed > 0, "checks failed");
    RC_CLASSIFY(s.resets_started > 0, "resets");
    RC_CLASSIFY(s.resets_failed > 0, "resets failed");
    RC_CLASSIFY(s.resizes > 0, "resizes");
    RC_CLASSIFY(s.retirements[static_cast<int>(core::retire_reason::resize)] > 0, "resize retirements");
    RC_CLASSIFY(c.max_leases_per_handle > 0, "capped config");
}

}  // namespace
}  // namespace fairpool::testing
