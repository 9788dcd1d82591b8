#pragma once
// fairpool's errors (a boost::system error category) and the condition that groups
// the "shed load" ones.
//
//   auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(asio::use_awaitable));
//   if (ec == fairpool::condition::overloaded) return reply_503();   // saturated, busy, timeout
//   if (ec == boost::system::errc::timed_out) ...                    // timeout only
//
// An acquire or close cancelled through its cancellation slot completes with
// boost::asio::error::operation_aborted, as every Asio operation does: fairpool has no
// code of its own for it. docs/reference/errors.md has the table: each code, when it
// comes, whether to retry, and the HTTP status a server would answer with.
#include <boost/system/error_code.hpp>
#include <type_traits>

namespace fairpool {

enum class error {
    saturated = 1,  // the queue was full (max_waiters or max_waiters_per_handle): nothing queued
    timeout,        // an acquire's deadline passed (a try-acquire found nothing idle), or
                    // an async_close's deadline passed with work still out
    deregistered,   // the acquire's handle was destroyed or reset while it waited
    closed,         // the pool is shutting down or closed
    busy,           // the mailbox was full: nothing was queued, try again later
    not_recording,  // dump_recording on a pool without pool_options::recording
    bad_size,       // pool.resize: max_slots not in 0..slot_capacity, or min_slots above it
};

// What a caller tests for rather than a code.
enum class condition {
    // The pool sheds load: saturated, busy, or an acquire's timeout. Retry later, or
    // answer "unavailable" (HTTP 503).
    overloaded = 1,
};

[[nodiscard]] const boost::system::error_category& category() noexcept;
[[nodiscard]] const boost::system::error_category& condition_category() noexcept;

[[nodiscard]] inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), category()};
}
[[nodiscard]] inline boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

}  // namespace fairpool

namespace boost::system {
template <>
struct is_error_code_enum<fairpool::error> : std::true_type {};
template <>
struct is_error_condition_enum<fairpool::condition> : std::true_type {};
}  // namespace boost::system
