#pragma once
// The drain's clock: the scheduler's nanoseconds since the pool's creation, read once
// per drain.
//
// Reading std::chrono::steady_clock costs ~32 ns on an AMD KVM guest and ~17 ns on an
// Intel one (the vDSO's clock arithmetic), against ~12 and ~7.5 ns for the CPU's
// time-stamp counter, and an uncontended
// round trip reads it twice. So where the kernel keeps its own time by that counter
// (x86-64, an invariant TSC, clocksource "tsc": synchronized across CPUs, or Linux
// would not use it), steady_clock is read at most once per millisecond of drains,
// and a read in between is the last reading plus the ticks since, scaled by the rate
// measured between readings (tick_interpolator). Such a read is within the rate's
// error over one millisecond of steady_clock (nanoseconds once the rate is measured
// over a second, at most a few microseconds in the pool's first second); a counter
// behind the last reading (another CPU's) reads steady_clock instead.
// The counter is read just before the drain takes the actor (stamp()): read after the
// atomic step that takes it, it would wait for that step. The drain keeps the maximum
// of what it read, so the scheduler's time never goes back. A drain that serves a timer's expiry reads steady_clock itself (fresh()): the
// timer fired at or after its deadline by steady_clock, and the core must see so.
//
// With any other Clock (a test's manual clock, a user's), or where the counter does
// not keep time, every read is Clock::now().
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define FAIRPOOL_HAS_TSC 1
#else
#define FAIRPOOL_HAS_TSC 0
#endif

#include "fairpool/core/event.hpp"

namespace fairpool::detail {

// Interpolation between readings of a clock by a tick counter. Arithmetic on what it
// is given only (counter values and readings), so a test drives it with made-up numbers.
//
// A reading is the clock read between two reads of the counter; it stands at their
// midpoint, and one whose reads are more than max_read_ticks apart (the thread was
// preempted or moved in between) is not used at all. The rate is measured from a base
// reading at least anchor_interval_ns old, moved up to the newest reading once it is
// rebase_interval_ns old: the longer the span, the smaller the error of the two
// readings' positions in it, and the base follows the clock's slewing.
class tick_interpolator {
public:
    // The clock is read at least this often, and a rate is measured over at least this.
    static constexpr std::uint64_t anchor_interval_ns = 1'000'000;
    static constexpr std::uint64_t rebase_interval_ns = 1'000'000'000;
    static constexpr std::uint64_t max_read_ticks = 4096;

    // The clock's nanoseconds at `ticks`: the last reading plus the ticks since, by the
    // measured rate; core::never when the clock must be read instead (no rate known
    // yet, the last reading a millisecond old, or a counter behind it: another CPU's).
    [[nodiscard]] core::nanos interpolated(std::uint64_t ticks) const noexcept {
        const std::uint64_t since = ticks - anchor_ticks_;  // a counter behind wraps
        if (since >= anchor_span_ticks_) return core::never;
        return anchor_ns_ + ((since * ns_per_tick_q32_ + half) >> 32);  // < 2^53: no overflow
    }

    // A reading of the clock, `ns`, between counter values `before` and `after`;
    // returns `ns`.
    core::nanos reading(std::uint64_t before, core::nanos ns, std::uint64_t after) noexcept {
        if (after - before > max_read_ticks) return ns;  // unusable (a wrap included)
        const std::uint64_t ticks = before + (after - before) / 2;
        anchor_ticks_ = ticks;
        anchor_ns_ = ns;
        if (!based_ || ticks <= base_ticks_ || ns <= base_ns_) {
            rebase(ticks, ns);
        } else if (ns - base_ns_ >= anchor_interval_ns) {
            measure(static_cast<double>(ns - base_ns_) / static_cast<double>(ticks - base_ticks_));
            if (ns - base_ns_ >= rebase_interval_ns) rebase(ticks, ns);
        }
        return ns;
    }

    [[nodiscard]] bool rate_known() const noexcept { return anchor_span_ticks_ != 0; }

private:
    // 10 MHz to 100 GHz: anything else is no counter that keeps time.
    static constexpr double min_ns_per_tick = 0.01;
    static constexpr double max_ns_per_tick = 100.0;
    static constexpr std::uint64_t half = std::uint64_t{1} << 31;  // rounds to the nearest

