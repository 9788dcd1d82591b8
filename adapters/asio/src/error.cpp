#include "fairpool/asio/error.hpp"

#include <boost/system/errc.hpp>


namespace fairpool {

namespace {

class fairpool_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "fairpool"; }

    std::string message(int code) const override {
        switch (static_cast<error>(code)) {
            case error::saturated: return "too many waiters: the pool's queue is full";
            case error::timeout: return "the deadline passed (no resource became available, or the pool did not close)";
            case error::deregistered: return "the handle was destroyed while the acquire waited";
            case error::closed: return "the pool is closed";
            case error::busy: return "the pool's mailbox is full";
            case error::not_recording: return "the pool records nothing (pool_options::recording is not set)";
            case error::bad_size:
                return "bad pool size: max_slots must be 0..slot_capacity and min_slots at most max_slots";
        }
        return "unknown fairpool error";
    }

    boost::system::error_condition default_error_condition(int code) const noexcept override {
        switch (static_cast<error>(code)) {
            case error::timeout: return boost::system::errc::timed_out;
            case error::busy: return boost::system::errc::resource_unavailable_try_again;
            default: return {code, *this};
        }
    }
};

class fairpool_condition_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "fairpool.condition"; }

    std::string message(int value) const override {
        if (static_cast<condition>(value) == condition::overloaded)
            return "the pool is overloaded (its queue or mailbox is full, or the wait timed out)";
        return "unknown fairpool condition";
    }

    bool equivalent(const boost::system::error_code& code, int value) const noexcept override {
        if (static_cast<condition>(value) != condition::overloaded || code.category() != category()) return false;
        switch (static_cast<error>(code.value())) {
            case error::saturated:
            case error::busy:
            case error::timeout: return true;
            default: return false;
        }
    }
};

}  // namespace

const boost::system::error_category& category() noexcept {
    static const fairpool_category instance;
    return instance;
}

const boost::system::error_category& condition_category() noexcept {
    static const fairpool_condition_category instance;
    return instance;
}

}  // namespace fairpool
