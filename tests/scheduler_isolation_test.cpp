// Tenant isolation (docs/CONTRACT.md, decisions 15 to 17): per-handle lease caps and
// runtime resize, each rule pinned with the exact effects of each step, against both
// the core scheduler and the reference model; then the two in lockstep on random
// events with caps and resizes on.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "driver.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/model/reference_model.hpp"

namespace fairpool::testing {
namespace {

using E = core::event;
using core::release_outcome;

template <class Machine>
class isolation : public ::testing::Test {
protected:
    // Two idle slots at time 1 (0 became idle first, so lifo grants 1 first).
    static driver<Machine> warm(core::config c) {
        driver<Machine> d(c);
        effects prewarm;
        for (std::uint32_t s = 0; s < c.min_slots; ++s) prewarm.push_back("spawn slot=" + std::to_string(s));
        EXPECT_EQ(d(E::start(0)), prewarm);
        for (std::uint32_t s = 0; s < c.min_slots; ++s) EXPECT_EQ(d(E::spawned(1, s)), effects{});
        return d;
    }
    static core::config slots(std::uint64_t max, std::uint64_t min) {
        core::config c;
        c.max_slots = max;
        c.min_slots = min;
        return c;
    }
};

using machines = ::testing::Types<core::scheduler, model::reference_model>;
TYPED_TEST_SUITE(isolation, machines);

// A handle at its cap waits even beside an idle slot; another handle is served; the
// capped one is served when its lease comes back.
TYPED_TEST(isolation, a_handle_at_its_cap_waits_beside_an_idle_slot) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d.machine().counters().handles_at_cap, 1u);
    EXPECT_EQ(d(E::acquire(3, 2, 7)), effects{});  // at its cap: queued, slot 0 stays idle
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 1u);
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(core::slot_state::idle)], 1u);
    EXPECT_EQ(d(E::acquire(4, 3, 8)), (effects{"grant waiter=3 slot=0 lease=2"}));
    EXPECT_EQ(d(E::release(5, 1, 1)), (effects{"grant waiter=2 slot=1 lease=3"}));
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 0u);
    EXPECT_EQ(d.machine().counters().handles_at_cap, 1u);  // handle 7 holds 1 of 1 again
}

// The config's cap applies to every handle; an acquire's max_leases=0 lifts it for its
// handle; max_leases on a later acquire of a known handle is ignored.
TYPED_TEST(isolation, the_cap_comes_from_the_acquire_that_makes_the_handle_known) {
    core::config c = this->slots(3, 3);
    c.max_leases_per_handle = 1;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 0)), (effects{"grant waiter=1 slot=2 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 7, {}, {}, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));  // still uncapped
    EXPECT_EQ(d(E::acquire(4, 3, 8)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d(E::release(5, 0, 3)), effects{});
    EXPECT_EQ(d(E::acquire(6, 4, 9)), (effects{"grant waiter=4 slot=0 lease=4"}));
    EXPECT_EQ(d(E::release(7, 0, 4)), effects{});
    EXPECT_EQ(d(E::acquire(8, 5, 9)), (effects{"grant waiter=5 slot=0 lease=5"}));  // 9 was forgotten
}

// Round robin skips a handle at its cap; it rejoins at the back when a lease comes back.
TYPED_TEST(isolation, round_robin_skips_a_capped_handle_and_it_rejoins_at_the_back) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(3, 3, 7)), effects{});  // behind its cap
    EXPECT_EQ(d(E::acquire(3, 4, 8)), effects{});
    EXPECT_EQ(d(E::acquire(3, 5, 9)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 2)), (effects{"grant waiter=4 slot=0 lease=3"}));  // 7 skipped
    EXPECT_EQ(d(E::release(5, 1, 1)), (effects{"grant waiter=5 slot=1 lease=4"}));  // 7 rejoined behind 9
    EXPECT_EQ(d(E::release(6, 0, 3)), (effects{"grant waiter=3 slot=0 lease=5"}));
}

// Under fifo the earliest eligible waiter is served, not the earliest waiter.
TYPED_TEST(isolation, fifo_serves_the_earliest_eligible_waiter) {
    core::config c = this->slots(2, 2);
    c.policy = core::fairness_policy::fifo;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(3, 3, 7)), effects{});
    EXPECT_EQ(d(E::acquire(3, 4, 8)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 2)), (effects{"grant waiter=4 slot=0 lease=3"}));
    EXPECT_EQ(d(E::release(5, 1, 1)), (effects{"grant waiter=3 slot=1 lease=4"}));
}

