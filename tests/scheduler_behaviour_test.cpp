// One test per behaviour of the contract (docs/CONTRACT.md), run against both the
// core scheduler and the reference model: each pins the exact effects of each step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <type_traits>

#include "driver.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/reference_model.hpp"

namespace fairpool::testing {
namespace {

using core::event_error;
using E = core::event;
using core::release_outcome;

template <class Machine>
class behaviour : public ::testing::Test {
protected:
    using machine = Machine;

    static core::config slots(std::uint64_t max, std::uint64_t min) {
        core::config c;
        c.max_slots = max;
        c.min_slots = min;
        return c;
    }

    // A started pool whose min_slots slots are all spawned and idle, at time 1: `start`
    // spawns slots 0..min_slots-1 (the config must allow that many spawns at once) and
    // each `spawned` emits nothing, nobody waiting.
    static driver<Machine> warm(core::config c) {
        driver<Machine> d(c);
        effects prewarm;
        for (std::uint32_t s = 0; s < c.min_slots; ++s) prewarm.push_back("spawn slot=" + std::to_string(s));
        EXPECT_EQ(d(E::start(0)), prewarm) << "warm: start";
        for (std::uint32_t s = 0; s < c.min_slots; ++s) EXPECT_EQ(d(E::spawned(1, s)), effects{}) << "warm: spawned";
        return d;
    }
};

using machines = ::testing::Types<core::scheduler, model::reference_model>;
TYPED_TEST_SUITE(behaviour, machines);

TYPED_TEST(behaviour, immediate_uncontended_grant) {
    driver<TypeParam> d(this->slots(2, 1));
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(5, 0)), effects{});
    EXPECT_EQ(d(E::acquire(10, 1, 7)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d.machine().counters().grants_immediate, 1u);
    EXPECT_EQ(d.machine().counters().wait_histogram[0], 1u);
    // The next one finds no idle slot: it queues and one spawn starts for it.
    EXPECT_EQ(d(E::acquire(11, 2, 7)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d.machine().counters().queued_waiters, 1u);
    EXPECT_EQ(d.machine().counters().acquires, 2u);
    EXPECT_EQ(d.machine().counters().spawns, 2u);
}

// The core alone (the model has no such reader): take_touched_wait_buckets() names the
// buckets grants added to since the last call, what the adapter's stats board stores
// instead of searching the histogram.
TEST(scheduler_counters, touched_wait_buckets_name_the_buckets_grants_added_to) {
    core::config c;
    c.max_slots = c.min_slots = 1;
    driver<core::scheduler> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(1, 0)), effects{});
    EXPECT_EQ(d.machine().take_touched_wait_buckets(), 0u);  // nothing granted yet
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));  // waited 0 ns
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 3, 1)), effects{});
    EXPECT_EQ(d.machine().take_touched_wait_buckets(), 1u);  // bucket 0, and forgotten
    EXPECT_EQ(d.machine().take_touched_wait_buckets(), 0u);
    EXPECT_EQ(d(E::release(6, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));  // 3 ns: bucket 2
    EXPECT_EQ(d(E::release(1'003, 0, 2)), (effects{"grant waiter=3 slot=0 lease=3"}));  // 999 ns: bucket 10
    EXPECT_EQ(d.machine().take_touched_wait_buckets(), (1u << 2) | (1u << 10));
    EXPECT_EQ(d.machine().counters().wait_histogram[2], 1u);
    EXPECT_EQ(d.machine().counters().wait_histogram[10], 1u);
}

TYPED_TEST(behaviour, fifo_under_saturation) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 3, 1)), effects{});
    EXPECT_EQ(d(E::acquire(5, 4, 1)), effects{});
    EXPECT_EQ(d(E::release(6, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::release(7, 0, 2)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d(E::release(8, 0, 3)), (effects{"grant waiter=4 slot=0 lease=4"}));
    EXPECT_EQ(d.machine().counters().grants_after_wait, 3u);
    EXPECT_EQ(d.machine().counters().wait_histogram[0], 1u);  // waiter 1: 0 ns
    EXPECT_EQ(d.machine().counters().wait_histogram[2], 3u);  // the others: 3 ns, in [2, 4)
}

TYPED_TEST(behaviour, release_hands_the_slot_to_the_queued_waiter_not_a_newcomer) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 2)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(4, 3, 3)), effects{});  // no idle slot: it queues
    EXPECT_EQ(d.machine().counters().queued_waiters, 1u);
}

