// The adapter's stats board (adapters/asio/include/fairpool/asio/detail/stats_board.hpp):
// what a reader gets is exactly what was last published, although the board stores only
// what it judges moved (the rare counters when their sum grew, the histogram's buckets
// that the new grants landed in). Deterministic cases for each shortcut, then a
// property: random runs of counter changes that follow the core's rules (the rare
// counters only grow, each grant adds one to one bucket, gauges move either way), with a
// publish after a random number of them.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <cstdint>

#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::testing {
namespace {

using core::stats;
using detail::stats_board;

void grant(stats& s, core::nanos wait) {
    (wait == 0 ? s.grants_immediate : s.grants_after_wait) += 1;
    s.wait_histogram[static_cast<std::size_t>(core::wait_bucket(wait))] += 1;
}

TEST(StatsBoard, ReadsZeroBeforeAnyPublish) {
    const stats_board board;
    EXPECT_EQ(board.read(), stats{});
}

TEST(StatsBoard, AGaugeThatFallsIsPublished) {
    stats_board board;
    stats s;
    s.slots[1] = 3;
    s.queued_waiters = 2;
    board.publish(s);
    s.slots[1] = 1;
    s.queued_waiters = 0;
    board.publish(s);
    EXPECT_EQ(board.read(), s);
}

TEST(StatsBoard, ARareCounterAloneIsPublished) {
    stats_board board;
    stats s;
    board.publish(s);
    s.retirements[2] = 1;  // nothing else moved
    board.publish(s);
    EXPECT_EQ(board.read(), s);
    s.resizes = 1;
    s.checks_failed = 4;
    board.publish(s);
    EXPECT_EQ(board.read(), s);
}

TEST(StatsBoard, GrantsInTheFirstAndLastBucketsInOnePublishAreBothPublished) {
    stats_board board;
    stats s;
    grant(s, 0);
    board.publish(s);
    grant(s, 0);
    grant(s, ~core::nanos{0});  // bucket 64
    grant(s, 1000);
    board.publish(s);
    EXPECT_EQ(board.read(), s);
    EXPECT_EQ(board.read().wait_histogram[64], 1u);
}

TEST(StatsBoard, APublishWithNothingChangedKeepsTheCounters) {
    stats_board board;
    stats s;
    grant(s, 5);
    s.spawns = 2;
    board.publish(s);
    board.publish(s);
    EXPECT_EQ(board.read(), s);
}

// One change that the core's rules allow.
void change(stats& s) {
    switch (*rc::gen::inRange(0, 5)) {
        case 0: grant(s, *rc::gen::element<core::nanos>(0, 1, 7, 100, 65'000, 1'000'000'000, ~core::nanos{0})); break;
        case 1: s.acquires += 1; break;
        case 2: {  // a rare counter grows
            const auto i = *rc::gen::inRange<std::size_t>(0, s.retirements.size());
            switch (*rc::gen::inRange(0, 4)) {
                case 0: s.rejections[i % s.rejections.size()] += 1; break;
                case 1: s.retirements[i] += 1; break;
                case 2: s.spawn_failures += 1; break;
                default: s.resizes += 1; break;
            }
            break;
        }
        case 3: s.slots[*rc::gen::inRange<std::size_t>(0, s.slots.size())] = *rc::gen::inRange<std::uint64_t>(0, 9); break;
        default:
            s.queued_waiters = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.waiters_behind_cap = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.handles_at_cap = *rc::gen::inRange<std::uint64_t>(0, 9);
            break;
    }
}

RC_GTEST_PROP(StatsBoard, EveryReadIsTheLastPublish, ()) {
    stats_board board;
    stats s;
    const int publishes = *rc::gen::inRange(1, 40);
    for (int p = 0; p < publishes; ++p) {
        const int changes = *rc::gen::inRange(0, 6);
        for (int c = 0; c < changes; ++c) change(s);
        board.publish(s);
        RC_ASSERT(board.read() == s);
    }
}

}  // namespace
}  // namespace fairpool::testing
