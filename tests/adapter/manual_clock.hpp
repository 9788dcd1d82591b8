#pragma once
// A clock that only the test moves, for pools and timers whose time must not depend on
// how fast the machine runs: fairpool::pool<R, manual_clock, manual_wait_traits>.
//
// Asio's reactor decides when to look at a timer again with WaitTraits::to_wait_duration
// (the real time to wait). manual_wait_traits answers 0 for a timer the manual clock has
// reached and at most poll_interval of real time otherwise, so the reactor re-reads the
// manual clock at least that often and a timer fires within about a millisecond of real
// time once the test has advanced the clock past it. Real time only decides how soon
// that happens, never whether: before its expiry by the manual clock no timer fires,
// however long the test runs. (Boost.MySQL's pool tests advance a mock clock the same
// way; they pair it with a timer of their own instead of Asio's.)
//
// The time is process-wide (Asio calls the static now()), only ever moves forward, and
// is read and advanced through an atomic, so a timer on another thread sees it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ratio>

namespace fairpool::testing {

// Ticks of Period: nanoseconds (manual_clock) like the scheduler's, or coarser
// (manual_ms_clock), for the adapter's conversions between the two.
template <class Period>
struct basic_manual_clock {
    using rep = std::int64_t;
    using period = Period;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<basic_manual_clock>;
    static constexpr bool is_steady = true;  // it never goes back

    [[nodiscard]] static time_point now() noexcept { return time_point(duration(ticks().load(std::memory_order_acquire))); }

    // Moves the time forward by d (d >= 0).
    static void advance(duration d) noexcept {
        if (d > duration::zero()) ticks().fetch_add(d.count(), std::memory_order_acq_rel);
    }

private:
    static std::atomic<rep>& ticks() noexcept {
        static std::atomic<rep> t{1'000'000'000};  // an arbitrary start: nothing may assume 0
        return t;
    }
};

template <class Clock>
struct basic_manual_wait_traits {
    // The longest real time the reactor waits before it reads the manual clock again.
    static constexpr std::chrono::milliseconds poll_interval{1};

    static typename Clock::duration to_wait_duration(const typename Clock::duration& d) noexcept {
        if (d <= Clock::duration::zero()) return Clock::duration::zero();
        return d < poll_interval ? d : typename Clock::duration(poll_interval);
    }
    static typename Clock::duration to_wait_duration(const typename Clock::time_point& t) noexcept {
        return to_wait_duration(t - Clock::now());
    }
};

using manual_clock = basic_manual_clock<std::nano>;
using manual_wait_traits = basic_manual_wait_traits<manual_clock>;
using manual_ms_clock = basic_manual_clock<std::milli>;
using manual_ms_wait_traits = basic_manual_wait_traits<manual_ms_clock>;

}  // namespace fairpool::testing