// A dirty release gives the lease back too: the waiter behind the cap gets a new slot.
TYPED_TEST(isolation, a_dirty_release_gives_the_lease_back) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 7)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 1, release_outcome::dirty)), (effects{"retire slot=0 reason=dirty"}));
    EXPECT_EQ(d.machine().counters().handles_at_cap, 0u);
    EXPECT_EQ(d(E::retired(5, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(6, 0)), (effects{"grant waiter=2 slot=0 lease=2"}));
}

// A deregistered handle with a lease out stays known: its cap and count hold.
TYPED_TEST(isolation, a_deregistered_handle_keeps_its_count_until_its_leases_return) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7, {}, {}, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 7)), effects{});
    EXPECT_EQ(d(E::deregister(4, 7)), (effects{"reject waiter=2 reason=deregistered"}));
    EXPECT_EQ(d(E::acquire(5, 3, 7, {}, {}, 5)), effects{});  // still 1 of 1
    EXPECT_EQ(d(E::release(6, 1, 1)), (effects{"grant waiter=3 slot=1 lease=2"}));
}

// A shrink retires idle slots at once (least recently used first) and leased ones as
// they come back; retiring ones count against max_slots until `retired`.
TYPED_TEST(isolation, a_shrink_retires_idle_slots_now_and_leased_ones_on_return) {
    core::config c = this->slots(3, 3);
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=2 lease=1"}));
    EXPECT_EQ(d(E::resize(3, 1, 0)), (effects{"retire slot=0 reason=resize", "retire slot=1 reason=resize"}));
    EXPECT_EQ(d.machine().counters().resizes, 1u);
    EXPECT_EQ(d(E::acquire(4, 2, 8)), effects{});      // 1 live of max 1: no spawn
    EXPECT_EQ(d(E::retired(5, 0)), effects{});         // slot 1 still retiring, slot 2 leased: full
    EXPECT_EQ(d(E::release(6, 2, 1)), (effects{"grant waiter=2 slot=2 lease=2"}));  // not surplus any more
    EXPECT_EQ(d(E::resize(7, 1, 1)), effects{});
    EXPECT_EQ(d(E::retired(8, 1)), effects{});
    EXPECT_EQ(d(E::resize(9, 2, 0)), effects{});       // nobody waits, min 0: nothing to spawn
    EXPECT_EQ(d(E::acquire(10, 3, 9)), (effects{"spawn slot=0"}));  // lowest-numbered empty slot
}

// Least recently used first is by idle time, not by index: here the oldest idle slot
// has the highest index.
TYPED_TEST(isolation, a_shrink_retires_the_least_recently_used_idle_slots_first) {
    auto d = this->warm(this->slots(3, 3));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=2 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::acquire(2, 3, 9)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d(E::release(3, 2, 1)), effects{});  // idle since 3
    EXPECT_EQ(d(E::release(4, 0, 3)), effects{});  // idle since 4
    EXPECT_EQ(d(E::release(5, 1, 2)), effects{});  // idle since 5
    EXPECT_EQ(d(E::resize(6, 1, 0)), (effects{"retire slot=2 reason=resize", "retire slot=0 reason=resize"}));
}

// Checks on checkout start only for eligible waiters: a waiter behind its cap beside a
// stale idle slot starts no check (it could not take the slot).
TYPED_TEST(isolation, a_waiter_behind_its_cap_starts_no_check_on_checkout) {
    core::config c = this->slots(2, 2);
    c.check_after_idle = 10;
    c.max_leases_per_handle = 1;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(50, 2, 7)), effects{});  // slot 0 is stale, but handle 7 is at its cap
    EXPECT_EQ(d.machine().counters().checks_started, 0u);
    EXPECT_EQ(d(E::acquire(51, 3, 8)), (effects{"check slot=0"}));  // an eligible waiter: checked first
}

TYPED_TEST(isolation, a_leased_slot_beyond_a_shrunk_size_retires_resize_when_released) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::resize(3, 1, 0)), effects{});
    EXPECT_EQ(d(E::acquire(4, 3, 9)), effects{});
    EXPECT_EQ(d(E::release(5, 1, 1)), (effects{"retire slot=1 reason=resize"}));
    EXPECT_EQ(d(E::release(6, 0, 2)), (effects{"grant waiter=3 slot=0 lease=3"}));
}

