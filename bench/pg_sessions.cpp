// End-to-end: sessions per second against a real PostgreSQL server, through a fairpool
// of libpq connections (examples/postgres) versus a new connection per session. A
// session: get a connection, run SELECT $1::int + 1, give it back. "fairpool + reset"
// also runs DISCARD ALL on every release (reset_on_release), as a service that must not
// leak session state would.
//
//   pg_sessions [--conninfo CONNINFO] [--sessions N] [--parallel N] [--pool-size N] [--json FILE]
//
// Without --conninfo it makes a throwaway cluster (initdb, a free loopback port, as an
// unprivileged user when run as root: examples/postgres/cluster.hpp) and removes it
// after. Prints a markdown table; --json writes a list of rows {"scenario":
// "pg_sessions" (or "pg_sessions_reset" for the pool with reset), "design": ...,
// "metric": ..., "value": ..., "unit": ...}.

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "pooled.hpp"
#include "sessions.hpp"

namespace asio = boost::asio;
using namespace fairpool::bench;
using namespace std::chrono_literals;

namespace {

struct settings {
    std::string conninfo;
    unsigned long sessions = 5'000;
    unsigned long parallel = 32;
    unsigned long pool_size = 8;
    std::string json;
};


bool number(const char* s, unsigned long& out) {
    const char* end = s + std::char_traits<char>::length(s);
    const auto [p, err] = std::from_chars(s, end, out);
    return err == std::errc{} && p == end && out > 0;
}

session_result with_pool(const settings& s, const pg::parameters& params, bool reset) {
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options o;
    o.max_slots = s.pool_size;
    o.max_waiters = std::max<std::size_t>(1024, s.parallel);
    o.reset_on_release = reset;
    pg::pool pool(io.get_executor(), o, pg::hooks(params, "fairpool-bench", cancels));
    session_result r = run_sessions(
        reset ? "pg_sessions_reset" : "pg_sessions", "fairpool", s.sessions, s.parallel, io,
        [&](unsigned long n) -> asio::awaitable<bool> {
            auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(asio::use_awaitable));
            if (ec) co_return false;
            std::vector<std::string> args{std::to_string(n)};
            const auto out = co_await pg::run(lease, "SELECT $1::int + 1", std::move(args), 5s);
            co_return static_cast<bool>(out);
        },
        [&]() -> asio::awaitable<void> {
            (void)co_await pool.async_close(asio::as_tuple(asio::use_awaitable));
        });
    r.connections = pool.stats().spawns;
    return r;
}

session_result connect_per_request(const settings& s, pg::parameters params) {
    params.emplace_back("application_name", "fairpool-bench-cpr");
    pg::canceller cancels;
    std::uint64_t opened = 0;
    asio::io_context io;
    auto session = [&](unsigned long n) -> asio::awaitable<bool> {
        try {
            auto c = co_await pg::connection::connect(params, cancels);
            ++opened;
            std::vector<std::string> args{std::to_string(n)};
            (void)co_await c.query("SELECT $1::int + 1", std::move(args));
            co_await c.close();
            co_return true;
        } catch (const std::exception&) {
            co_return false;
        }
    };
    session_result r = run_sessions("pg_sessions", "connect_per_request", s.sessions, s.parallel, io, session,
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
        if (a == "--conninfo") s.conninfo = v, ok = !s.conninfo.empty(), ++i;
        else if (a == "--sessions") ok = number(v, s.sessions), ++i;
        else if (a == "--parallel") ok = number(v, s.parallel), ++i;
        else if (a == "--pool-size") ok = number(v, s.pool_size) && s.pool_size <= 65535, ++i;
        else if (a == "--json") s.json = v, ok = !s.json.empty(), ++i;
        else ok = false;
        if (!ok) {
            std::fprintf(stderr, "usage: pg_sessions [--conninfo CONNINFO] [--sessions N] [--parallel N] "
                                 "[--pool-size N] [--json FILE]\n");
            return 2;
        }
    }
    try {
        std::unique_ptr<pg::cluster> own;
        if (s.conninfo.empty()) {
            own = std::make_unique<pg::cluster>();
            s.conninfo = own->conninfo();
        }
        const pg::parameters params = pg::parse_conninfo(s.conninfo);
        std::vector<session_result> results;
        results.push_back(with_pool(s, params, false));
        results.push_back(with_pool(s, params, true));
        results.push_back(connect_per_request(s, params));

        std::printf("### pg_sessions: %lu sessions (SELECT $1::int + 1), %lu in parallel, pool of %lu, %s\n\n",
                    s.sessions, s.parallel, s.pool_size, s.conninfo.c_str());
        std::printf("| design | sessions/s | p50 session | p99 session | backend connections opened | failed |\n");
        std::printf("|---|---:|---:|---:|---:|---:|\n");
        for (const auto& r : results)
            std::printf("| %s%s | %.0f | %.0f us | %.0f us | %llu | %llu |\n", r.design.c_str(),
                        r.scenario == "pg_sessions_reset" ? " + reset (DISCARD ALL)" : "", r.sessions_per_second,
                        r.p50_us, r.p99_us, static_cast<unsigned long long>(r.connections),
                        static_cast<unsigned long long>(r.failures));
        if (results[2].sessions_per_second > 0)
            std::printf("\nfairpool: %.1fx the sessions per second of connect-per-request (%.1fx with reset)\n",
                        results[0].sessions_per_second / results[2].sessions_per_second,
                        results[1].sessions_per_second / results[2].sessions_per_second);
        if (!s.json.empty()) write_session_rows(s.json, results);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pg_sessions: %s\n", e.what());
        return 1;
    }
}