TYPED_TEST(behaviour, round_robin_alternates_two_handles) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    for (std::uint64_t w : {2, 3, 4}) EXPECT_EQ(d(E::acquire(3, w, 1)), effects{});
    for (std::uint64_t w : {5, 6, 7}) EXPECT_EQ(d(E::acquire(4, w, 2)), effects{});
    const std::uint64_t expected[] = {2, 5, 3, 6, 4, 7};
    for (std::uint64_t lease = 1; lease <= 6; ++lease)
        EXPECT_EQ(d(E::release(10 + lease, 0, lease)),
                  (effects{"grant waiter=" + std::to_string(expected[lease - 1]) + " slot=0 lease=" +
                           std::to_string(lease + 1)}));
}

TYPED_TEST(behaviour, weighted_turns) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 9)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1, std::nullopt, 2)), effects{});  // handle 1 becomes active with weight 2
    EXPECT_EQ(d(E::acquire(3, 3, 1, std::nullopt, 5)), effects{});  // ignored: handle 1 is already active
    EXPECT_EQ(d(E::acquire(3, 4, 1)), effects{});
    EXPECT_EQ(d(E::acquire(3, 5, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 6, 2)), effects{});
    EXPECT_EQ(d(E::acquire(4, 7, 2)), effects{});
    const std::uint64_t expected[] = {2, 3, 6, 4, 5, 7};
    for (std::uint64_t lease = 1; lease <= 6; ++lease)
        EXPECT_EQ(d(E::release(10 + lease, 0, lease)),
                  (effects{"grant waiter=" + std::to_string(expected[lease - 1]) + " slot=0 lease=" +
                           std::to_string(lease + 1)}));
}

TYPED_TEST(behaviour, fifo_policy_serves_global_arrival_order) {
    auto c = this->slots(1, 1);
    c.policy = core::fairness_policy::fifo;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 9)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 3, 1)), effects{});
    EXPECT_EQ(d(E::acquire(5, 4, 2)), effects{});
    EXPECT_EQ(d(E::acquire(6, 5, 1)), effects{});
    const std::uint64_t expected[] = {2, 3, 4, 5};
    for (std::uint64_t lease = 1; lease <= 4; ++lease)
        EXPECT_EQ(d(E::release(10 + lease, 0, lease)),
                  (effects{"grant waiter=" + std::to_string(expected[lease - 1]) + " slot=0 lease=" +
                           std::to_string(lease + 1)}));
}

TYPED_TEST(behaviour, idle_order_lifo_takes_newest_fifo_takes_oldest) {
    for (auto order : {core::idle_order::lifo, core::idle_order::fifo}) {
        auto c = this->slots(2, 2);
        c.idle_order = order;
        driver<TypeParam> d(c);
        EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
        EXPECT_EQ(d(E::spawned(1, 1)), effects{});
        EXPECT_EQ(d(E::spawned(2, 0)), effects{});  // idle order: 1 then 0
        const std::string slot = order == core::idle_order::lifo ? "0" : "1";
        EXPECT_EQ(d(E::acquire(3, 1, 1)), (effects{"grant waiter=1 slot=" + slot + " lease=1"}));
    }
}

TYPED_TEST(behaviour, try_acquire_grants_if_idle_else_rejects_timeout) {
    auto d = this->warm(this->slots(2, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1, 2)), (effects{"grant waiter=1 slot=0 lease=1"}));
    // deadline <= now and no idle slot: rejected at once, and no spawn for it.
    EXPECT_EQ(d(E::acquire(3, 2, 1, 3)), (effects{"reject waiter=2 reason=timeout"}));
    EXPECT_EQ(d(E::acquire(4, 3, 1, 0)), (effects{"reject waiter=3 reason=timeout"}));
    EXPECT_EQ(d.machine().counters().rejections[static_cast<int>(core::reject_reason::timeout)], 2u);
}

