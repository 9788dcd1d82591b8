// The scheduler allocates nothing after construction: a global operator new counter
// stays at zero across one million random steps (and across the copies the property
// test relies on being allocation-free too, once made).
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
