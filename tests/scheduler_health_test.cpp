// Health (docs/CONTRACT.md: check_after_idle, keepalive_interval, reset_on_release,
// max_lifetime_jitter), against both the core scheduler and the reference model: the
// effects of each step, the counters, and next_deadline(), which golden traces
// (tests/traces/golden/*check*, *keepalive*, *reset*, lifetime_jitter) do not pin.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "driver.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/reference_model.hpp"

namespace fairpool::testing {
namespace {

using E = core::event;
using core::check_outcome;
using core::release_outcome;
using core::reset_outcome;
using core::slot_state;

template <class Machine>
class health : public ::testing::Test {
protected:
    // One slot, spawned and idle at time 10 (verified at 10).
    static driver<Machine> one_slot(core::config c) {
        c.max_slots = 1;
        c.min_slots = 1;
        driver<Machine> d(c);
        EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
        EXPECT_EQ(d(E::spawned(10, 0)), effects{});
        return d;
    }
};

using machines = ::testing::Types<core::scheduler, model::reference_model>;
TYPED_TEST_SUITE(health, machines);

TYPED_TEST(health, a_check_on_checkout_is_counted_and_its_grant_is_after_waiting) {
    core::config c;
    c.check_after_idle = 100;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::acquire(110, 1, 1)), (effects{"check slot=0"}));
    EXPECT_EQ(d.machine().slot(0), slot_state::checking);
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(slot_state::checking)], 1u);
    EXPECT_EQ(d.machine().counters().checks_started, 1u);
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // staleness alone is no time-driven work
    EXPECT_EQ(d(E::checked(125, 0, check_outcome::alive)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d.machine().counters().checks_passed, 1u);
    EXPECT_EQ(d.machine().counters().checks_failed, 0u);
    EXPECT_EQ(d.machine().counters().grants_immediate, 0u);
    EXPECT_EQ(d.machine().counters().grants_after_wait, 1u);
    EXPECT_EQ(d.machine().counters().wait_histogram[core::wait_bucket(15)], 1u);
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(slot_state::checking)], 0u);
}