TYPED_TEST(behaviour, acquire_timeout_rejects_at_the_default_deadline) {
    auto c = this->slots(1, 1);
    c.acquire_timeout = 100;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(10, 2, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(110));
    EXPECT_EQ(d(E::tick(109)), effects{});
    EXPECT_EQ(d(E::tick(110)), (effects{"reject waiter=2 reason=timeout"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
}

// The adapter's lazy timer (detail/deadline_timer.hpp) reads these: once the last
// waiter with a deadline is gone, the core says surely_no_deadline() (so the timer is
// disarmed and a context's run() can return), and while waiters wait the lower bound is
// never after the exact deadline.
TYPED_TEST(behaviour, a_queue_that_empties_leaves_no_deadline_behind) {
    if constexpr (std::is_same_v<typename TestFixture::machine, core::scheduler>) {
        auto c = this->slots(1, 1);
        c.acquire_timeout = 100;
        auto d = this->warm(c);
        EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
        EXPECT_EQ(d(E::acquire(10, 2, 2)), effects{});
        EXPECT_EQ(d(E::acquire(20, 3, 3)), effects{});
        EXPECT_EQ(d.machine().deadline_lower_bound(), 110u);
        EXPECT_FALSE(d.machine().surely_no_deadline());
        EXPECT_EQ(d(E::release(30, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
        EXPECT_LE(d.machine().deadline_lower_bound(), 120u);  // a lower bound: 110 or the exact 120
        EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(120));
        EXPECT_EQ(d(E::release(40, 0, 2)), (effects{"grant waiter=3 slot=0 lease=3"}));
        EXPECT_TRUE(d.machine().surely_no_deadline());
        EXPECT_EQ(d.machine().deadline_lower_bound(), core::never);
    }
}

TYPED_TEST(behaviour, acquire_timeouts_fire_by_deadline_then_arrival) {
    auto c = this->slots(1, 1);
    c.acquire_timeout = 100;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(10, 2, 1, 60)), effects{});
    EXPECT_EQ(d(E::acquire(20, 3, 2, 50)), effects{});
    EXPECT_EQ(d(E::acquire(30, 4, 3, 60)), effects{});
    EXPECT_EQ(d(E::acquire(40, 5, 3)), effects{});  // default deadline 140
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(50));
    EXPECT_EQ(d(E::tick(100)), (effects{"reject waiter=3 reason=timeout", "reject waiter=2 reason=timeout",
                                        "reject waiter=4 reason=timeout"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(140));
    // Time-driven work runs before the event: the waiter times out before this release.
    EXPECT_EQ(d(E::release(140, 0, 1)), (effects{"reject waiter=5 reason=timeout"}));
}

TYPED_TEST(behaviour, cancel_before_grant_rejects_once) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::cancel(4, 2)), (effects{"reject waiter=2 reason=cancelled"}));
    EXPECT_EQ(d(E::cancel(5, 2)), effects{});
    EXPECT_EQ(d(E::release(6, 0, 1)), effects{});  // nobody waits any more
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(core::slot_state::idle)], 1u);
    EXPECT_EQ(d.machine().counters().rejections[static_cast<int>(core::reject_reason::cancelled)], 1u);
}

TYPED_TEST(behaviour, cancel_crossing_a_grant_has_no_effect) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::cancel(5, 2)), effects{});
    EXPECT_EQ(d(E::cancel(5, 77)), effects{});  // never known: also nothing
    EXPECT_EQ(d.machine().counters().rejections[static_cast<int>(core::reject_reason::cancelled)], 0u);
}

TYPED_TEST(behaviour, deregistration_rejects_queued_waiters_in_fifo_order) {
    auto d = this->warm(this->slots(1, 1));
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 2)), effects{});
    EXPECT_EQ(d(E::acquire(4, 3, 3)), effects{});
    EXPECT_EQ(d(E::acquire(5, 4, 2)), effects{});
    EXPECT_EQ(d.machine().counters().active_handles, 2u);
    EXPECT_EQ(d(E::deregister(6, 2)),
              (effects{"reject waiter=2 reason=deregistered", "reject waiter=4 reason=deregistered"}));
    EXPECT_EQ(d(E::deregister(7, 2)), effects{});
    EXPECT_EQ(d.machine().counters().active_handles, 1u);
    EXPECT_EQ(d(E::release(8, 0, 1)), (effects{"grant waiter=3 slot=0 lease=2"}));
}

