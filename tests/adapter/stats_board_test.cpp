// The adapter's stats board (adapters/asio/include/fairpool/asio/detail/stats_board.hpp):
// what a reader gets is exactly what was last published, although the board stores only
// what may have moved (the rare counters only when the drain says one may have, the
// histogram's buckets that the scheduler says its grants landed in). Deterministic cases for each
// shortcut, then a property: random runs of counter changes that follow the core's
// rules (the rare counters only grow, each grant adds one to one bucket, gauges move
// either way), with a publish after a random number of them that says whether a rare
// counter moved since the last. And the bound on a reader: however the writer publishes,
// a read gets a whole publish, no older than the last one completed before it began,
// through the fallback (the writer serves a reader that asks) when the sequence lock
// keeps failing.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::testing {
namespace {

using core::stats;
using detail::stats_board;

// The counters as a scheduler keeps them, with the histogram's buckets its grants
// touched since the last publish (scheduler::take_touched_wait_buckets()).
struct counters {
    stats s;
    std::uint64_t touched = 0;

    void grant(core::nanos wait) {
        (wait == 0 ? s.grants_immediate : s.grants_after_wait) += 1;
        const int bucket = core::wait_bucket(wait);
        s.wait_histogram[static_cast<std::size_t>(bucket)] += 1;
        touched |= std::uint64_t{1} << std::min(bucket, 63);
    }
    void publish_to(stats_board& board, bool rare_moved) { board.publish(s, rare_moved, std::exchange(touched, 0)); }
};

TEST(StatsBoard, ReadsZeroBeforeAnyPublish) {
    const stats_board board;
    EXPECT_EQ(board.read(), stats{});
}

TEST(StatsBoard, AGaugeThatFallsIsPublishedWithNoRareCounterMoved) {
    stats_board board;
    stats s;
    s.slots[1] = 3;
    s.queued_waiters = 2;
    board.publish(s, false, 0);
    s.slots[1] = 1;
    s.queued_waiters = 0;
    s.acquires = 9;
    board.publish(s, false, 0);
    EXPECT_EQ(board.read(), s);
}

#ifndef NDEBUG
TEST(StatsBoardDeathTest, ARareCounterThatMovedUnannouncedStopsADebugBuild) {
    stats_board board;
    stats s;
    s.spawns = 1;
    EXPECT_DEATH(board.publish(s, false, 0), "same_as_board");
}

TEST(StatsBoardDeathTest, ABucketThatMovedUnannouncedStopsADebugBuild) {
    stats_board board;
    counters c;
    c.grant(1000);  // bucket 10
    EXPECT_DEATH(board.publish(c.s, true, std::uint64_t{1} << 9), "same_as_board");
}
#endif

TEST(StatsBoard, ARareCounterAloneIsPublished) {
    stats_board board;
    stats s;
    board.publish(s, true, 0);
    s.retirements[2] = 1;  // nothing else moved
    board.publish(s, true, 0);
    EXPECT_EQ(board.read(), s);
    s.resizes = 1;
    s.checks_failed = 4;
    board.publish(s, true, 0);
    EXPECT_EQ(board.read(), s);
}

TEST(StatsBoard, GrantsInTheFirstAndLastBucketsInOnePublishAreBothPublished) {
    stats_board board;
    counters c;
    c.grant(0);
    c.publish_to(board, true);
    c.grant(0);
    c.grant(~core::nanos{0});  // bucket 64
    c.grant(1000);
    c.publish_to(board, true);
    EXPECT_EQ(board.read(), c.s);
    EXPECT_EQ(board.read().wait_histogram[64], 1u);
}

// Bit 63 stands for buckets 63 and 64: a grant in either is published by it.
TEST(StatsBoard, BucketsSixtyThreeAndSixtyFourShareTheirBit) {
    stats_board board;
    counters c;
    c.grant(core::nanos{1} << 62);  // bucket 63
    EXPECT_EQ(c.touched, std::uint64_t{1} << 63);
    c.publish_to(board, true);
    EXPECT_EQ(board.read().wait_histogram[63], 1u);
    c.grant(~core::nanos{0});  // bucket 64
    EXPECT_EQ(c.touched, std::uint64_t{1} << 63);
    c.publish_to(board, true);
    EXPECT_EQ(board.read(), c.s);
    EXPECT_EQ(board.read().wait_histogram[64], 1u);
}

TEST(StatsBoard, APublishWithNothingChangedKeepsTheCounters) {
    stats_board board;
    counters c;
    c.grant(5);
    c.s.spawns = 2;
    c.publish_to(board, true);
    c.publish_to(board, true);
    EXPECT_EQ(board.read(), c.s);
}

TEST(StatsBoard, PublishAllStoresEveryWord) {
    stats_board board;
    stats s;
    s.wait_histogram[17] = 3;
    s.wait_histogram[64] = 1;
    s.spawns = 4;
    board.publish_all(s);
    EXPECT_EQ(board.read(), s);
}

// A reader on another thread never sees a torn publish: every copy it reads holds the
// relations each published state holds (the histogram counts the grants; acquires are
// the grants plus the queued waiters; a gauge and a rare counter moved with them).
TEST(StatsBoard, AReaderOnAnotherThreadSeesOnlyWholePublishes) {
    constexpr std::uint64_t publishes = 20'000;
    stats_board board;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        counters c;
        stats& s = c.s;
        std::atomic<std::uint64_t> other_work{0};
        for (std::uint64_t n = 1; n <= publishes; ++n) {
            c.grant(n % 3 == 0 ? 0 : n);
            s.queued_waiters = n % 5;
            s.acquires = s.grants_immediate + s.grants_after_wait + s.queued_waiters;
            s.slots[1] = n;
            s.retirements[0] = n / 2;
            c.publish_to(board, true);
            // The actor publishes once per drain, between other work: with it most reads
            // here succeed on the sequence lock, whose copies this test checks (back to
            // back publishes send most of them to the fallback: the test below).
            for (int k = 0; k < 500; ++k) other_work.fetch_add(1, std::memory_order_relaxed);
        }
        done.store(true, std::memory_order_release);
    });
    std::uint64_t reads = 0, torn = 0, last_seen = 0, went_back = 0;
    while (!done.load(std::memory_order_acquire)) {
        const stats r = board.read();
        ++reads;
        const std::uint64_t grants = r.grants_immediate + r.grants_after_wait;
        const std::uint64_t counted = std::accumulate(r.wait_histogram.begin(), r.wait_histogram.end(), std::uint64_t{0});
        if (counted != grants || r.acquires != grants + r.queued_waiters || r.slots[1] != grants ||
            r.retirements[0] != grants / 2)
            ++torn;
        if (r.slots[1] < last_seen) ++went_back;
        last_seen = r.slots[1];
    }
    writer.join();
    EXPECT_EQ(torn, 0u) << "of " << reads << " reads";
    EXPECT_EQ(went_back, 0u);
    EXPECT_EQ(board.read().slots[1], publishes);
}

