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

namespace asio = boost::asio;
using asio::ip::tcp;
using fairpool::demo::backend_connection;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto connect_timeout = std::chrono::milliseconds(2000);

struct settings {
    std::optional<tcp::endpoint> backend;
    unsigned long sessions = 10'000;
    unsigned long parallel = 100;
    unsigned long pool_size = 16;
    std::string json;
};

struct result {
    std::string design;
    double sessions_per_second = 0;
    double p50_us = 0, p99_us = 0;
    std::uint64_t connections = 0;
    std::uint64_t failures = 0;
};

// A positive number (sessions, parallelism, pool size).
bool number(const char* s, unsigned long& out) { return fairpool::demo::parse_number(s, out, ~0UL) && out > 0; }

asio::awaitable<bool> incr_get(backend_connection& c, const std::string& incr, const std::string& get) {
    const auto a = co_await c.round_trip(incr);
    if (a.ec) co_return false;
    const auto b = co_await c.round_trip(get);
    co_return !b.ec;
}

double percentile(std::vector<std::uint32_t>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

// Runs `parallel` workers taking sessions until `sessions` are done.
// `finish` runs once the last session is done, before the context stops.
template <class Session, class Finish>
result run(const std::string& design, const settings& s, asio::io_context& io, Session session, Finish finish) {
    std::vector<std::uint32_t> latencies;
    latencies.reserve(s.sessions);
    unsigned long next = 0;
    unsigned long workers = s.parallel;
    result r{design, 0, 0, 0, 0, 0};
    double seconds = 0;
    const auto start = clock_type::now();
    for (unsigned long w = 0; w < s.parallel; ++w)
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            while (next < s.sessions) {
                const unsigned long n = next++;
                const auto t0 = clock_type::now();
                if (!co_await session(n)) ++r.failures;
                latencies.push_back(static_cast<std::uint32_t>(
                    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0).count()));
            }
            if (--workers == 0) {
                seconds = std::chrono::duration<double>(clock_type::now() - start).count();
                co_await finish();
            }
        }, asio::detached);
    io.run();
    r.sessions_per_second = static_cast<double>(s.sessions) / seconds;
    r.p50_us = percentile(latencies, 0.5);
    r.p99_us = percentile(latencies, 0.99);
    return r;
}

result with_pool(const settings& s, tcp::endpoint backend) {
    asio::io_context io;
    fairpool::pool_options o;
    o.scheduler.max_slots = s.pool_size;
    o.scheduler.max_waiters = std::max<std::uint64_t>(1024, s.parallel);
    fairpool::pool<backend_connection> pool(io.get_executor(), o,
                                            [backend] { return backend_connection::connect(backend, connect_timeout); },
                                            [](backend_connection& c) { return c.close(); });
    const std::string incr = fairpool::demo::resp::command({"INCR", "bench:pool"});
    const std::string get = fairpool::demo::resp::command({"GET", "bench:pool"});
    result r = run(
        "fairpool", s, io,
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

result connect_per_request(const settings& s, tcp::endpoint backend) {
    const std::string incr = fairpool::demo::resp::command({"INCR", "bench:cpr"});
    const std::string get = fairpool::demo::resp::command({"GET", "bench:cpr"});
    std::uint64_t opened = 0;
    asio::io_context io;
    result r = run("connect_per_request", s, io, [&](unsigned long) -> asio::awaitable<bool> {
        try {
            auto c = co_await backend_connection::connect(backend, connect_timeout);
            ++opened;
            const bool ok = co_await incr_get(c, incr, get);
            co_await c.close();
            co_return ok;
        } catch (const std::exception&) {
            co_return false;
        }
    }, []() -> asio::awaitable<void> { co_return; });
    r.connections = opened;
    return r;
}

void write_json(const std::string& file, const std::vector<result>& results) {
    std::ofstream out(file);
    out << "[\n";
    bool first = true;
    const auto row = [&](const result& r, const char* metric, double value, const char* unit) {
        out << (first ? "  " : ",\n  ") << R"({"scenario": "redis_sessions", "design": ")" << r.design
            << R"(", "metric": ")" << metric << R"(", "value": )" << value << R"(, "unit": ")" << unit << "\"}";
        first = false;
    };
    for (const auto& r : results) {
        row(r, "sessions_per_second", r.sessions_per_second, "sessions/s");
        row(r, "session_latency_p50", r.p50_us, "us");
        row(r, "session_latency_p99", r.p99_us, "us");
        row(r, "backend_connections_opened", static_cast<double>(r.connections), "connections");
        row(r, "failed_sessions", static_cast<double>(r.failures), "sessions");
    }
    out << "\n]\n";
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

    std::vector<result> results;
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
    if (!s.json.empty()) write_json(s.json, results);
    return 0;
}