// Section 9: active_weight sums the weights of the handles with a queued waiter, each
// the weight of the acquire that made it active (decision 3: later ones are ignored,
// and a handle that leaves and comes back takes its new acquire's). A handle at its
// lease cap with waiters is still active (decision 15).
TYPED_TEST(behaviour, active_weight_sums_the_weights_of_the_handles_with_queued_waiters) {
    auto d = this->warm(this->slots(1, 1));
    const auto& s = d.machine().counters();
    EXPECT_EQ(d(E::acquire(2, 1, 1, {}, {}, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));  // at its cap of 1
    EXPECT_EQ(s.active_weight, 0u);  // granted at once: never active
    EXPECT_EQ(d(E::acquire(3, 2, 7, {}, 3)), effects{});
    EXPECT_EQ(d(E::acquire(3, 3, 7, {}, 5)), effects{});  // handle 7 is active: weight 3 kept
    EXPECT_EQ(d(E::acquire(4, 4, 8, {}, 2)), effects{});
    EXPECT_EQ(d(E::acquire(4, 5, 9, core::nanos{10})), effects{});  // weight 1
    EXPECT_EQ(d(E::acquire(4, 6, 1, {}, 4)), effects{});            // handle 1 holds its cap: behind it
    EXPECT_EQ(s.active_handles, 4u);
    EXPECT_EQ(s.waiters_behind_cap, 1u);
    EXPECT_EQ(s.active_weight, 3u + 2u + 1u + 4u);
    EXPECT_EQ(d(E::cancel(5, 4)), (effects{"reject waiter=4 reason=cancelled"}));
    EXPECT_EQ(s.active_weight, 3u + 1u + 4u);
    EXPECT_EQ(d(E::release(6, 0, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));  // 7 keeps waiter 3
    EXPECT_EQ(s.waiters_behind_cap, 0u);  // handle 1 is below its cap again, at the back
    EXPECT_EQ(s.active_weight, 3u + 1u + 4u);
    EXPECT_EQ(d(E::tick(10)), (effects{"reject waiter=5 reason=timeout"}));
    EXPECT_EQ(d(E::deregister(11, 7)), (effects{"reject waiter=3 reason=deregistered"}));
    EXPECT_EQ(s.active_weight, 4u);  // handle 1's waiter
    EXPECT_EQ(d(E::deregister(11, 1)), (effects{"reject waiter=6 reason=deregistered"}));
    EXPECT_EQ(s.active_handles, 0u);
    EXPECT_EQ(s.active_weight, 0u);
    EXPECT_EQ(d(E::acquire(12, 7, 7, {}, 2)), effects{});  // active again, with this acquire's weight
    EXPECT_EQ(s.active_weight, 2u);
    EXPECT_EQ(d(E::shutdown(13)), (effects{"reject waiter=7 reason=closed"}));
    EXPECT_EQ(s.active_weight, 0u);
}

TYPED_TEST(behaviour, saturated_at_max_waiters) {
    auto c = this->slots(1, 1);
    c.max_waiters = 2;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::acquire(3, 3, 2)), effects{});
    EXPECT_EQ(d(E::acquire(3, 4, 3)), (effects{"reject waiter=4 reason=saturated"}));
    EXPECT_EQ(d.machine().counters().queued_waiters, 2u);
}

TYPED_TEST(behaviour, saturated_at_max_waiters_per_handle) {
    auto c = this->slots(1, 1);
    c.max_waiters = 10;
    c.max_waiters_per_handle = 2;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::acquire(3, 3, 1)), effects{});
    EXPECT_EQ(d(E::acquire(3, 4, 1)), (effects{"reject waiter=4 reason=saturated"}));
    EXPECT_EQ(d(E::acquire(3, 5, 2)), effects{});
}

