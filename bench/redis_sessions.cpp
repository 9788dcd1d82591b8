// End-to-end: sessions per second against a real redis-server, with a fairpool of
// connections versus a new connection per session (the comparison Boost.MySQL makes
// for its connection_pool). A session: get a connection, INCR, GET, give it back.
//
//   redis_sessions [--backend HOST:PORT] [--sessions N] [--parallel N] [--pool-size N] [--json FILE]
//
// Without --backend it starts redis-server itself on a free loopback port. Prints a
// markdown table; --json writes a list of rows {"scenario": "redis_sessions",
// "design": ..., "metric": ..., "value": ..., "unit": ...}.

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend_connection.hpp"
#include "command_line.hpp"
#include "fairpool/asio/pool.hpp"
#include "redis_process.hpp"
#include "sessions.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using fairpool::demo::backend_connection;
using namespace fairpool::bench;

namespace {

constexpr auto connect_timeout = std::chrono::milliseconds(2000);

struct settings {
    std::optional<tcp::endpoint> backend;
    unsigned long sessions = 10'000;
    unsigned long parallel = 100;
    unsigned long pool_size = 16;
    std::string json;
};


// A positive number (sessions, parallelism, pool size).
bool number(const char* s, unsigned long& out) { return fairpool::demo::parse_number(s, out, ~0UL) && out > 0; }

asio::awaitable<bool> incr_get(backend_connection& c, const std::string& incr, const std::string& get) {
    const auto a = co_await c.round_trip(incr);
    if (a.ec) co_return false;
    const auto b = co_await c.round_trip(get);
    co_return !b.ec;
}

session_result with_pool(const settings& s, tcp::endpoint backend) {
    asio::io_context io;
    fairpool::pool_options o;
    o.max_slots = s.pool_size;
    o.max_waiters = std::max<std::size_t>(1024, s.parallel);
    fairpool::pool<backend_connection> pool(io.get_executor(), o,
                                            [backend] { return backend_connection::connect(backend, connect_timeout); },
                                            [](backend_connection& c) { return c.close(); });
    const std::string incr = fairpool::demo::resp::command({"INCR", "bench:pool"});
    const std::string get = fairpool::demo::resp::command({"GET", "bench:pool"});
    session_result r = run_sessions(
        "redis_sessions", "fairpool", s.sessions, s.parallel, io,
        [&](unsigned long) -> asio::awaitable<bool> {
            auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(asio::use_awaitable));
            if (ec) co_return false;
            const bool ok = co_await incr_get(*lease, incr, get);
            if (!ok) lease.mark_dirty();
            co_return ok;
        },
        [&]() -> asio::awaitable<void> {
            (void)co_await pool.async_close(asio::as_tuple(asio::use_awaitable));
        });
    r.connections = pool.stats().spawns;
    return r;
}

session_result connect_per_request(const settings& s, tcp::endpoint backend) {
    const std::string incr = fairpool::demo::resp::command({"INCR", "bench:cpr"});
    const std::string get = fairpool::demo::resp::command({"GET", "bench:cpr"});
    std::uint64_t opened = 0;
    asio::io_context io;
    auto session = [&](unsigned long) -> asio::awaitable<bool> {
        try {
            auto c = co_await backend_connection::connect(backend, connect_timeout);
            ++opened;
            const bool ok = co_await incr_get(c, incr, get);
            co_await c.close();
            co_return ok;
        } catch (const std::exception&) {
            co_return false;
        }
    };
    session_result r = run_sessions("redis_sessions", "connect_per_request", s.sessions, s.parallel, io, session,
                                    []() -> asio::awaitable<void> { co_return; });
    r.connections = opened;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : "";
        bool ok = true;
        if (a == "--backend") ok = (s.backend = fairpool::demo::parse_endpoint(v)).has_value(), ++i;
        else if (a == "--sessions") ok = number(v, s.sessions), ++i;
        else if (a == "--parallel") ok = number(v, s.parallel), ++i;
        else if (a == "--pool-size") ok = number(v, s.pool_size) && s.pool_size <= 65535, ++i;
        else if (a == "--json") s.json = v, ok = !s.json.empty(), ++i;
        else ok = false;
        if (!ok) {
            std::fprintf(stderr,
                         "usage: redis_sessions [--backend HOST:PORT] [--sessions N] [--parallel N] [--pool-size N] "
                         "[--json FILE]\n");
            return 2;
        }
    }
    std::optional<fairpool::demo::redis_process> child;
    if (!s.backend) {
        try {
            child.emplace("redis-server");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "redis_sessions: %s (install redis-server, or pass --backend)\n", e.what());
            return 2;
        }
    }
    const tcp::endpoint backend = s.backend ? *s.backend : child->endpoint();

    std::vector<session_result> results;
    results.push_back(with_pool(s, backend));
    results.push_back(connect_per_request(s, backend));

    std::printf("### redis_sessions: %lu sessions (INCR + GET), %lu in parallel, pool of %lu, redis on %s:%u\n\n",
                s.sessions, s.parallel, s.pool_size, backend.address().to_string().c_str(), backend.port());
    std::printf("| design | sessions/s | p50 session | p99 session | backend connections opened | failed |\n");
    std::printf("|---|---:|---:|---:|---:|---:|\n");
    for (const auto& r : results)
        std::printf("| %s | %.0f | %.0f us | %.0f us | %llu | %llu |\n", r.design.c_str(), r.sessions_per_second,
                    r.p50_us, r.p99_us, static_cast<unsigned long long>(r.connections),
                    static_cast<unsigned long long>(r.failures));
    if (results[1].sessions_per_second > 0)
        std::printf("\nfairpool: %.1fx the sessions per second of connect-per-request\n",
                    results[0].sessions_per_second / results[1].sessions_per_second);
    if (!s.json.empty()) write_session_rows(s.json, results);
    return 0;
}
