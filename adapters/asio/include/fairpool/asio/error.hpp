#pragma once
// fairpool's errors as a boost::system error category.
//
// `cancelled` is equivalent to boost::system::errc::operation_canceled, like Asio's own
// operation_aborted: a caller may test either. An acquire cancelled through its
// cancellation slot completes with boost::asio::error::operation_aborted, as every Asio
// operation does.
#include <boost/system/error_code.hpp>

namespace fairpool {

enum class error {
    saturated = 1,  // max_waiters or max_waiters_per_handle reached
    timeout,        // the acquire's deadline passed (or deadline <= now and nothing idle)
    cancelled,      // the waiter was cancelled before a grant
    deregistered,   // its handle was destroyed while it waited
    closed,         // the pool is shutting down or closed
    busy,           // the mailbox was full: nothing was queued, try again later
    timed_out,      // async_close's deadline passed with work still out
    not_recording,  // dump_recording on a pool without pool_options::recording
    bad_size,       // pool.resize: max_slots not in 1..slot_capacity, or min_slots above it
};

[[nodiscard]] const boost::system::error_category& category() noexcept;

[[nodiscard]] inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), category()};
}

}  // namespace fairpool

namespace boost::system {
template <>
struct is_error_code_enum<fairpool::error> : std::true_type {};
}  // namespace boost::system