TYPED_TEST(behaviour, a_waiters_place_and_a_handles_record_are_reused_after_they_leave) {
    auto c = this->slots(1, 1);
    c.max_waiters = 1;  // one place for a waiter, one record for an active handle
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 2)), effects{});
    EXPECT_EQ(d(E::cancel(4, 2)), (effects{"reject waiter=2 reason=cancelled"}));
    EXPECT_EQ(d(E::acquire(5, 3, 3)), effects{});
    EXPECT_EQ(d(E::release(6, 0, 1)), (effects{"grant waiter=3 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(7, 4, 4)), effects{});
    EXPECT_EQ(d.machine().counters().queued_waiters, 1u);
    EXPECT_EQ(d.machine().counters().active_handles, 1u);
}

TYPED_TEST(behaviour, dirty_release_retires_and_slot_is_granted_only_after_a_new_spawn) {
    driver<TypeParam> d(this->slots(1, 0));
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(2, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});
    EXPECT_EQ(d(E::release(4, 0, 1, release_outcome::dirty)), (effects{"retire slot=0 reason=dirty"}));
    EXPECT_EQ(d(E::tick(5)), effects{});
    EXPECT_EQ(d(E::retired(6, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(7, 0)), (effects{"grant waiter=2 slot=0 lease=2"}));
}

TYPED_TEST(behaviour, max_uses_recycles_the_resource) {
    auto c = this->slots(1, 1);
    c.max_uses = 2;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(3, 0, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::release(5, 0, 2)), (effects{"retire slot=0 reason=max_uses"}));
    EXPECT_EQ(d(E::retired(6, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(7, 0)), effects{});
    EXPECT_EQ(d(E::acquire(8, 3, 1)), (effects{"grant waiter=3 slot=0 lease=3"}));
    EXPECT_EQ(d(E::release(9, 0, 3)), effects{});  // uses count from the new birth
}

TYPED_TEST(behaviour, max_uses_of_one_makes_every_resource_single_use) {
    auto c = this->slots(1, 1);
    c.max_uses = 1;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(3, 0, 1)), (effects{"retire slot=0 reason=max_uses"}));
    EXPECT_EQ(d.machine().counters().retirements[static_cast<int>(core::retire_reason::max_uses)], 1u);
}

TYPED_TEST(behaviour, max_lifetime_retires_an_idle_slot_when_it_ages) {
    auto c = this->slots(1, 1);
    c.max_lifetime = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(110));
    EXPECT_EQ(d(E::tick(109)), effects{});
    EXPECT_EQ(d(E::tick(110)), (effects{"retire slot=0 reason=max_lifetime"}));
    EXPECT_EQ(d(E::retired(111, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(120, 0)), effects{});  // the new resource ages from 120
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(220));
    EXPECT_EQ(d(E::tick(220)), (effects{"retire slot=0 reason=max_lifetime"}));
}

TYPED_TEST(behaviour, died_for_a_slot_that_step_2_retires_changes_nothing_more) {
    auto c = this->slots(1, 1);
    c.max_lifetime = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::died(110, 0)), (effects{"retire slot=0 reason=max_lifetime"}));
    EXPECT_EQ(d.machine().counters().retirements[static_cast<int>(core::retire_reason::died)], 0u);
    EXPECT_EQ(d(E::retired(111, 0)), (effects{"spawn slot=0"}));
}

TYPED_TEST(behaviour, max_lifetime_retires_a_leased_slot_at_release) {
    auto c = this->slots(1, 1);
    c.max_lifetime = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(10, 0)), effects{});
    EXPECT_EQ(d(E::acquire(20, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::tick(200)), effects{});
    EXPECT_EQ(d(E::release(200, 0, 1)), (effects{"retire slot=0 reason=max_lifetime"}));
}

TYPED_TEST(behaviour, idle_timeout_never_goes_below_min_slots) {
    auto c = this->slots(3, 1);
    c.idle_timeout = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(1, 0)), effects{});
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::acquire(3, 3, 1)), (effects{"spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(4, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::spawned(5, 2)), (effects{"grant waiter=3 slot=2 lease=3"}));
    EXPECT_EQ(d(E::release(10, 0, 1)), effects{});
    EXPECT_EQ(d(E::release(20, 1, 2)), effects{});
    EXPECT_EQ(d(E::release(30, 2, 3)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(110));
    EXPECT_EQ(d(E::tick(110)), (effects{"retire slot=0 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(120));
    EXPECT_EQ(d(E::tick(500)), (effects{"retire slot=1 reason=idle"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // one live slot is min_slots
    EXPECT_EQ(d(E::tick(10'000)), effects{});
}

TYPED_TEST(behaviour, max_lifetime_retirements_come_before_idle_timeouts_in_one_step) {
    auto c = this->slots(2, 0);
    c.max_lifetime = 100;
    c.idle_timeout = 50;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(1, 2, 2)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(2, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));   // born at 2
    EXPECT_EQ(d(E::spawned(50, 0)), (effects{"grant waiter=2 slot=0 lease=2"}));  // born at 50
    EXPECT_EQ(d(E::release(51, 0, 2)), effects{});  // idle since 51: idle_timeout at 101
    EXPECT_EQ(d(E::release(90, 1, 1)), effects{});  // idle since 90: max_lifetime at 102
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(101));
    EXPECT_EQ(d(E::tick(110)), (effects{"retire slot=1 reason=max_lifetime", "retire slot=0 reason=idle"}));
}

TYPED_TEST(behaviour, durations_of_2_pow_64_minus_1_never_come) {
    // Each due time saturates to 2^64-1, "never", which does not come even at that now.
    auto c = this->slots(2, 1);
    c.acquire_timeout = c.idle_timeout = c.max_lifetime = c.leak_threshold = core::never;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), (effects{"spawn slot=1"}));  // queued without a deadline
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::spawned(4, 1)), (effects{"grant waiter=2 slot=1 lease=2"}));
    EXPECT_EQ(d(E::release(5, 1, 2)), effects{});  // idle, with 2 live slots above min_slots
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::tick(core::never)), effects{});
    EXPECT_EQ(d(E::release(core::never, 0, 1)), effects{});
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(core::slot_state::idle)], 2u);
}

TYPED_TEST(behaviour, prewarm_and_restore_of_min_slots) {
    driver<TypeParam> d(this->slots(4, 2));
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(1, 0)), effects{});
    EXPECT_EQ(d(E::spawned(2, 1)), effects{});
    // Slot 0 is retiring, not empty: the replacement takes the lowest empty slot.
    EXPECT_EQ(d(E::died(3, 0)), (effects{"retire slot=0 reason=died", "spawn slot=2"}));
    EXPECT_EQ(d(E::retired(4, 0)), effects{});
    EXPECT_EQ(d.machine().counters().slots[static_cast<int>(core::slot_state::empty)], 2u);
}