TYPED_TEST(health, a_dead_check_is_counted_and_retires_died) {
    core::config c;
    c.check_after_idle = 100;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::acquire(200, 1, 1)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(201, 0, check_outcome::dead)), (effects{"retire slot=0 reason=died"}));
    EXPECT_EQ(d.machine().counters().checks_failed, 1u);
    EXPECT_EQ(d.machine().counters().retirements[static_cast<int>(core::retire_reason::died)], 1u);
    EXPECT_EQ(d(E::retired(202, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(203, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
}

TYPED_TEST(health, next_deadline_is_the_keepalive_due_time_while_a_place_is_free) {
    core::config c;
    c.keepalive_interval = 1000;
    auto d = this->one_slot(c);
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1010));
    EXPECT_EQ(d(E::tick(1010)), (effects{"check slot=0"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // the only slot is being checked
    EXPECT_EQ(d(E::checked(1500, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(2500));  // verified at 1500
    EXPECT_EQ(d(E::acquire(1600, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // nothing idle
    EXPECT_EQ(d(E::release(1700, 0, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(2700));
}

TYPED_TEST(health, next_deadline_leaves_out_keepalive_when_every_place_is_taken) {
    core::config c;
    c.max_slots = 2;
    c.min_slots = 2;
    c.keepalive_interval = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(110));
    EXPECT_EQ(d(E::tick(120)), (effects{"check slot=0"}));  // slot 1 is due too: one place only
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::checked(130, 0, check_outcome::alive)), (effects{"check slot=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::checked(140, 1, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(230));  // slot 0, verified at 130
    EXPECT_EQ(d.machine().counters().checks_started, 2u);
}

TYPED_TEST(health, next_deadline_counts_idle_timeout_from_the_last_use_not_the_last_check) {
    core::config c;
    c.max_slots = 1;
    c.idle_timeout = 500;
    c.keepalive_interval = 200;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(10, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(20, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(30, 0, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(230));
    EXPECT_EQ(d(E::tick(230)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(240, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(440));
    EXPECT_EQ(d(E::tick(440)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(450, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(530));  // 30 + 500, before 450 + 200
}

TYPED_TEST(health, resets_are_counted_and_a_resetting_slot_is_live_but_not_grantable) {
    core::config c;
    c.reset_on_release = true;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(30, 0, 1)), (effects{"reset slot=0"}));
    EXPECT_EQ(d.machine().slot(0), slot_state::resetting);
    EXPECT_EQ(d.machine().counters().resets_started, 1u);
    EXPECT_EQ(d(E::acquire(31, 2, 1, 31)), (effects{"reject waiter=2 reason=timeout"}));
    EXPECT_EQ(d(E::reset_done(40, 0, reset_outcome::ok)), effects{});
    EXPECT_EQ(d.machine().slot(0), slot_state::idle);
    EXPECT_EQ(d(E::acquire(41, 3, 1)), (effects{"grant waiter=3 slot=0 lease=2"}));
    EXPECT_EQ(d(E::release(50, 0, 2)), (effects{"reset slot=0"}));
    EXPECT_EQ(d(E::reset_done(60, 0, reset_outcome::failed)), (effects{"retire slot=0 reason=reset_failed"}));
    EXPECT_EQ(d.machine().counters().resets_started, 2u);
    EXPECT_EQ(d.machine().counters().resets_failed, 1u);
}

TYPED_TEST(health, a_reset_done_ok_after_shutdown_retires_and_closes) {
    core::config c;
    c.reset_on_release = true;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(30, 0, 1)), (effects{"reset slot=0"}));
    EXPECT_EQ(d(E::shutdown(31)), effects{});
    EXPECT_EQ(d(E::reset_done(40, 0, reset_outcome::ok)), (effects{"retire slot=0 reason=shutdown"}));
    EXPECT_EQ(d(E::retired(41, 0)), (effects{"closed"}));
}

// Decision 13, computed here independently: splitmix64 from jitter_seed, reduced
// with a 128-bit multiply.
std::vector<core::nanos> expected_lifetimes(std::uint64_t seed, core::nanos max_lifetime, core::nanos jitter, int n) {
    std::vector<core::nanos> out;
    for (int i = 0; i < n; ++i) {
        seed += 0x9e3779b97f4a7c15ULL;
        std::uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        // (z * (jitter + 1)) >> 64 without a 128-bit type: split z in halves.
        const std::uint64_t m = jitter + 1, lo = z & 0xffffffffULL, hi = z >> 32;
        const std::uint64_t p_lo = lo * m, p_hi = hi * m;  // m < 2^32 in these tests
        out.push_back(max_lifetime - ((p_hi + (p_lo >> 32)) >> 32));
    }
    return out;
}

TYPED_TEST(health, jittered_lifetimes_follow_the_contracts_generator) {
    core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    c.max_lifetime = 1000;
    c.max_lifetime_jitter = 500;
    c.jitter_seed = 7;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    const auto lifetimes = expected_lifetimes(7, 1000, 500, 20);
    core::nanos now = 10;
    for (const core::nanos lifetime : lifetimes) {
        ASSERT_GE(lifetime, 500u);
        ASSERT_LE(lifetime, 1000u);
        EXPECT_EQ(d(E::spawned(now, 0)), effects{});
        EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(now + lifetime));
        EXPECT_EQ(d(E::tick(now + lifetime - 1)), effects{});
        EXPECT_EQ(d(E::tick(now + lifetime)), (effects{"retire slot=0 reason=max_lifetime"}));
        now += lifetime + 1;
        EXPECT_EQ(d(E::retired(now, 0)), (effects{"spawn slot=0"}));
    }
    EXPECT_GT(std::set<core::nanos>(lifetimes.begin(), lifetimes.end()).size(), 10u);
}

TYPED_TEST(health, a_drawn_lifetime_of_zero_retires_the_resource_at_its_spawned) {
    core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    c.max_lifetime = 1;
    c.max_lifetime_jitter = 1;  // lifetimes 0 or 1
    c.jitter_seed = 3;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    core::nanos now = 10;
    for (const core::nanos lifetime : expected_lifetimes(3, 1, 1, 12)) {
        if (lifetime == 0) {
            EXPECT_EQ(d(E::spawned(now, 0)), (effects{"retire slot=0 reason=max_lifetime"}));
        } else {
            EXPECT_EQ(d(E::spawned(now, 0)), effects{});
            EXPECT_EQ(d(E::tick(now + 1)), (effects{"retire slot=0 reason=max_lifetime"}));
        }
        now += 2;
        EXPECT_EQ(d(E::retired(now, 0)), (effects{"spawn slot=0"}));
    }
}

// ---------------------------------------------------------------------------------
// Tests that pin what tools/mutate-core's health mutants change (docs/internals/HARDENING.md).

// Decision 5: with checks, the idle order (by verification) and idle time differ;
// idle_timeout retires by idle time. Slot 1 idles first (30), slot 0 second (40); two
// checks on checkout pass in the order 0, 1, so the idle order becomes 0, 1.
TYPED_TEST(health, idle_timeout_retires_by_idle_time_after_checks_on_checkout_reordered_the_idle_order) {
    core::config c;
    c.max_slots = 2;
    c.check_after_idle = 100;
    c.idle_timeout = 1000;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(2, 2, 2)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::spawned(20, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(30, 1, 2)), effects{});
    EXPECT_EQ(d(E::release(40, 0, 1)), effects{});
    EXPECT_EQ(d(E::acquire(200, 3, 1)), (effects{"check slot=0"}));  // the most recently verified
    EXPECT_EQ(d(E::acquire(201, 4, 2)), (effects{"check slot=1"}));
    EXPECT_EQ(d(E::cancel(202, 3)), (effects{"reject waiter=3 reason=cancelled"}));
    EXPECT_EQ(d(E::cancel(203, 4)), (effects{"reject waiter=4 reason=cancelled"}));
    EXPECT_EQ(d(E::checked(210, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d(E::checked(220, 1, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1030));  // slot 1, idle since 30
    EXPECT_EQ(d(E::tick(1029)), effects{});
    EXPECT_EQ(d(E::tick(1030)), (effects{"retire slot=1 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1040));
    EXPECT_EQ(d(E::tick(1040)), (effects{"retire slot=0 reason=idle"}));
}

// The same with keepalive checks (no check_after_idle): they pass in the order 0, 1.
TYPED_TEST(health, idle_timeout_retires_by_idle_time_after_keepalive_checks_reordered_the_idle_order) {
    core::config c;
    c.max_slots = 2;
    c.keepalive_interval = 100;
    c.max_concurrent_checks = 2;
    c.idle_timeout = 150;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(2, 2, 2)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::spawned(20, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(30, 1, 2)), effects{});
    EXPECT_EQ(d(E::release(40, 0, 1)), effects{});
    EXPECT_EQ(d(E::tick(130)), (effects{"check slot=1"}));
    EXPECT_EQ(d(E::tick(140)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(150, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d(E::checked(160, 1, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(180));  // slot 1: 30 + 150
    EXPECT_EQ(d(E::tick(179)), effects{});
    EXPECT_EQ(d(E::tick(180)), (effects{"retire slot=1 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(190));
    EXPECT_EQ(d(E::tick(190)), (effects{"retire slot=0 reason=idle"}));
}

// Step 4: a waiter covered by a spawn in flight starts no check of a stale slot.
TYPED_TEST(health, a_waiter_covered_by_a_spawn_in_flight_starts_no_check) {
    core::config c;
    c.max_slots = 2;
    c.min_slots = 2;
    c.check_after_idle = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::acquire(200, 1, 1)), effects{});  // slot 0 is stale, slot 1 is coming
    EXPECT_EQ(d.machine().counters().checks_started, 0u);
    EXPECT_EQ(d(E::acquire(201, 2, 1)), (effects{"check slot=0"}));  // two waiters, one spawn
    EXPECT_EQ(d(E::spawned(210, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::checked(220, 0, check_outcome::alive)), (effects{"grant waiter=2 slot=0 lease=2"}));
}

// Step 4 and 5: one check per uncovered waiter, the most recently verified slot
// first; a check in flight covers its waiter, so no spawn starts for it.
TYPED_TEST(health, each_uncovered_waiter_starts_one_check_and_no_spawn) {
    core::config c;
    c.max_slots = 3;
    c.min_slots = 2;
    c.check_after_idle = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d(E::acquire(200, 1, 1)), (effects{"check slot=1"}));
    EXPECT_EQ(d.machine().counters().spawns, 2u);
    EXPECT_EQ(d(E::acquire(201, 2, 2)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::acquire(202, 3, 3)), (effects{"spawn slot=2"}));  // nothing idle left to check
    EXPECT_EQ(d(E::checked(210, 1, check_outcome::alive)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::checked(220, 0, check_outcome::dead)), (effects{"retire slot=0 reason=died"}));
    EXPECT_EQ(d(E::spawned(230, 2)), (effects{"grant waiter=2 slot=2 lease=2"}));
    EXPECT_EQ(d(E::retired(240, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(250, 0)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d.machine().counters().checks_started, 2u);
}

// max_concurrent_checks bounds keepalive checks only: a check on checkout in flight
// leaves the place free.
TYPED_TEST(health, a_check_on_checkout_takes_no_keepalive_place) {
    core::config c;
    c.max_slots = 2;
    c.min_slots = 2;
    c.check_after_idle = 100;
    c.keepalive_interval = 1000;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d(E::acquire(500, 1, 1)), (effects{"check slot=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1010));  // slot 0's keepalive
    EXPECT_EQ(d(E::tick(1010)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(1020, 0, check_outcome::alive)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::checked(1030, 1, check_outcome::alive)), effects{});
}

// Step 2's order: idle_timeout before keepalive; a slot due for both retires.
TYPED_TEST(health, a_slot_due_for_idle_timeout_and_keepalive_retires) {
    core::config c;
    c.max_slots = 1;
    c.keepalive_interval = 100;
    c.idle_timeout = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(20, 0, 1)), effects{});
    EXPECT_EQ(d(E::tick(120)), (effects{"retire slot=0 reason=idle"}));
    EXPECT_EQ(d.machine().counters().checks_started, 0u);
}

TYPED_TEST(health, a_check_that_passes_during_shutdown_retires_and_closes) {
    core::config c;
    c.check_after_idle = 100;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::acquire(110, 1, 1)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::shutdown(120)), (effects{"reject waiter=1 reason=closed"}));
    EXPECT_EQ(d(E::checked(130, 0, check_outcome::alive)), (effects{"retire slot=0 reason=shutdown"}));
    EXPECT_EQ(d(E::retired(140, 0)), (effects{"closed"}));
}

TYPED_TEST(health, a_check_that_passes_once_the_lifetime_is_over_retires_max_lifetime) {
    core::config c;
    c.keepalive_interval = 100;
    c.max_lifetime = 150;
    auto d = this->one_slot(c);  // born at 10: expires at 160
    EXPECT_EQ(d(E::tick(110)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(160, 0, check_outcome::alive)), (effects{"retire slot=0 reason=max_lifetime"}));
    EXPECT_EQ(d(E::retired(170, 0)), (effects{"spawn slot=0"}));
}

TYPED_TEST(health, a_check_that_passes_just_before_the_lifetime_is_over_keeps_the_slot) {
    core::config c;
    c.keepalive_interval = 100;
    c.max_lifetime = 150;
    auto d = this->one_slot(c);
    EXPECT_EQ(d(E::tick(110)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(159, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d(E::tick(160)), (effects{"retire slot=0 reason=max_lifetime"}));
}

// Section 5, "Checked": the idle rule of step 2, at the check's end.
TYPED_TEST(health, a_check_that_passes_after_the_idle_timeout_retires_idle_unless_someone_waits_or_min_slots) {
    for (const std::uint64_t min_slots : {std::uint64_t{0}, std::uint64_t{1}}) {
        core::config c;
        c.max_slots = 1;
        c.min_slots = min_slots;
        c.keepalive_interval = 100;
        c.idle_timeout = 150;
        driver<TypeParam> d(c);
        EXPECT_EQ(d(E::start(0)), (min_slots == 0 ? effects{} : effects{"spawn slot=0"}));
        if (min_slots == 0) {
            EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
            EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
        } else {
            EXPECT_EQ(d(E::spawned(10, 0)), effects{});
            EXPECT_EQ(d(E::acquire(11, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
        }
        EXPECT_EQ(d(E::release(20, 0, 1)), effects{});  // idle since 20: idle_timeout at 170
        EXPECT_EQ(d(E::tick(120)), (effects{"check slot=0"}));
        if (min_slots == 0) {
            EXPECT_EQ(d(E::checked(170, 0, check_outcome::alive)), (effects{"retire slot=0 reason=idle"}));
        } else {
            EXPECT_EQ(d(E::checked(170, 0, check_outcome::alive)), effects{});
            EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(270));  // keepalive only
        }
    }
}

TYPED_TEST(health, a_check_that_passes_just_before_the_idle_timeout_keeps_the_slot) {
    core::config c;
    c.max_slots = 1;
    c.keepalive_interval = 100;
    c.idle_timeout = 150;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(20, 0, 1)), effects{});
    EXPECT_EQ(d(E::tick(120)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(169, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(170));
    EXPECT_EQ(d(E::tick(170)), (effects{"retire slot=0 reason=idle"}));
}

TYPED_TEST(health, a_check_on_checkout_that_passes_after_the_idle_timeout_grants_its_waiter) {
    core::config c;
    c.max_slots = 1;
    c.check_after_idle = 100;
    c.idle_timeout = 150;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(20, 0, 1)), effects{});
    EXPECT_EQ(d(E::acquire(130, 2, 1)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(170, 0, check_outcome::alive)), (effects{"grant waiter=2 slot=0 lease=2"}));
}

// Without idle_timeout a passed check never retires the slot.
TYPED_TEST(health, a_passed_keepalive_check_without_idle_timeout_keeps_the_slot) {
    core::config c;
    c.max_slots = 1;
    c.keepalive_interval = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(20, 0, 1)), effects{});
    EXPECT_EQ(d(E::tick(120)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(130, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().slot(0), slot_state::idle);
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(230));
}

// A keepalive check that ends frees its place: a slot that becomes due after that
// step is checked at its own due time.
TYPED_TEST(health, a_freed_keepalive_place_is_used_at_the_next_slots_due_time) {
    core::config c;
    c.max_slots = 2;
    c.min_slots = 2;
    c.keepalive_interval = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d(E::tick(110)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(115, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(120));
    EXPECT_EQ(d(E::tick(120)), (effects{"check slot=1"}));
}

// Decision 5: a reset_done ok restarts the idle time, like a release.
TYPED_TEST(health, idle_timeout_counts_from_the_reset_done) {
    core::config c;
    c.max_slots = 1;
    c.reset_on_release = true;
    c.idle_timeout = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(20, 0, 1)), (effects{"reset slot=0"}));
    EXPECT_EQ(d(E::reset_done(200, 0, reset_outcome::ok)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(300));
    EXPECT_EQ(d(E::tick(299)), effects{});
    EXPECT_EQ(d(E::tick(300)), (effects{"retire slot=0 reason=idle"}));
}

// Section 5, "Release" and "Reset done": the age rule at its exact due time, and the
// rules' order (shutting down, max_uses, max_lifetime).
TYPED_TEST(health, release_and_reset_done_retire_max_lifetime_at_the_exact_age) {
    for (const bool reset : {false, true}) {
        core::config c;
        c.reset_on_release = reset;
        c.max_lifetime = 100;
        auto d = this->one_slot(c);  // born at 10: expires at 110
        EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
        EXPECT_EQ(d(E::release(30, 0, 1)), (reset ? effects{"reset slot=0"} : effects{}));
        if (reset) {
            EXPECT_EQ(d(E::reset_done(40, 0, reset_outcome::ok)), effects{});
        }
        EXPECT_EQ(d(E::acquire(50, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
        if (reset) {
            EXPECT_EQ(d(E::release(109, 0, 2)), (effects{"reset slot=0"}));
            EXPECT_EQ(d(E::reset_done(110, 0, reset_outcome::ok)), (effects{"retire slot=0 reason=max_lifetime"}));
        } else {
            EXPECT_EQ(d(E::release(110, 0, 2)), (effects{"retire slot=0 reason=max_lifetime"}));
        }
    }
}

TYPED_TEST(health, a_worn_release_retires_for_the_first_reason_in_contract_order) {
    core::config c;
    c.max_uses = 1;
    c.max_lifetime = 100;
    {
        auto d = this->one_slot(c);
        EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
        EXPECT_EQ(d(E::release(200, 0, 1)), (effects{"retire slot=0 reason=max_uses"}));  // and max_lifetime
    }
    {
        auto d = this->one_slot(c);
        EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
        EXPECT_EQ(d(E::shutdown(30)), effects{});
        EXPECT_EQ(d(E::release(200, 0, 1)), (effects{"retire slot=0 reason=shutdown"}));
    }
}

// Section 1: staleness counts from the last verification, not from the idle time; a
// slot verified exactly check_after_idle ago is stale, one ns less is fresh.
TYPED_TEST(health, staleness_counts_from_the_last_verification) {
    core::config c;
    c.check_after_idle = 150;
    c.keepalive_interval = 100;
    auto d = this->one_slot(c);  // verified at 10
    EXPECT_EQ(d(E::tick(110)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::checked(120, 0, check_outcome::alive)), effects{});  // verified at 120, idle since 10
    EXPECT_EQ(d(E::acquire(200, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
}

TYPED_TEST(health, a_slot_is_stale_exactly_check_after_idle_after_its_verification) {
    core::config c;
    c.check_after_idle = 100;
    auto d = this->one_slot(c);  // verified at 10
    EXPECT_EQ(d(E::acquire(109, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(120, 0, 1)), effects{});  // verified at 120
    EXPECT_EQ(d(E::acquire(219, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::release(230, 0, 2)), effects{});
    EXPECT_EQ(d(E::acquire(330, 3, 1)), (effects{"check slot=0"}));
}

// Decision 12: idle_order=fifo grants the oldest fresh slot, past the stale ones; lifo
// the newest.
TYPED_TEST(health, fifo_idle_order_grants_the_oldest_fresh_slot_past_stale_ones) {
    core::config c;
    c.max_slots = 3;
    c.min_slots = 3;
    c.idle_order = core::idle_order::fifo;
    c.check_after_idle = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1", "spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d(E::spawned(60, 2)), effects{});
    EXPECT_EQ(d(E::acquire(115, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));  // slot 0 is stale
    EXPECT_EQ(d(E::acquire(116, 2, 1)), (effects{"grant waiter=2 slot=2 lease=2"}));
    EXPECT_EQ(d(E::acquire(117, 3, 1)), (effects{"check slot=0"}));
    EXPECT_EQ(d(E::release(118, 1, 1)), (effects{"grant waiter=3 slot=1 lease=3"}));
    EXPECT_EQ(d(E::checked(119, 0, check_outcome::alive)), effects{});
    EXPECT_EQ(d(E::release(121, 2, 2)), effects{});  // idle order: 0 (119), 2 (121)
    EXPECT_EQ(d(E::acquire(122, 4, 1)), (effects{"grant waiter=4 slot=0 lease=4"}));
    EXPECT_EQ(d(E::acquire(123, 5, 1)), (effects{"grant waiter=5 slot=2 lease=5"}));
}

TYPED_TEST(health, lifo_idle_order_with_checks_grants_the_newest_fresh_slot) {
    core::config c;
    c.max_slots = 3;
    c.min_slots = 3;
    c.check_after_idle = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1", "spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::spawned(20, 1)), effects{});
    EXPECT_EQ(d(E::spawned(30, 2)), effects{});
    EXPECT_EQ(d(E::acquire(40, 1, 1)), (effects{"grant waiter=1 slot=2 lease=1"}));
    EXPECT_EQ(d(E::acquire(41, 2, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(50, 2, 1)), effects{});  // idle order: 0 (10), 2 (50)
    EXPECT_EQ(d(E::acquire(115, 3, 1)), (effects{"grant waiter=3 slot=2 lease=3"}));  // slot 0 is stale
}

// Decision 13 with a jitter as wide as the lifetime: every bit of the generator's
// output shows in the drawn lifetime.
__extension__ typedef unsigned __int128 u128;  // NOLINT(modernize-use-using)

TYPED_TEST(health, wide_jitter_uses_every_bit_of_the_generator) {
    core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    c.max_lifetime = core::nanos{1} << 62;
    c.max_lifetime_jitter = core::nanos{1} << 62;
    c.jitter_seed = 0x123456789abcdefULL;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    std::uint64_t state = c.jitter_seed;
    core::nanos now = 10;
    for (std::uint64_t lease = 1; lease <= 8; ++lease) {
        state += 0x9e3779b97f4a7c15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        const auto reduced = static_cast<std::uint64_t>((u128{z} * (u128{c.max_lifetime_jitter} + 1)) >> 64);
        EXPECT_EQ(d(E::spawned(now, 0)), effects{});
        EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(now + (c.max_lifetime - reduced)));
        EXPECT_EQ(d(E::acquire(now + 1, lease, 1)),
                  (effects{"grant waiter=" + std::to_string(lease) + " slot=0 lease=" + std::to_string(lease)}));
        EXPECT_EQ(d(E::release(now + 2, 0, lease, release_outcome::dirty)), (effects{"retire slot=0 reason=dirty"}));
        EXPECT_EQ(d(E::retired(now + 3, 0)), (effects{"spawn slot=0"}));
        now += 10;
    }
}

// Decision 5: a spawned restarts the idle time (the resource's first idle period).
TYPED_TEST(health, idle_timeout_counts_from_the_spawned) {
    core::config c;
    c.max_slots = 1;
    c.idle_timeout = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::cancel(2, 1)), (effects{"reject waiter=1 reason=cancelled"}));
    EXPECT_EQ(d(E::spawned(50, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(150));
    EXPECT_EQ(d(E::tick(149)), effects{});
    EXPECT_EQ(d(E::tick(150)), (effects{"retire slot=0 reason=idle"}));
    EXPECT_EQ(d(E::retired(160, 0)), effects{});
    EXPECT_EQ(d(E::acquire(170, 2, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::cancel(171, 2)), (effects{"reject waiter=2 reason=cancelled"}));
    EXPECT_EQ(d(E::spawned(300, 0)), effects{});  // the last resource's idle time is forgotten
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(400));
}

}  // namespace
}  // namespace fairpool::testing
