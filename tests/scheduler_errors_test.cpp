// Every event error of docs/CONTRACT.md section 3: the code returned, no effect, and
// no change at all. "No change" is checked against a twin that never saw the bad
// event: both must then answer a common suffix of events identically.
#include <gtest/gtest.h>

#include "driver.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/reference_model.hpp"

namespace fairpool::testing {
namespace {

using core::event_error;
using E = core::event;

template <class Machine>
class errors : public ::testing::Test {
protected:
    // slot 0 leased (lease 1), slot 1 spawning, waiter 2 queued, time 30.
    static driver<Machine> busy_pool() {
        core::config c;
        c.max_slots = 3;
        c.min_slots = 1;
        c.acquire_timeout = 500;
        c.leak_threshold = 1000;
        driver<Machine> d(c);
        EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"})) << "busy_pool";
        EXPECT_EQ(d(E::spawned(10, 0)), effects{}) << "busy_pool";
        EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"})) << "busy_pool";
        EXPECT_EQ(d(E::acquire(30, 2, 2)), (effects{"spawn slot=1"})) << "busy_pool";  // deadline 530
        return d;
    }

    // The suffix starts at 40 on purpose: a bad event at a later time must not have
    // moved the clock.
    static std::vector<effects> suffix(driver<Machine>& d) {
        std::vector<effects> out;
        for (const E& e : {E::tick(40), E::acquire(41, 3, 1), E::release(42, 0, 1), E::spawned(43, 1),
                           E::acquire(44, 4, 2), E::tick(1100), E::tick(2000), E::shutdown(2001),
                           E::release(2002, 0, 2), E::release(2003, 1, 3)}) {
            out.push_back(d.outcome(e));
        }
        return out;
    }

    // What busy_pool() answers to the suffix, step by step.
    static std::vector<effects> busy_pool_suffix() {
        return {
            {},                                  // @40 tick
            {"spawn slot=2"},                    // @41 acquire waiter=3 handle=1: queued, deadline 541
            {"grant waiter=2 slot=0 lease=2"},   // @42 release slot=0 lease=1
            {"grant waiter=3 slot=1 lease=3"},   // @43 spawned slot=1
            {},                                  // @44 acquire waiter=4 handle=2: queued, deadline 544
            {"reject waiter=4 reason=timeout", "leak_suspected slot=0 lease=2",
             "leak_suspected slot=1 lease=3"},   // @1100 tick
            {},                                  // @2000 tick
            {},                                  // @2001 shutdown: slot 2 is still spawning
            {"retire slot=0 reason=shutdown"},   // @2002 release slot=0 lease=2
            {"retire slot=1 reason=shutdown"},   // @2003 release slot=1 lease=3
        };
    }