TYPED_TEST(behaviour, spawns_take_the_lowest_empty_slots_in_whatever_order_they_emptied) {
    auto c = this->slots(2, 2);
    c.spawn_backoff_initial = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawn_failed(1, 1)), effects{});
    EXPECT_EQ(d(E::spawn_failed(2, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(202));
    EXPECT_EQ(d(E::tick(202)), (effects{"spawn slot=0", "spawn slot=1"}));
}

TYPED_TEST(behaviour, spawns_one_per_unserved_waiter_up_to_max_concurrent_spawns) {
    auto c = this->slots(4, 0);
    c.max_concurrent_spawns = 2;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(2, 2, 2)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::acquire(3, 3, 3)), effects{});
    EXPECT_EQ(d(E::spawned(4, 0)), (effects{"grant waiter=1 slot=0 lease=1", "spawn slot=2"}));
}

TYPED_TEST(behaviour, prewarm_starts_the_next_spawn_as_each_one_completes) {
    auto c = this->slots(3, 3);
    c.max_concurrent_spawns = 1;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(1, 0)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(2, 1)), (effects{"spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(3, 2)), effects{});
}

TYPED_TEST(behaviour, max_concurrent_spawns_above_max_slots_allows_every_slot) {
    auto c = this->slots(2, 2);
    c.max_concurrent_spawns = core::never;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
}

TYPED_TEST(behaviour, spawn_failure_backoff_doubles_to_its_cap_and_resets_on_success) {
    auto c = this->slots(1, 1);
    c.spawn_backoff_initial = 100;
    c.spawn_backoff_max = 350;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawn_failed(10, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(110));
    EXPECT_EQ(d(E::tick(109)), effects{});
    EXPECT_EQ(d(E::tick(110)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawn_failed(120, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(320));  // 200
    EXPECT_EQ(d(E::tick(320)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawn_failed(330, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(680));  // 350, capped
    EXPECT_EQ(d(E::tick(680)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawn_failed(700, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1050));  // still 350
    EXPECT_EQ(d(E::tick(1050)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(1060, 0)), effects{});
    EXPECT_EQ(d(E::died(1070, 0)), (effects{"retire slot=0 reason=died"}));
    EXPECT_EQ(d(E::retired(1080, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawn_failed(1090, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(1190));  // back to 100
    EXPECT_EQ(d.machine().counters().spawn_failures, 5u);
}

TYPED_TEST(behaviour, spawn_backoff_stays_at_its_cap_once_the_doubling_overflows) {
    auto c = this->slots(1, 1);
    c.spawn_backoff_initial = 1;
    c.spawn_backoff_max = 1000;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    core::nanos now = 0;
    for (std::uint64_t failures = 1; failures <= 70; ++failures) {  // 2^(failures-1) overflows at 65
        EXPECT_EQ(d(E::spawn_failed(now, 0)), effects{});
        now += failures <= 10 ? core::nanos{1} << (failures - 1) : 1000;
        EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(now)) << failures;
        EXPECT_EQ(d(E::tick(now)), (effects{"spawn slot=0"})) << failures;
    }
}

TYPED_TEST(behaviour, spawn_backoff_that_just_fits_in_64_bits_is_kept) {
    // Both spawns fail at 0: the second delay is (2^63-1) * 2 = 2^64-2, which still fits.
    auto c = this->slots(2, 2);
    c.spawn_backoff_initial = core::never >> 1;
    c.spawn_backoff_max = core::never;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawn_failed(0, 0)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(core::never >> 1));
    EXPECT_EQ(d(E::spawn_failed(0, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(core::never - 1));
    EXPECT_EQ(d(E::tick(core::never - 1)), (effects{"spawn slot=0", "spawn slot=1"}));
}

TYPED_TEST(behaviour, a_spawn_that_succeeds_during_a_backoff_ends_it) {
    auto c = this->slots(2, 0);
    c.spawn_backoff_initial = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::acquire(2, 2, 2)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawn_failed(3, 0)), effects{});  // no spawn for waiter 2 before 103
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(103));
    EXPECT_EQ(d(E::spawned(4, 1)), (effects{"grant waiter=1 slot=1 lease=1", "spawn slot=0"}));
}

TYPED_TEST(behaviour, next_deadline_leaves_out_times_that_would_do_no_work) {
    auto c = this->slots(2, 0);
    c.spawn_backoff_initial = 100;
    driver<TypeParam> d(c);
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::acquire(1, 1, 1)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(2, 0)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::release(3, 0, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // idle above min_slots, but no idle_timeout
    EXPECT_EQ(d(E::acquire(4, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::acquire(5, 3, 1)), (effects{"spawn slot=1"}));
    EXPECT_EQ(d(E::spawn_failed(6, 1)), effects{});
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(106));
    EXPECT_EQ(d(E::cancel(7, 3)), (effects{"reject waiter=3 reason=cancelled"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);  // the backoff's end would start no spawn
}

TYPED_TEST(behaviour, died_idle_slot_is_replaced) {
    driver<TypeParam> d(this->slots(2, 1));
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(1, 0)), effects{});
    EXPECT_EQ(d(E::died(2, 0)), (effects{"retire slot=0 reason=died", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(3, 1)), effects{});
    EXPECT_EQ(d(E::acquire(4, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
}

TYPED_TEST(behaviour, a_dead_slot_is_granted_again_only_after_a_new_spawn) {
    auto d = this->warm(this->slots(2, 2));
    EXPECT_EQ(d(E::died(2, 0)), (effects{"retire slot=0 reason=died"}));  // no empty slot to restore min_slots
    EXPECT_EQ(d(E::acquire(3, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(4, 2, 1)), effects{});
    EXPECT_EQ(d(E::retired(5, 0)), (effects{"spawn slot=0"}));
    EXPECT_EQ(d(E::spawned(6, 0)), (effects{"grant waiter=2 slot=0 lease=2"}));
}

TYPED_TEST(behaviour, leak_is_reported_once_per_lease) {
    auto c = this->slots(1, 1);
    c.leak_threshold = 50;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(10, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(60));
    EXPECT_EQ(d(E::tick(59)), effects{});
    EXPECT_EQ(d(E::tick(60)), (effects{"leak_suspected slot=0 lease=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
    EXPECT_EQ(d(E::tick(1000)), effects{});
    EXPECT_EQ(d(E::release(1001, 0, 1)), effects{});
    EXPECT_EQ(d(E::acquire(1002, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::tick(1052)), (effects{"leak_suspected slot=0 lease=2"}));
    EXPECT_EQ(d.machine().counters().leaks_suspected, 2u);
}

TYPED_TEST(behaviour, leaks_found_in_one_step_are_reported_by_slot_index) {
    auto c = this->slots(2, 2);
    c.leak_threshold = 50;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(10, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(20, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::tick(100)), (effects{"leak_suspected slot=0 lease=2", "leak_suspected slot=1 lease=1"}));
}

TYPED_TEST(behaviour, each_lease_is_reported_when_it_reaches_the_leak_threshold) {
    auto c = this->slots(2, 2);
    c.leak_threshold = 50;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(10, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::acquire(30, 2, 1)), (effects{"grant waiter=2 slot=0 lease=2"}));
    EXPECT_EQ(d(E::tick(60)), (effects{"leak_suspected slot=1 lease=1"}));
    EXPECT_EQ(d.machine().next_deadline(), std::optional<core::nanos>(80));
    EXPECT_EQ(d(E::tick(80)), (effects{"leak_suspected slot=0 lease=2"}));
}

TYPED_TEST(behaviour, shutdown_in_the_step_of_a_leak_report_retires_only_the_idle_slots) {
    auto c = this->slots(2, 2);
    c.leak_threshold = 50;
    auto d = this->warm(c);
    EXPECT_EQ(d(E::acquire(10, 1, 1)), (effects{"grant waiter=1 slot=1 lease=1"}));
    EXPECT_EQ(d(E::shutdown(60)), (effects{"leak_suspected slot=1 lease=1", "retire slot=0 reason=shutdown"}));
    EXPECT_EQ(d(E::release(61, 1, 1)), (effects{"retire slot=1 reason=shutdown"}));
}

TYPED_TEST(behaviour, shutdown_rejects_queued_and_later_waiters_and_retires_slots_as_they_come_back) {
    driver<TypeParam> d(this->slots(4, 2));
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1"}));
    EXPECT_EQ(d(E::spawned(1, 0)), effects{});
    EXPECT_EQ(d(E::acquire(2, 1, 1)), (effects{"grant waiter=1 slot=0 lease=1"}));
    EXPECT_EQ(d(E::acquire(3, 2, 1)), effects{});  // slot 1 is still spawning for it
    EXPECT_EQ(d(E::acquire(3, 3, 2)), (effects{"spawn slot=2"}));
    EXPECT_EQ(d(E::shutdown(4)), (effects{"reject waiter=2 reason=closed", "reject waiter=3 reason=closed"}));
    EXPECT_EQ(d(E::acquire(5, 4, 1)), (effects{"reject waiter=4 reason=closed"}));
    EXPECT_EQ(d(E::spawned(6, 1)), (effects{"retire slot=1 reason=shutdown"}));
    EXPECT_EQ(d(E::spawn_failed(6, 2)), effects{});
    EXPECT_EQ(d(E::retired(7, 1)), effects{});
    EXPECT_EQ(d(E::release(8, 0, 1)), (effects{"retire slot=0 reason=shutdown"}));
    EXPECT_EQ(d(E::retired(9, 0)), (effects{"closed"}));
    EXPECT_EQ(d(E::shutdown(10)), effects{});
    EXPECT_EQ(d(E::tick(11)), effects{});
    EXPECT_EQ(d(E::acquire(12, 5, 1)), (effects{"reject waiter=5 reason=closed"}));
    d.refused(E::start(13), event_error::already_started);
    EXPECT_EQ(d.machine().counters().rejections[static_cast<int>(core::reject_reason::closed)], 4u);
    EXPECT_EQ(d.machine().next_deadline(), std::nullopt);
}

TYPED_TEST(behaviour, shutdown_retires_idle_slots_by_slot_index_and_closes_once) {
    driver<TypeParam> d(this->slots(3, 3));
    EXPECT_EQ(d(E::start(0)), (effects{"spawn slot=0", "spawn slot=1", "spawn slot=2"}));
    EXPECT_EQ(d(E::spawned(1, 2)), effects{});
    EXPECT_EQ(d(E::spawned(2, 0)), effects{});
    EXPECT_EQ(d(E::spawned(3, 1)), effects{});
    EXPECT_EQ(d(E::shutdown(4)), (effects{"retire slot=0 reason=shutdown", "retire slot=1 reason=shutdown",
                                          "retire slot=2 reason=shutdown"}));
    EXPECT_EQ(d(E::retired(5, 1)), effects{});  // no min_slots restore while closing
    EXPECT_EQ(d(E::retired(5, 0)), effects{});
    EXPECT_EQ(d(E::retired(6, 2)), (effects{"closed"}));
    d.refused(E::retired(7, 2), event_error::not_retiring);
}

TYPED_TEST(behaviour, shutdown_of_an_empty_pool_closes_at_once) {
    driver<TypeParam> d(this->slots(2, 0));
    EXPECT_EQ(d(E::start(0)), effects{});
    EXPECT_EQ(d(E::shutdown(1)), (effects{"closed"}));
}

}  // namespace
}  // namespace fairpool::testing
