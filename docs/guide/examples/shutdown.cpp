// Shutdown: on SIGTERM, stop taking requests, close the pool with a deadline, report what
// was still out, then wait for the rest. The program raises SIGTERM itself.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <csignal>
#include <cstdio>
#include <memory>

namespace asio = boost::asio;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct connection {
    int id;
};

// A request that holds its connection for `hold` (a slow query), or reports the refusal.
asio::awaitable<void> request(fairpool::pool<connection>& pool, int n,
                              std::chrono::milliseconds hold) {
    auto [ec, lease] = co_await pool.async_acquire(use_tuple);
    if (ec) {
        std::printf("request %d: %s\n", n, ec.message().c_str());
        co_return;
    }
    asio::steady_timer work(co_await asio::this_coro::executor, hold);
    co_await work.async_wait(asio::use_awaitable);
    std::printf("request %d: done on connection %d\n", n, lease->id);
}  // the lease goes back here

int main() {
    asio::io_context io;
    int next_id = 0;
    fairpool::pool<connection> pool(
        io.get_executor(), {.max_slots = 1},
        [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; },
        [](connection& c) -> asio::awaitable<void> {  // the graceful close: QUIT, Terminate
            std::printf("connection %d closed\n", c.id);
            co_return;
        });
    bool accepting = true;  // stands for the server's acceptor

    // [signal]
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int signo) {
        if (ec) return;
        std::printf("signal %d: shutting down\n", signo);
        accepting = false;  // acceptor.close(): no new requests
        pool.async_close(50ms, [&](boost::system::error_code error, fairpool::close_report r) {
            if (!error) {
                std::puts("pool closed");
                return;
            }
            std::printf("close: %s\n  still out: leases %llu, spawning %llu, retiring %llu\n",
                        error.message().c_str(), static_cast<unsigned long long>(r.leases_out),
                        static_cast<unsigned long long>(r.slots_spawning),
                        static_cast<unsigned long long>(r.slots_retiring));
            // Keep waiting, without a deadline (or return from main and let them go).
            pool.async_close([](boost::system::error_code, fairpool::close_report r) {
                std::printf("closed: %s\n", r.closed ? "yes" : "no");
            });
        });
    });
    // [/signal]

    asio::co_spawn(io, request(pool, 1, 100ms), asio::detached);  // still out at the deadline
    asio::co_spawn(io, request(pool, 2, 1ms), asio::detached);    // queued behind it: closed
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer soon(io, 10ms);
        co_await soon.async_wait(asio::use_awaitable);
        std::raise(SIGTERM);  // what `kill -TERM <pid>` would do
    }, asio::detached);
    io.run();

    // [unclosed]
    // The last pool object goes without a close: the pool shuts down all the same.
    auto dropped = std::make_unique<fairpool::pool<connection>>(
        io.get_executor(), fairpool::pool_options{},
        [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; });
    dropped->async_acquire([](boost::system::error_code ec, fairpool::lease<connection>) {
        std::printf("acquire on a dropped pool: %s\n", ec.message().c_str());
    });
    dropped.reset();  // the acquire keeps the pool's state alive until it has its answer
    io.restart();
    io.run();
    // [/unclosed]
    return accepting ? 1 : 0;
}
