// Cancellation and dirty leases: a waiting acquire cancelled three ways, then the ways a
// lease goes back dirty (unwinding, its in-flight guard, mark_dirty) or clean.
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

struct connection {
    int id;
};

// A query on the connection that takes `time` (in memory: a timer).
asio::awaitable<void> query(connection&, std::chrono::steady_clock::duration time) {
    asio::steady_timer t(co_await asio::this_coro::executor, time);
    co_await t.async_wait(asio::use_awaitable);
}

int main() {
    asio::io_context io;
    int made = 0;
    fairpool::pool<connection> pool(io.get_executor(), {.max_slots = 1},
        [&]() -> asio::awaitable<connection> { co_return connection{++made}; });
    asio::cancellation_signal acquire_signal, spawn_signal, client_signal;  // one per operation
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto others = [&] { return asio::post(io, asio::use_awaitable); };  // let them run
        auto holder = co_await pool.async_acquire();  // the only slot: the acquires below wait
        // [race]
        asio::steady_timer deadline(io, 1ms);
        auto r = co_await (pool.async_acquire(asio::use_awaitable) ||
                           deadline.async_wait(asio::use_awaitable));
        std::printf("acquire || timer: %s\n", r.index() == 1 ? "the timer won" : "a lease");
        // [/race]
        // [slot]
        pool.async_acquire(asio::bind_cancellation_slot(acquire_signal.slot(), [](auto ec, auto) {
            std::printf("slot: %s\n", ec.message().c_str());
        }));
        acquire_signal.emit(asio::cancellation_type::terminal);
        // [/slot]
        // [spawn]
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(asio::use_awaitable));
            std::printf("co_spawn: %s\n", ec.message().c_str());
        }, asio::bind_cancellation_slot(spawn_signal.slot(), asio::detached));
        co_await others();  // it waits now
        spawn_signal.emit(asio::cancellation_type::terminal);
        // [/spawn]
        co_await others();
        holder.release();  // clean: connection 1 stays
        // [unwinding]
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            auto lease = co_await pool.async_acquire();
            co_await query(*lease, 1h);  // cancelled: throws, the lease goes during unwinding
        }, asio::bind_cancellation_slot(client_signal.slot(), asio::detached));
        co_await others();                                      // its query has started
        client_signal.emit(asio::cancellation_type::terminal);  // the client went away
        // [/unwinding]
        co_await others();
        std::printf("client gone: retired dirty %d\n", int(pool.stats().retired_dirty));
        for (std::chrono::steady_clock::duration query_time : {1h, 0h}) {
            // [guard]
            auto lease = co_await pool.async_acquire();
            auto guard = lease.in_flight();
            deadline.expires_after(1ms);
            auto q = co_await (query(*lease, query_time) ||
                               deadline.async_wait(asio::use_awaitable));
            if (q.index() == 0) guard.done();  // the query finished: the connection is fit
            // [/guard]
            std::printf("connection %d: %s\n", lease->id, q.index() ? "timed out" : "query done");
        }
        // [mark_dirty]
        auto lease = co_await pool.async_acquire();
        lease.mark_dirty();  // a reply half read that no guard saw: say so
        // [/mark_dirty]
        std::printf("connection %d: marked dirty\n", lease->id);
        lease.release();
        co_await pool.async_close();
    }, asio::detached);
    io.run();
    const fairpool::pool_stats s = pool.stats();
    std::printf("cancelled acquires %d, retired dirty %d, connections made %d\n",
                int(s.rejected_cancelled), int(s.retired_dirty), made);
}
