// The drain's clock (adapters/asio/include/fairpool/asio/detail/drain_clock.hpp): the
// interpolation between readings of a clock by a tick counter, driven with made-up
// counters and readings. Fixed cases for each rule (no rate yet, the rate measured over
// a millisecond, a reading at least once a millisecond, a counter behind the last
// reading, a reading with its counter reads too far apart, a rate no counter has), then
// a property: a counter at a random rate, read at random gaps, is never more than a
// nanosecond from the clock's true time, and the clock is read once a millisecond. Last,
// saturating_after (saturating_time.hpp): deadlines for a Clock of any tick.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "fairpool/asio/detail/drain_clock.hpp"
#include "fairpool/asio/detail/saturating_time.hpp"
#include "manual_clock.hpp"

namespace fairpool::testing {
namespace {

using core::never;
using detail::tick_interpolator;
constexpr std::uint64_t ms = tick_interpolator::anchor_interval_ns;

// A reading whose counter reads are at the same tick.
void read_at(tick_interpolator& t, std::uint64_t ticks, std::uint64_t ns) { t.reading(ticks, ns, ticks); }

// A counter at 3 ticks per nanosecond, started at `origin` ticks; a reading at 0 and one
// a millisecond later measure its rate.
tick_interpolator calibrated(std::uint64_t origin) {
    tick_interpolator t;
    read_at(t, origin, 0);
    read_at(t, origin + 3 * ms, ms);
    return t;
}

TEST(TickInterpolator, AsksForTheClockWhileNoRateIsKnown) {
    tick_interpolator t;
    EXPECT_EQ(t.interpolated(1000), never);
    read_at(t, 1000, 5);
    EXPECT_EQ(t.interpolated(1003), never);
    EXPECT_FALSE(t.rate_known());
}

TEST(TickInterpolator, ARateNeedsReadingsAMillisecondApart) {
    tick_interpolator t;
    read_at(t, 0, 0);
    read_at(t, 3 * ms - 3, ms - 1);
    EXPECT_FALSE(t.rate_known());
    EXPECT_EQ(t.interpolated(3 * ms), never);
    read_at(t, 3 * ms, ms);
    EXPECT_TRUE(t.rate_known());
}

TEST(TickInterpolator, InterpolatesFromTheLastReadingByTheMeasuredRate) {
    const tick_interpolator t = calibrated(7'000);
    const std::uint64_t last = 7'000 + 3 * ms;
    EXPECT_EQ(t.interpolated(last), ms);
    EXPECT_EQ(t.interpolated(last + 300), ms + 100);
    EXPECT_EQ(t.interpolated(last + 3 * ms - 3), 2 * ms - 1);
}

TEST(TickInterpolator, AsksForTheClockOnceTheLastReadingIsAMillisecondOld) {
    tick_interpolator t = calibrated(0);
    EXPECT_EQ(t.interpolated(6 * ms), never);
    // The clock says 2 ms + 40 ns there: the new reading, interpolated from.
    EXPECT_EQ(t.reading(6 * ms, 2 * ms + 40, 6 * ms), 2 * ms + 40);
    EXPECT_EQ(t.interpolated(6 * ms + 30), 2 * ms + 50);
}

TEST(TickInterpolator, AsksForTheClockForACounterBehindTheLastReading) {
    tick_interpolator t = calibrated(1'000'000);
    const std::uint64_t last = 1'000'000 + 3 * ms;
    EXPECT_EQ(t.interpolated(last - 5), never);  // another CPU's counter, behind
    // A reading there is the new anchor, and the old rate still interpolates.
    read_at(t, last - 5, ms + 2);
    EXPECT_EQ(t.interpolated(last + 295), ms + 2 + 100);
}

TEST(TickInterpolator, AReadingStandsAtItsCounterReadsMidpoint) {
    tick_interpolator t = calibrated(0);
    t.reading(6 * ms - 60, 2 * ms, 6 * ms + 60);
    EXPECT_EQ(t.interpolated(6 * ms + 30), 2 * ms + 10);
}

TEST(TickInterpolator, IgnoresAReadingWithItsCounterReadsTooFarApart) {
    tick_interpolator t = calibrated(0);
    // Preempted between its counter reads: neither the anchor nor the rate moves.
    const std::uint64_t far = tick_interpolator::max_read_ticks + 1;
    EXPECT_EQ(t.reading(3 * ms + 300, 5 * ms, 3 * ms + 300 + far), 5 * ms);
    EXPECT_EQ(t.interpolated(3 * ms + 300), ms + 100);
    // Nor does one whose second read is on a CPU whose counter is behind (a wrap).
    t.reading(3 * ms + 300, 5 * ms, 3 * ms + 299);
    EXPECT_EQ(t.interpolated(3 * ms + 300), ms + 100);
}

TEST(TickInterpolator, MeasuresTheRateFromABaseUpToASecondOld) {
    tick_interpolator t;
    read_at(t, 0, 0);
    read_at(t, 3'300'000, ms);  // 10% slow by the rate to come
    // Half a second on, the rate is measured from the first reading: 3 ticks per ns.
    read_at(t, 1'500'000'000, 500'000'000);
    EXPECT_EQ(t.interpolated(1'500'000'000 + 600'000), 500'000'000 + 200'000);
    // A second from the base, the base moves up to the newest reading: from there, 4
    // ticks per ns a millisecond later.
    read_at(t, 3'000'000'000, 1'000'000'000);
    read_at(t, 3'004'000'000, 1'000'000'000 + ms);
    EXPECT_EQ(t.interpolated(3'004'000'000 + 400), 1'000'000'000 + ms + 100);
}

TEST(TickInterpolator, KnowsNoRateThatNoCounterHas) {
    tick_interpolator fast;  // 1,000 ticks per nanosecond: 1 THz
    read_at(fast, 0, 0);
    read_at(fast, 1000 * ms, ms);
    EXPECT_FALSE(fast.rate_known());
    tick_interpolator slow;  // 1 tick per microsecond
    read_at(slow, 0, 0);
    read_at(slow, ms / 1000, ms);
    EXPECT_FALSE(slow.rate_known());
}

TEST(TickInterpolator, ARateOutOfRangeStopsTheInterpolation) {
    tick_interpolator t = calibrated(0);
    read_at(t, 3 * ms + 1, 1'000 * ms);  // a second more in one tick: no counter
    EXPECT_FALSE(t.rate_known());
    EXPECT_EQ(t.interpolated(3 * ms + 2), never);
}

// A counter at a random rate from 0.5 to 5 ticks per nanosecond, started anywhere,
// read at random gaps of whole microseconds (some past the millisecond: the counter's
// ticks are then whole too), each reading exact: never more than one nanosecond from
// the true time, and the clock is read at least once per millisecond of true time.
RC_GTEST_PROP(TickInterpolator, StaysWithinANanosecondOfTheClock, ()) {
    const auto milli_ticks_per_ns = *rc::gen::inRange<std::uint64_t>(500, 5001);
    const auto origin = *rc::gen::arbitrary<std::uint32_t>();
    const auto gaps = *rc::gen::container<std::vector<std::uint64_t>>(rc::gen::inRange<std::uint64_t>(1, 3'000));
    tick_interpolator t;
    std::uint64_t now = 0;
    std::uint64_t last_read = 0;
    for (const std::uint64_t gap : gaps) {
        now += gap * 1'000;
        const std::uint64_t ticks = origin + now * milli_ticks_per_ns / 1000;
        std::uint64_t got = t.interpolated(ticks);
        if (got == never) {
            got = t.reading(ticks, now, ticks);
            last_read = now;
        }
        RC_ASSERT(got + 1 >= now);
        RC_ASSERT(got <= now + 1);
        RC_ASSERT(now - last_read <= ms);
    }
}

// The pool's own: a manual clock is never interpolated, and is read exactly.
TEST(DrainClock, AnyClockButSteadyClockIsReadItself) {
    detail::drain_clock<manual_clock> c(manual_clock::now());
    EXPECT_FALSE(c.interpolates());
    manual_clock::advance(std::chrono::microseconds(7));
    EXPECT_EQ(c.stamp(), 0U);  // no counter read for a clock that is not interpolated
    EXPECT_EQ(c.read(), 7'000U);
    EXPECT_EQ(c.read(c.stamp()), 7'000U);
    EXPECT_EQ(c.fresh(), 7'000U);
    EXPECT_EQ(c.exact(), 7'000U);
}

// steady_clock, interpolated where the machine's counter keeps time: 100,000 reads,
// each between what steady_clock says just before and just after it, give or take the
// interpolation's error (here: a generous 100 us, for a rate measured over the first
// millisecond of a busy VM). Every other read is at a stamp taken before it, as a drain
// takes one before it takes the actor; `before` is read before that stamp, so that a
// thread preempted between the stamp and the read still reads within its bounds.
TEST(DrainClock, SteadyClockReadsFollowTheSteadyClock) {
    const auto epoch = std::chrono::steady_clock::now();
    detail::drain_clock<std::chrono::steady_clock> c(epoch);
    const auto since_epoch = [&] {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch).count());
    };
    constexpr std::uint64_t slack = 100'000;
    for (int i = 0; i < 100'000; ++i) {
        const std::uint64_t before = since_epoch();
        const std::uint64_t stamp = c.stamp();
        const std::uint64_t got = i % 2 == 0 ? c.read() : c.read(stamp);
        const std::uint64_t after = since_epoch();
        ASSERT_LE(got, after + slack) << "read " << i;
        ASSERT_GE(got + slack, before) << "read " << i;
    }
    const std::uint64_t before = since_epoch();
    EXPECT_GE(c.fresh(), before);
}

template <class Period>
using time_point_of = std::chrono::time_point<manual_clock, std::chrono::duration<std::int64_t, Period>>;

// Ticks of nanoseconds: the sum, exactly, up to the last time point.
TEST(saturating_after, nanoseconds_add_exactly_and_stop_at_the_last_time_point) {
    using tp = time_point_of<std::nano>;
    using std::chrono::nanoseconds;
    const tp from(nanoseconds(1000));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(5)), tp(nanoseconds(1005)));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(0)), from);
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(-7)), from);
    EXPECT_EQ(detail::saturating_after(from, tp::max() - from - nanoseconds(1)), tp::max() - nanoseconds(1));
    EXPECT_EQ(detail::saturating_after(from, tp::max() - from), tp::max());
    EXPECT_EQ(detail::saturating_after(from, nanoseconds::max()), tp::max());
}

// Coarser ticks: rounded up to the next tick; nanoseconds::max() is far inside a
// millisecond clock's range; from before the epoch, the whole range is room.
TEST(saturating_after, milliseconds_round_up_and_hold_every_nanosecond_span) {
    using tp = time_point_of<std::milli>;
    using std::chrono::milliseconds, std::chrono::nanoseconds;
    const tp from(milliseconds(1'000'000'000));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(1)), from + milliseconds(1));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(1'000'000)), from + milliseconds(1));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(1'000'001)), from + milliseconds(2));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds::max()), from + milliseconds(9'223'372'036'855));
    EXPECT_EQ(detail::saturating_after(tp::max() - milliseconds(1), nanoseconds(999'999)), tp::max());
    EXPECT_EQ(detail::saturating_after(tp::max() - milliseconds(2), nanoseconds(1'000'000)),
              tp::max() - milliseconds(1));
    const tp before_epoch(milliseconds(-5));
    EXPECT_EQ(detail::saturating_after(before_epoch, nanoseconds::max()),
              before_epoch + milliseconds(9'223'372'036'855));
}

// Finer ticks (picoseconds): a span past the clock's range saturates instead of
// overflowing in its conversion to ticks.
TEST(saturating_after, picoseconds_saturate_before_their_conversion_overflows) {
    using tp = time_point_of<std::pico>;
    using picoseconds = tp::duration;
    using std::chrono::nanoseconds;
    const tp from(picoseconds(0));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(1)), tp(picoseconds(1000)));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(1'000'000'000'000'000)),
              tp(picoseconds(1'000'000'000'000'000'000)));
    EXPECT_EQ(detail::saturating_after(from, nanoseconds::max()), tp::max());
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(9'223'372'036'854'776)), tp::max());
    EXPECT_EQ(detail::saturating_after(from, nanoseconds(9'223'372'036'854'775)),
              tp(picoseconds(9'223'372'036'854'775'000)));
}

}  // namespace
}  // namespace fairpool::testing
