// Health: failed connects and backoff, a check before reuse, a reset on release, keepalive,
// idle_timeout, max_lifetime. The backend: the connections it has open; it refuses two.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>
#include <set>
#include <stdexcept>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct connection {
    int id;
    int session = 0;  // state a user may leave behind (a selected database, say)
};

int main() {
    std::set<int> open;  // the backend's side
    int made = 0, refusals = 2;
    // [hooks]
    const fairpool::resource_hooks<connection> hooks{
        .create = [&]() -> asio::awaitable<connection> {
            if (refusals > 0 && refusals--) throw std::runtime_error("connection refused");
            open.insert(++made);
            co_return connection{made};
        },
        .close = [&](connection& c) -> asio::awaitable<void> { open.erase(c.id); co_return; },
        .check = [&](connection& c) -> asio::awaitable<bool> { co_return open.contains(c.id); },
        .reset = [](connection& c) -> asio::awaitable<bool> { c.session = 0; co_return true; },
    };
    // [/hooks]
    asio::io_context io;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer pause(io);
        auto sleep = [&] {  // 30 ms: longer than every setting below
            pause.expires_after(30ms);
            return pause.async_wait(asio::use_awaitable);
        };
        // [checkout]
        fairpool::pool<connection> checked(io.get_executor(), {
            .max_slots = 1,
            .spawn_backoff_initial = 5ms,  // after a failed connect; doubles, up to the max
            .spawn_backoff_max = 20ms,
            .check_after_idle = 10ms,  // idle this long: checked before it is granted
            .reset_on_release = true,  // given back clean: reset before it is reused
        }, hooks);
        // [/checkout]
        for (int r = 1; r <= 3; ++r) {
            if (r == 3) open.clear();  // the backend drops its idle connections
            auto lease = co_await checked.async_acquire();
            std::printf("request %d: connection %d, session %d\n", r, lease->id, lease->session);
            lease->session = r;
            lease.release();
            co_await sleep();  // idle past check_after_idle
        }
        const fairpool::pool_stats s = checked.stats();
        std::printf("failed connects %d; checks %d alive, %d dead; resets %d\n",
                    int(s.spawn_failures), int(s.checks_passed), int(s.checks_failed),
                    int(s.resets_started));
        co_await checked.async_close();
        // [background]
        fairpool::pool<connection> kept(io.get_executor(), {
            .max_slots = 2,
            .min_slots = 1,
            .idle_timeout = 10ms,       // idle this long, above min_slots: closed
            .keepalive_interval = 5ms,  // idle ones checked this often
        }, hooks);
        // [/background]
        auto a = co_await kept.async_acquire(), b = co_await kept.async_acquire();
        std::printf("two leases: connections %d and %d\n", a->id, b->id);
        a.release(), b.release();
        co_await sleep();  // past idle_timeout: one closed, min_slots kept
        std::printf("idle_timeout: %d closed\n", int(kept.stats().retired_idle));
        open.clear();      // the backend drops the one left
        co_await sleep();  // keepalive finds it dead; min_slots brings a new one
        auto c = co_await kept.async_acquire();
        std::printf("keepalive: %d dead, now connection %d\n", int(kept.stats().checks_failed),
                    c->id);
        c.release();
        co_await kept.async_close();
        // [lifetime]
        fairpool::pool<connection> aging(io.get_executor(), {
            .max_lifetime = 20ms,         // retired this long after it was made,
            .max_lifetime_jitter = 10ms,  // less up to this much: 10 to 20 ms each
            .jitter_seed = 7,
        }, hooks);
        // [/lifetime]
        auto old = co_await aging.async_acquire();
        co_await sleep();  // held past its lifetime: retired when it comes back
        std::printf("max_lifetime: connection %d retired", old->id);
        old.release();
        std::printf(", now connection %d\n", (co_await aging.async_acquire())->id);
        co_await aging.async_close();
    }, asio::detached);
    io.run();
}
