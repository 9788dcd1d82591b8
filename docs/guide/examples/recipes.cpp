// HTTP status mapping: what a server answers for each way a request's acquire, or the
// work on its lease, can end. The backend is in memory; each request prints one line.
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct connection {};
using tenant = fairpool::handle<connection>;

// [status]
// The status for an acquire's error (docs/reference/errors.md has the whole table).
unsigned status_for(boost::system::error_code ec) {
    if (ec == fairpool::condition::overloaded) return 503;  // saturated, busy, timeout: shed load
    if (ec == fairpool::error::closed) return 503;          // draining: retry another instance
    if (ec == asio::error::operation_aborted) return 499;   // cancelled: the client went away
    return 500;                                             // deregistered: our own bug
}
// [/status]

// [request]
// One request: a connection within `wait`, then a query (here a timer of `query` long)
// that must answer within 20 ms.
asio::awaitable<unsigned> request(tenant& t, std::chrono::milliseconds wait,
                                  std::chrono::milliseconds query) {
    auto [ec, lease] = co_await t.async_acquire(wait, use_tuple);
    if (ec) co_return status_for(ec);
    const auto ex = co_await asio::this_coro::executor;
    asio::steady_timer reply(ex, query), deadline(ex, 20ms);
    auto guard = lease.in_flight();  // dirty unless done(): the query may still be running
    auto first = co_await (reply.async_wait(use_tuple) || deadline.async_wait(use_tuple));
    if (first.index() == 1) co_return 504;  // too slow: its connection is closed, not reused
    guard.done();
    co_return 200;
}
// [/request]

void show(const char* what, unsigned status) { std::printf("%-34s %u\n", what, status); }

int main() {
    asio::io_context io;
    auto connect = []() -> asio::awaitable<connection> { co_return connection{}; };
    fairpool::pool<connection> pool(io.get_executor(), {.max_slots = 1, .max_waiters = 1}, connect);
    tenant t = pool.make_handle();
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        show("GET /a", co_await request(t, 100ms, 1ms));
        auto held = co_await t.async_acquire(asio::use_awaitable);  // the only connection
        show("GET /b (none free in time)", co_await request(t, 5ms, 1ms));

        asio::cancellation_signal client_gone;  // the client disconnects while it waits
        asio::post(io, [&] { client_gone.emit(asio::cancellation_type::terminal); });
        auto [ec, none] =
            co_await t.async_acquire(asio::bind_cancellation_slot(client_gone.slot(), use_tuple));
        show("GET /c (client gone)", status_for(ec));

        const auto refused = [&]() -> asio::awaitable<unsigned> {  // the queue holds one
            const unsigned status = co_await request(t, 100ms, 1ms);
            held.release();  // now the queued request gets the connection
            co_return status;
        };
        auto [queued, full] = co_await (request(t, 100ms, 1ms) && refused());
        show("GET /d (queued)", queued);
        show("GET /e (queue full)", full);

        show("GET /f (slow query)", co_await request(t, 100ms, 50ms));
        co_await pool.async_close(asio::use_awaitable);
        show("GET /g (pool closed)", co_await request(t, 100ms, 1ms));
        std::printf("connections retired dirty: %llu\n",
                    static_cast<unsigned long long>(pool.stats().retired_dirty));
    }, asio::detached);
    io.run();
}
