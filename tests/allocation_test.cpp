// The scheduler allocates nothing after construction: a global operator new counter
// stays at zero across one million random steps, across caps and resizes (and across
// the copies the property test relies on being allocation-free too, once made).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "support/event_generator.hpp"
#include "support/seeded_choices.hpp"

namespace {

std::atomic<std::uint64_t> allocations{0};

void count_allocation() noexcept { allocations.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

#include "support/counting_allocation.hpp"

namespace fairpool::testing {
namespace {

std::uint64_t steps_without_allocation(const core::config& c, std::uint64_t steps, std::uint64_t seed) {
    core::scheduler s(c, seed);
    event_generator events(c, steps);
    seeded_choices choices(seed);
    std::uint64_t effects = 0;
    const std::uint64_t before = allocations.load();
    for (std::uint64_t i = 0; i < steps; ++i) {
        const core::event e = events.next(s, choices);
        const core::step_result r = s.step(e);
        effects += r.effects.size();
        events.observe(e, r);
    }
    EXPECT_GT(effects, steps / 10) << "the events must actually drive the scheduler";
    EXPECT_GT(s.counters().grants_after_wait, 0u);
    return allocations.load() - before;
}

TEST(allocation, counter_sees_allocations) {
    const std::uint64_t before = allocations.load();
    core::scheduler s(core::config{});
    EXPECT_GT(allocations.load(), before);
}

TEST(allocation, one_million_random_steps_allocate_nothing) {
    core::config c;
    c.max_slots = 8;
    c.min_slots = 2;
    c.max_waiters = 64;
    c.max_waiters_per_handle = 16;
    c.acquire_timeout = 500;
    c.idle_timeout = 300;
    c.max_lifetime = 5000;
    c.max_uses = 20;
    c.spawn_backoff_initial = 10;
    c.spawn_backoff_max = 1000;
    c.leak_threshold = 400;
    EXPECT_EQ(steps_without_allocation(c, 1'000'000, 42), 0u);
}

TEST(allocation, fifo_policy_and_fifo_idle_order_allocate_nothing) {
    core::config c;
    c.max_slots = 3;
    c.max_waiters = 16;
    c.policy = core::fairness_policy::fifo;
    c.idle_order = core::idle_order::fifo;
    c.leak_threshold = 50;
    EXPECT_EQ(steps_without_allocation(c, 200'000, 7), 0u);
}

TEST(allocation, health_checks_resets_and_jitter_allocate_nothing) {
    core::config c;
    c.max_slots = 6;
    c.min_slots = 1;
    c.max_waiters = 32;
    c.idle_order = core::idle_order::fifo;  // the cursor over the idle order (decision 12)
    c.acquire_timeout = 600;
    c.idle_timeout = 400;
    c.max_lifetime = 5000;
    c.max_lifetime_jitter = 2000;
    c.jitter_seed = 99;
    c.check_after_idle = 40;
    c.keepalive_interval = 150;
    c.max_concurrent_checks = 2;
    c.reset_on_release = true;
    EXPECT_EQ(steps_without_allocation(c, 300'000, 11), 0u);
}

// Caps and resizes (issue 15): acquires with max_leases (the first starts the lease
// count mid-run when the config has no cap), handles at their cap with waiters behind
// it, resizes that grow into slot_capacity and shrink (retiring with reason resize).
struct caps_and_resizes {
    std::uint64_t allocations = 0, capped_acquires = 0, most_at_cap = 0, most_behind_cap = 0;
    core::stats counters;
};

caps_and_resizes caps_and_resizes_run(const core::config& c, std::uint64_t steps, std::uint64_t seed) {
    core::scheduler s(c, seed);
    event_generator events(c, steps);
    seeded_choices choices(seed);
    caps_and_resizes out;
    const std::uint64_t capacity = *c.resolved().slot_capacity;
    std::uint64_t waiter = std::uint64_t{1} << 40;  // above the generator's waiters
    const std::uint64_t before = allocations.load();
    for (std::uint64_t i = 0; i < steps; ++i) {
        core::event e = events.next(s, choices);
        if (i % 23 == 5 && e.now > 0) {
            const std::uint64_t max_slots = 1 + choices.pick(capacity);
            e = core::event::resize(e.now, max_slots, choices.pick(max_slots + 1));
        } else if (i % 7 == 3 && i > 1000) {  // leases are out by then
            e = core::event::acquire(e.now, waiter++, 1 + choices.pick(3), {}, {}, 1 + choices.pick(2));
        }
        const core::step_result r = s.step(e);
        if (r.ok() && e.kind == core::event_kind::acquire && e.max_leases().value_or(0) > 0) ++out.capped_acquires;
        out.most_at_cap = std::max(out.most_at_cap, s.counters().handles_at_cap);
        out.most_behind_cap = std::max(out.most_behind_cap, s.counters().waiters_behind_cap);
        events.observe(e, r);
    }
    out.allocations = allocations.load() - before;
    out.counters = s.counters();
    return out;
}

void expect_caps_and_resizes_exercised(const caps_and_resizes& run) {
    EXPECT_EQ(run.allocations, 0u);
    EXPECT_GT(run.capped_acquires, 1000u);
    EXPECT_GT(run.most_at_cap, 1u);
    EXPECT_GT(run.most_behind_cap, 1u);
    EXPECT_GT(run.counters.resizes, 1000u);
    EXPECT_GT(run.counters.retirements[static_cast<int>(core::retire_reason::resize)], 100u);
    EXPECT_GT(run.counters.grants_after_wait, 1000u);
}

TEST(allocation, caps_and_resizes_allocate_nothing_when_the_lease_count_starts_mid_run) {
    core::config c;
    c.max_slots = 4;
    c.slot_capacity = 10;
    c.min_slots = 1;
    c.max_waiters = 64;
    c.acquire_timeout = 500;
    c.idle_timeout = 300;
    c.leak_threshold = 400;
    expect_caps_and_resizes_exercised(caps_and_resizes_run(c, 200'000, 23));
}

TEST(allocation, caps_and_resizes_allocate_nothing_with_a_config_cap_and_fifo) {
    core::config c;
    c.max_slots = 6;
    c.slot_capacity = 9;
    c.max_waiters = 64;
    c.max_leases_per_handle = 2;
    c.policy = core::fairness_policy::fifo;
    c.idle_order = core::idle_order::fifo;
    c.acquire_timeout = 500;
    c.check_after_idle = 40;
    c.reset_on_release = true;
    expect_caps_and_resizes_exercised(caps_and_resizes_run(c, 200'000, 29));
}

TEST(allocation, a_copied_scheduler_allocates_nothing_either) {
    core::config c;
    c.max_slots = 4;
    c.max_waiters = 32;
    core::scheduler original(c, 1);
    core::scheduler copy = original;
    event_generator events(c, 100'000);
    seeded_choices choices(3);
    const std::uint64_t before = allocations.load();
    for (int i = 0; i < 100'000; ++i) {
        const core::event e = events.next(copy, choices);
        events.observe(e, copy.step(e));
    }
    EXPECT_EQ(allocations.load() - before, 0u);
}

// Section 7.2: a snapshot into a preallocated buffer allocates nothing (the recorder
// takes one after a gap, on the actor), writes snapshot_size() records and never more
// than max_snapshot_records(config).
TEST(allocation, snapshots_into_a_preallocated_buffer_allocate_nothing) {
    core::config c;
    c.max_slots = 6;
    c.min_slots = 1;
    c.max_waiters = 32;
    c.max_waiters_per_handle = 12;
    c.acquire_timeout = 600;
    c.idle_timeout = 400;
    c.max_lifetime = 5000;
    c.max_lifetime_jitter = 2000;
    c.check_after_idle = 40;
    c.keepalive_interval = 150;
    c.reset_on_release = true;
    c.leak_threshold = 300;
    core::scheduler s(c, 5);
    const std::uint64_t capacity = core::max_snapshot_records(s.configuration());
    std::vector<core::snapshot_record> buffer(static_cast<std::size_t>(capacity));
    std::size_t written = 0;
    auto put = [&](const core::snapshot_record& r) {
        if (written < buffer.size()) buffer[written] = r;
        ++written;
    };
    event_generator events(c, 100'000);
    seeded_choices choices(17);
    std::size_t largest = 0;
    std::uint64_t snapshots = 0;
    const std::uint64_t before = allocations.load();
    for (int i = 0; i < 100'000; ++i) {
        const core::event e = events.next(s, choices);
        events.observe(e, s.step(e));
        if (i % 37 != 0) continue;
        written = 0;
        s.snapshot(put);
        ++snapshots;
        if (written != s.snapshot_size() || written > capacity) break;
        largest = std::max(largest, written);
    }
    EXPECT_EQ(allocations.load() - before, 0u);
    EXPECT_EQ(written, s.snapshot_size());
    EXPECT_LE(written, capacity);
    EXPECT_EQ(snapshots, 100'000u / 37 + 1) << "stopped early: a snapshot wrote more than snapshot_size() or capacity";
    EXPECT_GT(largest, 2 + c.max_slots) << "the snapshots must hold waiters and handles too";
}

}  // namespace
}  // namespace fairpool::testing