    // `d` must be a busy_pool().
    static void expect_refused_without_change(driver<Machine> d, const E& bad, event_error expected) {
        driver<Machine> twin = d;
        const core::stats before = d.machine().counters();
        const auto deadline_before = d.machine().next_deadline();
        EXPECT_EQ(deadline_before, std::optional<core::nanos>(530));  // waiter 2's deadline
        d.refused(bad, expected);
        EXPECT_EQ(d.machine().counters(), before) << trace::format_line(bad);
        EXPECT_EQ(d.machine().next_deadline(), deadline_before) << trace::format_line(bad);
        EXPECT_EQ(suffix(twin), busy_pool_suffix());
        EXPECT_EQ(suffix(d), busy_pool_suffix()) << trace::format_line(bad);
    }
};

using machines = ::testing::Types<core::scheduler, model::reference_model>;
TYPED_TEST_SUITE(errors, machines);

TYPED_TEST(errors, not_started_refuses_every_event_before_start) {
    core::config c;
    c.min_slots = 1;
    for (const E& e : {E::tick(5), E::acquire(5, 1, 1), E::cancel(5, 1), E::deregister(5, 1),
                       E::release(5, 0, 1), E::spawned(5, 0), E::spawn_failed(5, 0), E::retired(5, 0),
                       E::died(5, 0), E::shutdown(5)}) {
        driver<TypeParam> d(c);
        d.refused(e, event_error::not_started);
        EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
        EXPECT_EQ(d(E::start(1)), (effects{"spawn slot=0"}));  // time did not move to 5
    }
}

TYPED_TEST(errors, already_started) {
    this->expect_refused_without_change(this->busy_pool(), E::start(35), event_error::already_started);
}

TYPED_TEST(errors, time_went_backwards) {
    this->expect_refused_without_change(this->busy_pool(), E::tick(29), event_error::time_went_backwards);
    this->expect_refused_without_change(this->busy_pool(), E::acquire(0, 9, 9), event_error::time_went_backwards);
}

TYPED_TEST(errors, equal_time_is_fine) {
    auto d = this->busy_pool();
    EXPECT_EQ(d(E::tick(30)), effects{});
}

TYPED_TEST(errors, bad_slot) {
    for (const E& e : {E::release(35, 3, 1), E::spawned(35, 3), E::spawn_failed(35, 65535), E::retired(35, 4),
                       E::died(35, 100), E::checked(35, 3, core::check_outcome::alive),
                       E::reset_done(35, 65535, core::reset_outcome::failed)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::bad_slot);
}

TYPED_TEST(errors, bad_weight) {
    this->expect_refused_without_change(this->busy_pool(), E::acquire(35, 9, 9, std::nullopt, 0),
                                        event_error::bad_weight);
    this->expect_refused_without_change(this->busy_pool(), E::acquire(35, 9, 9, std::nullopt, 65536),
                                        event_error::bad_weight);
    // Checked even where the weight would be ignored, and before duplicate_waiter.
    this->expect_refused_without_change(this->busy_pool(), E::acquire(35, 2, 2, std::nullopt, 0),
                                        event_error::bad_weight);
}

TYPED_TEST(errors, weights_1_and_65535_are_accepted) {
    auto d = this->busy_pool();
    EXPECT_EQ(d(E::acquire(35, 3, 3, std::nullopt, 1)), (effects{"spawn slot=2"}));
    EXPECT_EQ(d(E::acquire(36, 4, 4, std::nullopt, core::max_weight)), effects{});
}

TYPED_TEST(errors, duplicate_waiter) {
    this->expect_refused_without_change(this->busy_pool(), E::acquire(35, 2, 7), event_error::duplicate_waiter);
}

TYPED_TEST(errors, stale_lease) {
    for (const E& e : {E::release(35, 0, 2), E::release(35, 1, 1), E::release(35, 2, 1)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::stale_lease);
}

TYPED_TEST(errors, stale_lease_once_the_lease_has_ended) {
    // A slot keeps its last lease id after the release, idle (clean) or retiring (dirty).
    auto d = this->busy_pool();
    EXPECT_EQ(d(E::spawned(35, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(36, 1, 2)), effects{});
    d.refused(E::release(37, 1, 2), event_error::stale_lease);
    EXPECT_EQ(d(E::release(38, 0, 1, core::release_outcome::dirty)), (effects{"retire slot=0 reason=dirty"}));
    d.refused(E::release(39, 0, 1), event_error::stale_lease);
    d.refused(E::release(39, 0, 1, core::release_outcome::dirty), event_error::stale_lease);
}

TYPED_TEST(errors, not_spawning) {
    for (const E& e : {E::spawned(35, 0), E::spawn_failed(35, 0), E::spawned(35, 2)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::not_spawning);
}

TYPED_TEST(errors, not_retiring) {
    for (const E& e : {E::retired(35, 0), E::retired(35, 1), E::retired(35, 2)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::not_retiring);
}

TYPED_TEST(errors, not_idle) {
    for (const E& e : {E::died(35, 0), E::died(35, 1), E::died(35, 2)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::not_idle);
}

// A slot leased, spawning or empty is not checking, nor resetting; either outcome.
TYPED_TEST(errors, not_checking) {
    for (const E& e : {E::checked(35, 0, core::check_outcome::alive), E::checked(35, 1, core::check_outcome::dead),
                       E::checked(35, 2, core::check_outcome::alive)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::not_checking);
}

TYPED_TEST(errors, not_resetting) {
    for (const E& e : {E::reset_done(35, 0, core::reset_outcome::ok), E::reset_done(35, 1, core::reset_outcome::failed),
                       E::reset_done(35, 2, core::reset_outcome::ok)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::not_resetting);
}

TYPED_TEST(errors, bad_size) {
    // busy_pool's slot_capacity is its max_slots, 3 (max_slots 0 is a size: decision 16).
    for (const E& e : {E::resize(35, 0, 1), E::resize(35, 4, 0), E::resize(35, 2, 3), E::resize(35, UINT64_MAX, 0)})
        this->expect_refused_without_change(this->busy_pool(), e, event_error::bad_size);
}

TYPED_TEST(errors, bad_size_comes_after_not_started_and_time_went_backwards) {
    driver<TypeParam> fresh(core::config{});
    fresh.refused(E::resize(0, 0, 0), event_error::not_started);
    auto d = this->busy_pool();
    d.refused(E::resize(10, 0, 0), event_error::time_went_backwards);
    d.refused(E::resize(10, 4, 0), event_error::time_went_backwards);  // bad too: time is judged first
    d.refused(E::resize(35, 4, 0), event_error::bad_size);
}

// The largest cap is a cap (the lease count starts) that no handle reaches.
TYPED_TEST(errors, max_leases_of_2_to_the_64_minus_1_is_accepted) {
    auto d = this->busy_pool();
    EXPECT_EQ(d(E::acquire(35, 3, 3, std::nullopt, std::nullopt, UINT64_MAX)), (effects{"spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(36, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::spawned(37, 2)), (effects{"grant waiter=3 slot=2 lease=3"}));
    EXPECT_EQ(d.machine().counters().handles_at_cap, 0u);
}

TYPED_TEST(errors, checks_run_in_contract_order) {
    auto d = this->busy_pool();
    d.refused(E::release(10, 9, 9), event_error::time_went_backwards);  // backwards and bad slot: time first
    d.refused(E::release(35, 9, 9), event_error::bad_slot);             // bad slot before stale lease
    driver<TypeParam> fresh(core::config{});
    EXPECT_EQ(fresh(E::start(0)), effects{});
    fresh.refused(E::start(0), event_error::already_started);
}

}  // namespace
}  // namespace fairpool::testing