    void measure(double ns_per_tick) noexcept {
        if (ns_per_tick < min_ns_per_tick || ns_per_tick > max_ns_per_tick) {
            ns_per_tick_q32_ = 0;
            anchor_span_ticks_ = 0;
            return;
        }
        ns_per_tick_q32_ = static_cast<std::uint64_t>(std::llround(ns_per_tick * 4294967296.0));
        anchor_span_ticks_ = static_cast<std::uint64_t>(static_cast<double>(anchor_interval_ns) / ns_per_tick);
    }

    void rebase(std::uint64_t ticks, core::nanos ns) noexcept {
        based_ = true;
        base_ticks_ = ticks;
        base_ns_ = ns;
    }

    std::uint64_t anchor_ticks_ = 0;
    core::nanos anchor_ns_ = 0;
    std::uint64_t anchor_span_ticks_ = 0;  // 0 while no rate is known: every read reads
    std::uint64_t ns_per_tick_q32_ = 0;    // nanoseconds per tick, times 2^32
    bool based_ = false;
    std::uint64_t base_ticks_ = 0;
    core::nanos base_ns_ = 0;
};

// Whether the time-stamp counter keeps time on this machine: invariant (constant rate,
// running in every power state) and the kernel's own clocksource.
inline bool tsc_keeps_time() noexcept {
#if FAIRPOOL_HAS_TSC
    static const bool keeps = [] {
        unsigned eax = 0;
        unsigned ebx = 0;
        unsigned ecx = 0;
        unsigned edx = 0;  // bit 8: the invariant TSC
        if (__get_cpuid(0x80000007U, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1U << 8)) == 0) return false;
        try {
            std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
            std::string source;
            return static_cast<bool>(f >> source) && source == "tsc";
        } catch (...) {
            return false;
        }
    }();
    return keeps;
#else
    return false;
#endif
}

template <class Clock>
class drain_clock {
public:
    using time_point = typename Clock::time_point;

    explicit drain_clock(time_point epoch) noexcept
        : epoch_(epoch), interpolate_(std::is_same_v<Clock, std::chrono::steady_clock> && tsc_keeps_time()) {}

    // Nanoseconds since the epoch, by Clock itself: any thread.
    [[nodiscard]] core::nanos exact() const noexcept {
        return static_cast<core::nanos>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count());
    }

    // The counter, read by a thread about to take the actor, before it tries to (any
    // thread; 0 where the clock is not interpolated). Read after the atomic step that
    // takes the actor, the counter waits for that step to complete; read before it, the
    // two overlap: ~20 ns of a round trip's two drains on an Intel KVM guest.
    [[nodiscard]] std::uint64_t stamp() const noexcept {
#if FAIRPOOL_HAS_TSC
        if (interpolate_) return __rdtsc();
#endif
        return 0;
    }

    // The drain's read (only while holding the actor): interpolated where it can be,
    // at the counter's value `stamp()` gave just before the actor was taken.
    [[nodiscard]] core::nanos read(std::uint64_t stamp) noexcept { return sample(false, stamp); }
    // The same, at the counter's value now.
    [[nodiscard]] core::nanos read() noexcept { return read(stamp()); }

    // The drain's read of Clock itself (only while holding the actor), taken as the
    // interpolation's new reading.
    [[nodiscard]] core::nanos fresh() noexcept { return sample(true, 0); }

    [[nodiscard]] bool interpolates() const noexcept { return interpolate_; }

private:
    // Interpolated at `stamp` unless `fresh` or the interpolator asks for the clock
    // (a stamp behind its last reading, another thread's, does); a clock read between
    // two counter reads becomes its new reading.
    [[nodiscard]] core::nanos sample(bool fresh, std::uint64_t stamp) noexcept {
#if FAIRPOOL_HAS_TSC
        if (interpolate_) {
            if (const core::nanos t = fresh ? core::never : interpolator_.interpolated(stamp); t != core::never)
                return t;
            const std::uint64_t before = __rdtsc();
            const core::nanos ns = exact();
            return interpolator_.reading(before, ns, __rdtsc());
        }
#endif
        static_cast<void>(fresh), static_cast<void>(stamp);
        return exact();
    }

    const time_point epoch_;
    const bool interpolate_;
    tick_interpolator interpolator_;
};

}  // namespace fairpool::detail
