#pragma once
// A time point a span after another, saturating at the last time point of its clock,
// for any Clock: ticks of nanoseconds, finer or coarser. Converting a Clock's whole
// range into nanoseconds would overflow for a coarser clock (milliseconds: 2^63 ms is
// far more than 2^63 ns), so the range is compared in the coarser of the two units.
#include <chrono>
#include <ratio>

namespace fairpool::detail {

// `from + after`, rounded up to a tick of the time point's duration, or
// TimePoint::max() if that lies past it; `from` itself when `after` is not positive.
template <class TimePoint>
[[nodiscard]] TimePoint saturating_after(TimePoint from, std::chrono::nanoseconds after) noexcept {
    using duration = typename TimePoint::duration;
    if (after <= std::chrono::nanoseconds::zero()) return from;
    // The room before the last time point; from before the epoch, the duration's whole
    // range at least.
    const duration room = from.time_since_epoch() < duration::zero() ? duration::max() : TimePoint::max() - from;
    if constexpr (std::ratio_less_v<typename duration::period, std::nano>) {
        // Ticks finer than nanoseconds: the room converts to nanoseconds (a division),
        // and `after` to ticks only once it is known to fit.
        if (after > std::chrono::duration_cast<std::chrono::nanoseconds>(room)) return TimePoint::max();
        return from + std::chrono::duration_cast<duration>(after);
    } else {
        // Nanoseconds or coarser: `after` converts to ticks (a division).
        const duration ticks = std::chrono::ceil<duration>(after);
        if (ticks >= room) return TimePoint::max();
        return from + ticks;
    }
}

}  // namespace fairpool::detail