// Every word of the stats set to `generation`: a copy that mixes two publishes shows it.
stats generation_stats(std::uint64_t generation) {
    std::array<std::uint64_t, sizeof(stats) / 8> words;
    words.fill(generation);
    stats s;
    std::memcpy(static_cast<void*>(&s), words.data(), sizeof s);
    return s;
}

// The generation every word of `s` holds; nullopt if they differ (a torn copy).
std::optional<std::uint64_t> generation_of(const stats& s) {
    std::array<std::uint64_t, sizeof(stats) / 8> words;
    std::memcpy(words.data(), &s, sizeof s);
    if (std::all_of(words.begin(), words.end(), [&](std::uint64_t w) { return w == words[0]; })) return words[0];
    return std::nullopt;
}

// Nobody publishes: an asking reader gets the last publish through the sequence lock and
// leaves its request outstanding; the next publish serves it, and reads go on.
TEST(StatsBoard, AnAskingReaderOfAnIdleBoardGetsTheLastPublish) {
    stats_board board;
    board.publish_all(generation_stats(7));
    EXPECT_EQ(board.read_by_asking(), generation_stats(7));
    EXPECT_EQ(board.read_by_asking(), generation_stats(7));  // finds the request outstanding
    board.publish_all(generation_stats(8));  // serves it
    EXPECT_EQ(board.read(), generation_stats(8));
    EXPECT_EQ(board.read_by_asking(), generation_stats(8));
}

