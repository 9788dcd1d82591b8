// Metrics: a pool's counters by name, a tenant's own, and the Prometheus text that a
// scrape handler serves, with a component's own family appended.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>
#include <sstream>
#include <string>

namespace asio = boost::asio;
using ull = unsigned long long;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct connection {};

int main() {
    asio::io_context io;
    auto connect = []() -> asio::awaitable<connection> { co_return connection{}; };
    fairpool::pool<connection> pool(io.get_executor(), {.max_slots = 1}, connect);
    auto alice = pool.make_handle({.name = "alice"});  // `tenant` label in the text
    auto bob = pool.make_handle({.name = "bob"});
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto lease = co_await alice.async_acquire(asio::use_awaitable);  // after a spawn
        auto [ec, none] = co_await bob.async_try_acquire(use_tuple);     // none idle: timeout
        lease.mark_dirty();  // its request failed half-way: never reuse the connection
        lease.release();
        lease = co_await alice.async_acquire(asio::use_awaitable);  // on a new connection

        // [stats]
        const fairpool::pool_stats s = pool.stats();
        std::printf("acquires %llu, grants %llu (%llu after waiting), rejected_timeout %llu\n",
                    ull(s.acquires), ull(s.grants), ull(s.grants_after_wait),
                    ull(s.rejected_timeout));
        std::printf("spawns %llu, retired_dirty %llu, slots_leased %llu, held %llu\n",
                    ull(s.spawns), ull(s.retired_dirty), ull(s.slots_leased), ull(s.held));
        const fairpool::handle_stats a = alice.stats(), b = bob.stats();
        std::printf("alice: grants %llu, leases_out %llu; bob: rejected_timeout %llu\n",
                    ull(a.grants), ull(a.leases_out), ull(b.rejected_timeout));
        // [/stats]

        // [prometheus]
        const std::string body = fairpool::prometheus_text(
            pool, "db", {alice.observer(), bob.observer()}, [](std::string& out) {
                out += "# HELP myserver_requests_total Requests the server answered.\n"
                       "# TYPE myserver_requests_total counter\n"
                       "myserver_requests_total 3\n";
            });
        // [/prometheus]
        std::istringstream lines(body);
        std::string line;
        for (int n = 0; n < 6 && std::getline(lines, line); ++n) std::printf("%s\n", line.c_str());
        while (std::getline(lines, line))
            if (line.starts_with("fairpool_handle_grants") || line.starts_with("myserver"))
                std::printf("%s\n", line.c_str());
        lease.release();
        co_await pool.async_close(asio::use_awaitable);
    }, asio::detached);
    io.run();
}
