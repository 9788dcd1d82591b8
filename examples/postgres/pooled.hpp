#pragma once
// A fairpool::pool of PostgreSQL connections: the hooks (connect with the pool's
// application_name, check with SELECT 1, reset with DISCARD ALL, close after an
// interrupted statement has ended) and one statement run on a lease under a timeout.
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "canceller.hpp"
#include "connection.hpp"
#include "fairpool/asio/pool.hpp"

namespace pg {

using pool = fairpool::pool<connection>;
using handle = pool::handle_type;
using lease = pool::lease_type;

// The pool's hooks. `params` get application_name set to `application_name` (what
// pg_stat_activity shows for every connection of this pool); `cancels` must outlive the
// pool and every connection it made.
// The check hook: `SELECT 1` answers.
inline boost::asio::awaitable<bool> check_alive(connection& c) {
    if (!c.idle()) co_return false;
    (void)co_await c.query("SELECT 1");
    co_return true;
}

// The reset hook: `DISCARD ALL` drops the session's settings, temp tables and prepared
// statements (and fails inside a transaction left open, which it would refuse).
inline boost::asio::awaitable<bool> discard_session(connection& c) {
    if (!c.idle()) co_return false;
    (void)co_await c.query("DISCARD ALL");
    co_return true;
}

inline fairpool::resource_hooks<connection> hooks(parameters params, const std::string& application_name,
                                                  canceller& cancels) {
    std::erase_if(params, [](const auto& p) { return p.first == "application_name"; });
    params.emplace_back("application_name", application_name);
    return {
        .create = [params = std::move(params), &cancels] { return connection::connect(params, cancels); },
        .close = [](connection& c) { return c.close(); },
        .check = check_alive,
        .reset = discard_session,
    };
}

// One statement's outcome: rows, or why not. (Made by functions, not braced lists:
// g++ 12 miscompiles temporaries in a braced list inside a coroutine.)
struct outcome {
    result rows;
    std::string error;
    bool timed_out = false;
    [[nodiscard]] explicit operator bool() const noexcept { return rows != nullptr; }

    static outcome success(result r) {
        outcome o;
        o.rows = std::move(r);
        return o;
    }
    static outcome failure(std::string why, bool timed_out = false) {
        outcome o;
        o.error = std::move(why);
        o.timed_out = timed_out;
        return o;
    }
};

namespace detail {
// The statement as an outcome that never throws: the || operator waits for the first
// branch to *succeed*, so a statement that threw would count only when the timer ran out.
inline boost::asio::awaitable<outcome> attempt(connection& c, std::string sql, std::vector<std::string> params) {
    std::string why;
    try {
        result rows = co_await c.query(std::move(sql), std::move(params));
        co_return outcome::success(std::move(rows));
    } catch (const std::exception& e) {
        why = e.what();
    }
    co_return outcome::failure(std::move(why));
}
}  // namespace detail

// Runs one statement on the leased connection, giving up after `timeout`. The lease's
// in-flight guard leaves it dirty unless the statement finished with the connection fit
// for reuse: a timed-out (or cancelled) statement is cancelled on the server, and the
// pool closes that connection once the server has ended the statement and never grants
// it again; a failure that left the connection unusable is dirty too. A statement the
// server refused is not (the connection is fine).
inline boost::asio::awaitable<outcome> run(lease& l, std::string sql, std::vector<std::string> params,
                                           std::chrono::nanoseconds timeout) {
    using namespace boost::asio::experimental::awaitable_operators;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, timeout);
    auto guard = l.in_flight();
    auto raced = co_await (detail::attempt(*l, std::move(sql), std::move(params)) ||
                           timer.async_wait(boost::asio::use_awaitable));
    if (raced.index() == 1) co_return outcome::failure("statement timed out", true);
    outcome o = std::move(std::get<0>(raced));
    if (o || l->idle()) guard.done();
    co_return o;
}

}  // namespace pg