// Release rules in order: dirty, shutdown, resize surplus, max_uses, max_lifetime.
TYPED_TEST(isolation, shutdown_comes_before_the_resize_surplus_and_the_surplus_before_max_uses) {
    core::config c = this->slots(2, 2);
    c.max_uses = 1;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::resize(3, 1, 1)), effects{});
    // Surplus and max_uses both apply: the surplus wins.
    EXPECT_EQ(d(E::release(4, 1, 1)), (effects{"retire slot=1 reason=resize"}));

    auto s = this->warm(c);  // the same, shut down before the releases
    EXPECT_EQ(s(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(s(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(s(E::resize(3, 1, 1)), effects{});
    EXPECT_EQ(s(E::shutdown(4)), effects{});
    // Shutdown, surplus and max_uses all apply: shutdown wins.
    EXPECT_EQ(s(E::release(5, 1, 1)), (effects{"retire slot=1 reason=shutdown"}));
    EXPECT_EQ(s(E::release(6, 0, 2)), (effects{"retire slot=0 reason=shutdown"}));
}

// The lease count starts mid-run, with leases out, at the first cap: a handle holding
// an uncounted lease is known by it (its cap stays none), a new one takes the cap;
// waiters behind the cap are cancelled and time out as usual.
TYPED_TEST(isolation, lease_counting_starts_mid_run_and_waiters_behind_a_cap_cancel_and_time_out) {
    auto d = this->warm(this->slots(3, 3));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=2 lease=1"}));  // not counted: no cap yet
    EXPECT_EQ(d(E::acquire(3, 2, 8, {}, {}, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d.machine().counters().handles_at_cap, 1u);
    EXPECT_EQ(d(E::acquire(4, 3, 8)), effects{});  // at its cap beside idle slot 0
    EXPECT_EQ(d(E::acquire(5, 4, 7, {}, {}, 1)), (effects{"grant waiter=4 slot=0 lease=3"}));  // 7's cap: none
    EXPECT_EQ(d.machine().counters().handles_at_cap, 1u);
    EXPECT_EQ(d(E::acquire(6, 5, 8, 10)), effects{});
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 2u);
    EXPECT_EQ(d(E::cancel(7, 3)), (effects{"reject waiter=3 reason=cancelled"}));
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 1u);
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(10));
    EXPECT_EQ(d(E::tick(10)), (effects{"reject waiter=5 reason=timeout"}));
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 0u);
    EXPECT_EQ(d(E::release(11, 1, 2)), effects{});
    EXPECT_EQ(d.machine().counters().handles_at_cap, 0u);
}

// A weighted front handle reaching its cap mid-turn leaves the rotation at once: the
// next handle is served, and the capped one rejoins at the back when a lease returns.
TYPED_TEST(isolation, a_weighted_front_handle_reaching_its_cap_mid_turn_gives_up_the_rest_of_its_turn) {
    core::config c = this->slots(3, 3);
    c.max_leases_per_handle = 2;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=2 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 2)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::acquire(2, 3, 3)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d(E::acquire(3, 4, 7, {}, 3)), effects{});  // handle 7, weight 3, at the front
    EXPECT_EQ(d(E::acquire(3, 5, 7)), effects{});
    EXPECT_EQ(d(E::acquire(3, 6, 7)), effects{});
    EXPECT_EQ(d(E::acquire(3, 7, 8)), effects{});
    EXPECT_EQ(d(E::release(4, 2, 1)), (effects{"grant waiter=4 slot=2 lease=4"}));
    EXPECT_EQ(d(E::release(5, 1, 2)), (effects{"grant waiter=5 slot=1 lease=5"}));  // 2 of 3: at its cap
    EXPECT_EQ(d.machine().counters().waiters_behind_cap, 1u);
    EXPECT_EQ(d(E::release(6, 0, 3)), (effects{"grant waiter=7 slot=0 lease=6"}));  // not the rest of 7's turn
    EXPECT_EQ(d(E::release(7, 2, 4)), (effects{"grant waiter=6 slot=2 lease=7"}));  // 7 rejoined
}

// Release rules in order: dirty comes before the resize surplus.
TYPED_TEST(isolation, dirty_comes_before_the_resize_surplus) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::resize(3, 1, 1)), effects{});
    EXPECT_EQ(d(E::release(4, 1, 1, release_outcome::dirty)), (effects{"retire slot=1 reason=dirty"}));
    EXPECT_EQ(d.machine().counters().retirements[static_cast<int>(core::retire_reason::resize)], 0u);
}

