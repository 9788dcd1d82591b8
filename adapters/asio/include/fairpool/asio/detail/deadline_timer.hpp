#pragma once
// The pool's one deadline timer: after each drain it is armed at the scheduler's next
// deadline if that comes before the one armed (or none is), and disarmed once there is
// none; its expiry is a command in the mailbox like any other (command_kind::tick), so
// nothing but a drain touches the core. A deadline that moves later (the waiter due
// first was granted) leaves the timer as it is: it fires early, the drain finds nothing
// due and arms it again at the deadline then in force. So a queue whose waiters all
// have deadlines (the default acquire_timeout) costs no timer operation per waiter.
// Touched only by the drain holding the actor.
#include <boost/asio/basic_waitable_timer.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "fairpool/asio/detail/saturating_time.hpp"
#include "fairpool/core/scheduler.hpp"

namespace fairpool::detail {

template <class Clock, class WaitTraits>
class deadline_timer {
public:
    using timer_type = boost::asio::basic_waitable_timer<Clock, WaitTraits>;
    using time_point = typename Clock::time_point;

    // `epoch`: the Clock's time at the scheduler's time 0.
    deadline_timer(typename timer_type::executor_type ex, time_point epoch) : executor_(std::move(ex)), epoch_(epoch) {}

    // After a drain: what the timer must be armed at now (core.next_deadline() if it
    // comes before the one armed, or none once there is none or the pool closed);
    // nullopt if it stays as it is.
    [[nodiscard]] std::optional<std::optional<core::nanos>> change(const core::scheduler& core, bool closed) const {
        if (closed || core.surely_no_deadline()) {
            if (armed_) return std::optional<core::nanos>{};
            return std::nullopt;
        }
        // Armed no later than anything can be due: it stays, and the exact deadline (a
        // walk over the time-driven work) is not even asked for.
        if (armed_ && *armed_ <= core.deadline_lower_bound()) return std::nullopt;
        const std::optional<core::nanos> deadline = core.next_deadline();
        if (!deadline) {
            if (armed_) return deadline;
            return std::nullopt;
        }
        if (!armed_ || *deadline < *armed_) return deadline;
        return std::nullopt;
    }

    // Armed at `deadline`, or disarmed. `on_expiry()` makes the wait's handler.
    template <class MakeHandler>
    void arm(std::optional<core::nanos> deadline, MakeHandler&& on_expiry) {
        armed_ = deadline;
        if (!deadline) {
            if (timer_) timer_->cancel();
            return;
        }
        // Made on first use: a pool whose waiters never have a deadline has no timer.
        if (!timer_) timer_.emplace(executor_);
        timer_->expires_at(time_of(*deadline));
        timer_->async_wait(on_expiry());
    }

    // The Clock's time `deadline` nanoseconds after the epoch, or its last time point if
    // that is past the Clock's range (an acquire's timeout of nanoseconds::max(), say:
    // the sum would wrap around to a time long past, and the timer would fire at once,
    // again and again).
    [[nodiscard]] time_point time_of(core::nanos deadline) const noexcept {
        return saturating_after(epoch_, std::chrono::nanoseconds(static_cast<std::int64_t>(
                                            std::min<core::nanos>(deadline, std::numeric_limits<std::int64_t>::max()))));
    }

    // The drain serving an expiry, at `now`: whether the scheduler has work due (the
    // armed deadline was reached, and it was the scheduler's next one, not one since
    // moved later; a wait completes at or after its deadline, so it was reached, unless
    // the wait was for one since replaced: a completion already queued when the timer
    // was re-armed). Either way it is disarmed, and armed again after this drain.
    [[nodiscard]] bool expired(const core::scheduler& core, core::nanos now) noexcept {
        const bool reached = armed_ && now >= *armed_;
        armed_.reset();
        if (!reached) return false;
        const std::optional<core::nanos> due = core.next_deadline();
        return due && *due <= now;
    }

    // The execution context shuts down: the timer goes now, while its service exists.
    void abandon() noexcept { timer_.reset(); armed_.reset(); }

private:
    typename timer_type::executor_type executor_;
    const time_point epoch_;
    std::optional<timer_type> timer_;
    std::optional<core::nanos> armed_;
};

}  // namespace fairpool::detail