// The bound on a reader (stats_board.hpp): whatever the writer does, a read gets a whole
// publish, no older than the last publish completed before the read began. The writer
// here publishes every word (all equal to the publish's generation) back to back, with no
// pause, and never stops while a read is under way: a read that could only succeed
// between two publishes would retry for as long as luck decides. Two readers at once
// alternate read() (the sequence lock, then the fallback), the fallback trying the
// sequence lock meanwhile (which can return before its request is served, leaving it
// outstanding for the next asker) and the fallback alone, which nothing but the writer's
// serve completes. Nothing is timed: a fallback the writer never served would hang the
// test until meson's timeout.
TEST(StatsBoard, ReadersGetWholeRecentPublishesFromAWriterThatNeverStops) {
    constexpr int reads_per_reader = 1'000;
    stats_board board;
    std::atomic<std::uint64_t> completed{0};  // the generation last published
    std::atomic<int> readers_left{2};
    std::thread writer([&] {
        for (std::uint64_t g = 1; readers_left.load(std::memory_order_acquire) > 0; ++g) {
            board.publish_all(generation_stats(g));
            completed.store(g, std::memory_order_release);
        }
    });
    struct tally {
        int torn = 0, stale = 0, went_back = 0;
        std::uint64_t last = 0;
    };
    const auto reader = [&](tally& t) {
        for (int i = 0; i < reads_per_reader; ++i) {
            const std::uint64_t floor = completed.load(std::memory_order_acquire);
            const stats r = i % 3 == 0 ? board.read() : board.read_by_asking(/*meanwhile_try_sequence=*/i % 3 == 1);
            const std::optional<std::uint64_t> g = generation_of(r);
            if (!g) {
                ++t.torn;
                continue;
            }
            if (*g < floor) ++t.stale;
            if (*g < t.last) ++t.went_back;
            t.last = *g;
        }
        readers_left.fetch_sub(1, std::memory_order_release);
    };
    tally a, b;
    std::thread other(reader, std::ref(b));
    reader(a);
    other.join();
    writer.join();
    for (const tally* t : {&a, &b}) {
        EXPECT_EQ(t->torn, 0);
        EXPECT_EQ(t->stale, 0);
        EXPECT_EQ(t->went_back, 0);
        EXPECT_GT(t->last, 0u);
    }
    EXPECT_EQ(generation_of(board.read()), completed.load());
}

// One change that the core's rules allow; true if it moved a rare counter.
bool change(counters& c) {
    stats& s = c.s;
    switch (*rc::gen::inRange(0, 5)) {
        case 0:
            c.grant(*rc::gen::element<core::nanos>(0, 1, 7, 100, 65'000, 1'000'000'000, core::nanos{1} << 62,
                                                   ~core::nanos{0}));
            break;
        case 1: s.acquires += 1; break;
        case 2: {  // a rare counter grows
            const auto i = *rc::gen::inRange<std::size_t>(0, s.retirements.size());
            switch (*rc::gen::inRange(0, 4)) {
                case 0: s.rejections[i % s.rejections.size()] += 1; break;
                case 1: s.retirements[i] += 1; break;
                case 2: s.spawn_failures += 1; break;
                default: s.resizes += 1; break;
            }
            return true;
        }
        case 3: s.slots[*rc::gen::inRange<std::size_t>(0, s.slots.size())] = *rc::gen::inRange<std::uint64_t>(0, 9); break;
        default:
            s.queued_waiters = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.active_handles = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.active_weight = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.waiters_behind_cap = *rc::gen::inRange<std::uint64_t>(0, 9);
            s.handles_at_cap = *rc::gen::inRange<std::uint64_t>(0, 9);
            break;
    }
    return false;
}

RC_GTEST_PROP(StatsBoard, EveryReadIsTheLastPublish, ()) {
    stats_board board;
    counters c;
    const int publishes = *rc::gen::inRange(1, 40);
    for (int p = 0; p < publishes; ++p) {
        const int changes = *rc::gen::inRange(0, 6);
        bool rare_moved = false;
        for (int k = 0; k < changes; ++k) rare_moved |= change(c);
        // Told of a move that did not happen (a rare counter, a bucket), the board must
        // still be exact.
        const std::uint64_t extra_buckets = *rc::gen::arbitrary<bool>() ? *rc::gen::arbitrary<std::uint64_t>() : 0;
        board.publish(c.s, rare_moved || *rc::gen::arbitrary<bool>(), std::exchange(c.touched, 0) | extra_buckets);
        RC_ASSERT(board.read() == c.s);
    }
}

}  // namespace
}  // namespace fairpool::testing