// A slot coming back from a check beyond a shrunk size retires `resize` even with a
// waiter queued; a dead one stays `died`.
TYPED_TEST(isolation, a_check_passed_beyond_a_shrunk_size_retires_resize_and_a_dead_one_died) {
    for (const auto outcome : {core::check_outcome::alive, core::check_outcome::dead}) {
        core::config c = this->slots(2, 2);
        c.check_after_idle = 10;
        auto d = this->warm(c);
        EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
        EXPECT_EQ(d(E::acquire(50, 2, 8)), (effects{"check slot=0"}));
        EXPECT_EQ(d(E::resize(51, 1, 0)), effects{});  // one leased, one checking: nothing idle to retire
        EXPECT_EQ(d(E::checked(52, 0, outcome)), (outcome == core::check_outcome::alive
                                                      ? effects{"retire slot=0 reason=resize"}
                                                      : effects{"retire slot=0 reason=died"}));
    }
}

// A spawn completing beyond a shrunk size retires `resize` even with a waiter queued.
TYPED_TEST(isolation, a_spawn_completing_beyond_a_shrunk_size_retires_resize) {
    auto d = this->warm(this->slots(2, 0));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::resize(3, 1, 0)), effects{});
    EXPECT_EQ(d(E::spawned(4, 0)), (effects{"retire slot=0 reason=resize"}));
}

// A reset completing beyond a shrunk size retires `resize` even with a waiter queued.
TYPED_TEST(isolation, a_reset_done_beyond_a_shrunk_size_retires_resize) {
    core::config c = this->slots(2, 2);
    c.reset_on_release = true;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(2, 2, 8)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(2, 3, 9)), effects{});
    EXPECT_EQ(d(E::release(3, 1, 1)), (effects{"reset slot=1"}));
    EXPECT_EQ(d(E::resize(4, 1, 0)), effects{});
    EXPECT_EQ(d(E::reset_done(5, 1, core::reset_outcome::ok)), (effects{"retire slot=1 reason=resize"}));
}

// A resize while shutting down and after closed is valid and counted, and changes no slot.
TYPED_TEST(isolation, a_resize_while_shutting_down_and_after_closed_changes_nothing_else) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::shutdown(3)), (effects{"retire slot=0 reason=shutdown"}));
    EXPECT_EQ(d(E::resize(4, 1, 0)), effects{});
    EXPECT_EQ(d(E::release(5, 1, 1)), (effects{"retire slot=1 reason=shutdown"}));
    EXPECT_EQ(d(E::retired(6, 0)), effects{});
    EXPECT_EQ(d(E::retired(7, 1)), (effects{"closed"}));
    EXPECT_EQ(d(E::resize(8, 2, 2)), effects{});
    EXPECT_EQ(d.machine().counters().resizes, 2u);
    EXPECT_EQ(d.machine().counters().spawns, 2u);
}

TYPED_TEST(isolation, a_bad_size_changes_nothing) {
    core::config c = this->slots(2, 1);
    c.slot_capacity = 4;
    auto d = this->warm(c);
    d.refused(E::resize(2, 0, 1), core::event_error::bad_size);
    d.refused(E::resize(2, 5, 0), core::event_error::bad_size);
    d.refused(E::resize(2, 2, 3), core::event_error::bad_size);
    EXPECT_EQ(d.machine().counters().resizes, 0u);
    d.refused(E::spawned(2, 4), core::event_error::bad_slot);  // judged against slot_capacity
    d.refused(E::spawned(2, 3), core::event_error::not_spawning);
    EXPECT_EQ(d(E::resize(2, 4, 3)), (effects{"spawn slot=1", "spawn slot=2"}));
}

