#include "fairpool/asio/error.hpp"

#include <boost/system/errc.hpp>

#include "fairpool/asio/options.hpp"

namespace fairpool {

namespace {

class fairpool_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "fairpool"; }

    std::string message(int code) const override {
        switch (static_cast<error>(code)) {
            case error::saturated: return "too many waiters: the pool's queue is full";
            case error::timeout: return "no resource became available before the deadline";
            case error::cancelled: return "the acquire was cancelled";
            case error::deregistered: return "the handle was destroyed while the acquire waited";
            case error::closed: return "the pool is closed";
            case error::busy: return "the pool's mailbox is full";
            case error::timed_out: return "the pool did not close before the deadline";
            case error::not_recording: return "the pool records nothing (pool_options::recording is not set)";
            case error::bad_size:
                return "bad pool size: max_slots must be 1..slot_capacity and min_slots at most max_slots";
        }
        return "unknown fairpool error";
    }

    boost::system::error_condition default_error_condition(int code) const noexcept override {
        switch (static_cast<error>(code)) {
            case error::cancelled: return boost::system::errc::operation_canceled;
            case error::timeout:
            case error::timed_out: return boost::system::errc::timed_out;
            case error::busy: return boost::system::errc::resource_unavailable_try_again;
            default: return {code, *this};
        }
    }
};

}  // namespace

const boost::system::error_category& category() noexcept {
    static const fairpool_category instance;
    return instance;
}

std::optional<std::string> validate(const pool_options& o) {
    if (auto why = core::validate(o.scheduler)) return "scheduler." + *why;
    // The slot-event queue holds slot_capacity commands, and a Boost.Lockfree fixed-size
    // queue at most 65534 (mailbox.hpp).
    if (const std::uint64_t slots = *o.scheduler.resolved().slot_capacity; slots > max_adapter_slots)
        return "scheduler.slot_capacity: the Boost.Asio adapter holds at most " + std::to_string(max_adapter_slots) +
               " slots, got " + std::to_string(slots);
    if (o.mailbox_capacity < 1) return std::string("mailbox_capacity: must be at least 1");
    if (o.scheduler.max_waiters + o.mailbox_capacity > 32766)
        return "mailbox_capacity: max_waiters + mailbox_capacity is " +
               std::to_string(o.scheduler.max_waiters + o.mailbox_capacity) + ", above 32766";
    if (o.retire_grace.count() < 0) return std::string("retire_grace: must not be negative");
    if (o.check_timeout.count() <= 0) return std::string("check_timeout: must be positive");
    if (o.reset_timeout.count() <= 0) return std::string("reset_timeout: must be positive");
    if (o.create_timeout.count() < 0) return std::string("create_timeout: must not be negative");
    if (o.recording)
        if (auto why = validate(*o.recording)) return "recording." + *why;
    return std::nullopt;
}

std::optional<std::string> validate(const handle_options& o) {
    if (o.weight < 1 || o.weight > core::max_weight)
        return "weight: must be 1.." + std::to_string(core::max_weight) + ", got " + std::to_string(o.weight);
    return std::nullopt;
}

}  // namespace fairpool