// Decision 16: max_slots 0 is a size. The pool holds no slot: the idle one retires at
// once, the leased one when it comes back (not granted to the waiter queued meanwhile);
// nothing spawns, retired slots included; acquires queue and time out, or are rejected
// saturated once the queue is full, as usual. A resize back up spawns for the waiter.
TYPED_TEST(isolation, a_resize_to_zero_holds_no_slot_until_a_resize_back_up) {
    core::config c = this->slots(2, 1);
    c.max_waiters = 2;
    auto d = this->warm(c);  // slot 0 idle
    const core::stats& s = d.machine().counters();
    EXPECT_EQ(d(E::acquire(2, 1, 7)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 8)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(4, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(5, 1, 2)), effects{});  // slot 1 idle, slot 0 leased
    EXPECT_EQ(d(E::resize(6, 0, 0)), (effects{"retire slot=1 reason=resize"}));
    EXPECT_EQ(d(E::acquire(7, 3, 9, core::nanos{100})), effects{});  // queued: nothing spawns
    EXPECT_EQ(d(E::retired(8, 1)), effects{});                        // an empty slot, still no spawn
    EXPECT_EQ(d(E::release(9, 0, 1)), (effects{"retire slot=0 reason=resize"}));  // not handed to waiter 3
    EXPECT_EQ(d(E::acquire(10, 4, 9)), effects{});
    EXPECT_EQ(d(E::acquire(11, 5, 10)), (effects{"reject waiter=5 reason=saturated"}));  // max_waiters 2
    EXPECT_EQ(d(E::acquire(11, 6, 10, core::nanos{11})), (effects{"reject waiter=6 reason=timeout"}));
    EXPECT_EQ(d(E::retired(12, 0)), effects{});
    EXPECT_EQ(s.slots[static_cast<int>(core::slot_state::empty)], 2u);
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>{100});
    EXPECT_EQ(d(E::tick(100)), (effects{"reject waiter=3 reason=timeout"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // no spawn is ever due at max_slots 0
    EXPECT_EQ(s.spawns, 2u);
    EXPECT_EQ(s.retirements[static_cast<int>(core::retire_reason::resize)], 2u);
    EXPECT_EQ(d(E::resize(110, 2, 0)), (effects{"spawn slot=0"}));  // for waiter 4
    EXPECT_EQ(d(E::spawned(111, 0)), (effects{"grant waiter=4 slot=0 lease=3"}));
    EXPECT_EQ(s.resizes, 2u);
}

// At max_slots 0 a spawn that completes retires (resize) and is granted to nobody, a
// check that passes retires too, and the config's min_slots is not restored.
TYPED_TEST(isolation, a_resize_to_zero_retires_spawns_and_checks_as_they_complete) {
    core::config c = this->slots(2, 1);
    c.check_after_idle = 10;
    auto d = this->warm(c);  // slot 0 idle, verified at 1
    EXPECT_EQ(d(E::acquire(20, 1, 7)), (effects{"check slot=0"}));  // stale: checked before a grant
    EXPECT_EQ(d(E::acquire(20, 2, 8)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::resize(21, 0, 0)), effects{});  // nothing idle: nothing retires yet
    EXPECT_EQ(d(E::checked(22, 0, core::check_outcome::alive)), (effects{"retire slot=0 reason=resize"}));
    EXPECT_EQ(d(E::spawned(23, 1)), (effects{"retire slot=1 reason=resize"}));
    EXPECT_EQ(d(E::retired(24, 0)), effects{});
    EXPECT_EQ(d(E::retired(24, 1)), effects{});  // min_slots 0 now: nothing to restore
    EXPECT_EQ(d.machine().counters().queued_waiters, 2u);
    EXPECT_EQ(d(E::resize(25, 1, 1)), (effects{"spawn slot=0"}));  // room for one
    EXPECT_EQ(d(E::spawned(26, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
}

// Decision 16: a lower min_slots makes the idle timeouts that step 2 of the resize step
// left alone due: they retire in that step (oldest idle time first, while more than the
// new min_slots are live), so no time-driven work is left due at or before now.
TYPED_TEST(isolation, a_lower_min_slots_retires_the_idle_timeouts_it_makes_due_in_its_step) {
    core::config c = this->slots(3, 3);
    c.idle_timeout = 10;
    auto d = this->warm(c);  // slots 0, 1, 2 idle since 1
    EXPECT_EQ(d(E::resize(100, 3, 1)),
              (effects{"retire slot=0 reason=idle", "retire slot=1 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // one live slot, min_slots 1: nothing due
    EXPECT_EQ(d(E::resize(101, 3, 0)), (effects{"retire slot=2 reason=idle"}));
}

// Section 5, "Checked": a slot whose check passes retires (idle) past its idle timeout
// when no *eligible* waiter is queued: a waiter behind its cap could not take it.
TYPED_TEST(isolation, a_checked_slot_past_its_idle_timeout_retires_when_only_capped_waiters_queue) {
    core::config c = this->slots(2, 0);
    c.idle_timeout = 100;
    c.keepalive_interval = 50;
    c.max_leases_per_handle = 1;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 8)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(2, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 8)), effects{});  // handle 8 at its cap: queued, nothing spawned
    EXPECT_EQ(d(E::acquire(4, 3, 9)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(5, 1)), (effects{"grant waiter=3 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(6, 1, 2)), effects{});  // idle since 6: waiter 2 is behind its cap
    EXPECT_EQ(d(E::tick(56)), (effects{"check slot=1"}));  // keepalive
    EXPECT_EQ(d(E::checked(110, 1, core::check_outcome::alive)), (effects{"retire slot=1 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
}

// ---------------------------------------------------------------------------------
// Core and model in lockstep on random events with caps and resizes on.

core::event random_event(std::mt19937_64& r, std::uint64_t& waiter, core::nanos& now, std::uint64_t capacity) {
    auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(r); };
    now += pick(3);
    const auto slot = static_cast<std::uint32_t>(pick(capacity));
    switch (pick(11)) {
        case 0:
        case 1:
        case 2: {
            std::optional<std::uint64_t> cap;
            if (pick(3) == 0) cap = pick(3);
            std::optional<core::nanos> deadline;
            if (pick(4) == 0) deadline = now + pick(10);
            return E::acquire(now, ++waiter, pick(4), deadline, {}, cap);
        }
        case 3: return E::cancel(now, pick(waiter + 1));
        case 4: return E::deregister(now, pick(4));
        case 5: return E::release(now, slot, pick(waiter + 2), pick(5) == 0 ? release_outcome::dirty : release_outcome::clean);
        case 6: return E::spawned(now, slot);
        case 7: return pick(2) == 0 ? E::retired(now, slot) : E::spawn_failed(now, slot);
        case 8: return E::died(now, slot);
        case 9: {
            const std::uint64_t max = pick(capacity + 1);
            return E::resize(now, max, pick(max + 2));
        }
        default: return E::tick(now);
    }
}

TEST(isolation_lockstep, core_and_model_agree_on_random_caps_and_resizes) {
    std::uint64_t total_live_releases = 0;
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
        std::mt19937_64 r(seed);
        core::config c;
        c.max_slots = 1 + r() % 4;
        c.min_slots = r() % (c.max_slots + 1);
        c.slot_capacity = c.max_slots + r() % 3;
        c.max_waiters = 8;
        c.max_leases_per_handle = r() % 3;
        c.policy = r() % 2 == 0 ? core::fairness_policy::round_robin : core::fairness_policy::fifo;
        c.spawn_backoff_initial = 1;
        c.spawn_backoff_max = 4;
        auto both = std::make_unique<model::lockstep>(c, seed);
        std::uint64_t waiter = 0;
        core::nanos now = 0;
        std::vector<std::uint64_t> lease_of_slot(*c.slot_capacity, 0);  // from the grants seen
        both->step(E::start(0));
        std::uint64_t live_releases = 0;
        for (int i = 0; i < 400; ++i) {
            // Release a live lease most of the time (its slot's lease from the last grant),
            // so that caps are reached and left; a stale one now and then.
            core::event e = random_event(r, waiter, now, *c.slot_capacity);
            if (e.kind == core::event_kind::release) {
                for (std::uint32_t s = 0; s < *c.slot_capacity; ++s)
                    if (both->core().slot(s) == core::slot_state::leased && r() % 2 == 0) e.slot = s;
                if (both->core().slot(e.slot) == core::slot_state::leased && r() % 4 != 0) {
                    e.lease = lease_of_slot[e.slot];
                    ++live_releases;
                }
            }
            const auto out = both->step(e);
            ASSERT_FALSE(out.breach) << "seed " << seed << " event " << i << ": " << *out.breach;
            for (const core::effect& f : *out.effects)
                if (f.kind == core::effect_kind::grant) lease_of_slot[f.slot] = f.lease;
            if (i % 37 != 36) continue;
            // The snapshots agree record for record, and both machines go on from them.
            std::vector<core::snapshot_record> records;
            auto put = [&](const core::snapshot_record& rec) { records.push_back(rec); };
            both->core().snapshot(put);
            ASSERT_EQ(records, both->model().snapshot()) << "seed " << seed << " event " << i;
            ASSERT_EQ(records.size(), both->core().snapshot_size());
            both = std::make_unique<model::lockstep>(c, records, seed + 1);
        }
        total_live_releases += live_releases;
    }
    EXPECT_GT(total_live_releases, 300u * 10) << "the runs give leases back (4,875 in all when written)";
}

}  // namespace
}  // namespace fairpool::testing
