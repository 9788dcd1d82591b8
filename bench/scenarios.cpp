// Side-by-side scenarios: fairpool's Boost.Asio adapter and four baseline designs
// (bench/baselines/), measured in one process, interleaved run by run so that every
// design sees the same machine noise. Prints one JSON object per line on stdout:
//   {"scenario": ..., "design": ..., "metric": ..., "value": ..., "unit": ...}
// and progress on stderr. bench/run turns the rows into the markdown table.
//
// A plain main() rather than Google Benchmark: the figures wanted are distributions
// over individual acquires (median/p99/p99.9/max wait), order inversions and per-tenant
// grant counts, gathered across designs in one interleaved loop; Google Benchmark
// measures the mean time of a repeated loop body per benchmark and would need all of
// that bolted on through counters, one design at a time.
//
// Usage: scenarios [--quick] [--reps N] [--only NAME]   (NAME: round_trip, grid,
//        inversions, tenants)
#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "baselines/channel_pool.hpp"
#include "baselines/mutex_condvar_pool.hpp"
#include "baselines/notify_retry_pool.hpp"
#include "baselines/servicing_task_pool.hpp"
#include "fairpool/asio/pool.hpp"

// --- Heap allocation counter (every design pays the same relaxed increment) --------
//
// As in tests/adapter/allocation_test.cpp: the C allocation functions are wrapped at
// link time (-Wl,--wrap=..., see meson.build; Asio's recycling allocator calls
// std::aligned_alloc directly) and the global operator new goes through them.

namespace {
std::atomic<std::uint64_t> g_allocations{0};
inline void count_allocation() noexcept { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

#include "../tests/support/counting_allocation.hpp"

namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

struct connection {
    int id;
};

std::vector<connection> make_connections(std::size_t n) {
    std::vector<connection> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(connection{static_cast<int>(i)});
    return v;
}

std::int64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// --- Designs: how to make each pool, and what an acquirer calls ----------------------
//
// make() returns a ready pool (all resources created: fairpool prewarms min_slots =
// max_slots before the clock starts). source() returns what one tenant or worker
// acquires through: for fairpool a handle (its unit of fairness; the baselines have no
// such notion), for the baselines the pool itself.

template <class Pool>
struct direct_source {
    using lease_type = typename Pool::lease_type;
    Pool* pool;
    template <class Token>
    auto async_acquire(Token&& token) {
        return pool->async_acquire(std::forward<Token>(token));
    }
};

// From a coroutine: co_await the asynchronous acquire; the blocking pool is called
// directly (its inline completion must not be awaited, see mutex_condvar_pool.hpp).
template <class Source>
constexpr bool blocking_source = requires(Source& s) { s.pool->acquire_blocking(); };


struct fairpool_design {
    static constexpr const char* name = "fairpool";
    using pool_type = fairpool::pool<connection>;
    static std::unique_ptr<pool_type> make(asio::io_context& io, std::size_t size) {
        fairpool::pool_options o;
        o.scheduler.max_slots = static_cast<std::uint32_t>(size);
        o.scheduler.min_slots = static_cast<std::uint32_t>(size);
        auto next = std::make_shared<int>(0);
        auto p = std::make_unique<pool_type>(io.get_executor(), o, [next]() -> asio::awaitable<connection> {
            co_return connection{(*next)++};
        });
        io.restart();
        io.run();  // prewarm: every slot spawned
        io.restart();
        return p;
    }
    static auto source(pool_type& p) { return p.make_handle(); }
};

template <class Pool>
struct baseline_design {
    using pool_type = Pool;
    static std::unique_ptr<Pool> make(asio::io_context& io, std::size_t size) {
        if constexpr (std::is_constructible_v<Pool, std::vector<connection>>)
            return std::make_unique<Pool>(make_connections(size));
        else
            return std::make_unique<Pool>(io.get_executor(), make_connections(size));
    }
    static auto source(Pool& p) { return direct_source<Pool>{&p}; }
};

struct mutex_condvar_design : baseline_design<fairpool_bench::mutex_condvar_pool<connection>> {
    static constexpr const char* name = "mutex_condvar";
};
struct servicing_task_design : baseline_design<fairpool_bench::servicing_task_pool<connection>> {
    static constexpr const char* name = "servicing_task";
};
struct notify_retry_design : baseline_design<fairpool_bench::notify_retry_pool<connection>> {
    static constexpr const char* name = "notify_retry";
};
struct channel_design : baseline_design<fairpool_bench::channel_pool<connection>> {
    static constexpr const char* name = "channel";
};

template <class F>
void for_each_design(F&& f) {
    f(fairpool_design{});
    f(mutex_condvar_design{});
    f(servicing_task_design{});
    f(notify_retry_design{});
    f(channel_design{});
}

// --- Output ---------------------------------------------------------------------------

void row(const std::string& scenario, const char* design, const char* metric, double value, const char* unit) {
    std::printf("{\"scenario\": \"%s\", \"design\": \"%s\", \"metric\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n",
                scenario.c_str(), design, metric, value, unit);
    std::fflush(stdout);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

double quantile_sorted(const std::vector<std::int64_t>& v, double q) {
    if (v.empty()) return 0;
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size()));
    return static_cast<double>(v[std::min(i, v.size() - 1)]);
}

// Runs io on `threads` threads (the caller's included) until it runs out of work.
void run_on(asio::io_context& io, int threads) {
    std::vector<std::thread> extra;
    for (int i = 1; i < threads; ++i) extra.emplace_back([&io] { io.run(); });
    io.run();
    for (auto& t : extra) t.join();
}

// --- Scenario 1: uncontended round trip, one thread -----------------------------------
//
// One acquire, its completion, the lease released inside the handler; the next acquire
// only once the previous handler ran (run_one() until it did: no recursion, so the
// blocking pool, whose handler runs inline, is driven the same way).

template <class Design>
void round_trip_once(std::size_t cycles, double& ns_per_cycle, double& allocs_per_cycle) {
    asio::io_context io(1);
    auto pool = Design::make(io, 1);
    auto source = Design::source(*pool);
    // Keeps run_one() from stopping the io_context between a handler and the next acquire.
    auto work = asio::make_work_guard(io);
    bool got = false;
    auto handler = [&got](error_code, auto lease) {
        got = true;
        lease.release();
    };
    for (int i = 0; i < 1000; ++i) {  // warm caches and recycling allocators
        got = false;
        source.async_acquire(handler);
        while (!got)
            if (io.run_one() == 0) {
                std::fprintf(stderr, "%s: io ran out of work (stopped=%d)\n", Design::name, int(io.stopped()));
                std::abort();
            }
    }
    io.poll();
    const std::uint64_t a0 = g_allocations.load(std::memory_order_relaxed);
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < cycles; ++i) {
        got = false;
        source.async_acquire(handler);
        while (!got)
            if (io.run_one() == 0) {
                std::fprintf(stderr, "%s: io ran out of work (stopped=%d)\n", Design::name, int(io.stopped()));
                std::abort();
            }
    }
    io.poll();  // the last release's work, if any
    const auto t1 = clock_type::now();
    const std::uint64_t a1 = g_allocations.load(std::memory_order_relaxed);
    ns_per_cycle = static_cast<double>(ns_between(t0, t1)) / static_cast<double>(cycles);
    allocs_per_cycle = static_cast<double>(a1 - a0) / static_cast<double>(cycles);
}

void scenario_round_trip(int reps, std::size_t cycles) {
    std::fprintf(stderr, "round_trip: %d reps x %zu cycles per design\n", reps, cycles);
    std::vector<std::vector<double>> ns(5), allocs(5);
    for (int r = 0; r < reps; ++r) {
        int d = 0;
        for_each_design([&](auto design) {
            double n = 0, a = 0;
            round_trip_once<decltype(design)>(cycles, n, a);
            ns[d].push_back(n), allocs[d].push_back(a);
            ++d;
        });
    }
    int d = 0;
    for_each_design([&](auto design) {
        row("round_trip", design.name, "ns_per_cycle", median(ns[d]), "ns");
        row("round_trip", design.name, "allocs_per_cycle", median(allocs[d]), "count");
        ++d;
    });
}

// --- Contended runs: W coroutine workers, C cycles each, zero hold --------------------

struct contended_record {
    explicit contended_record(std::size_t n) : waits(n), served(n) {}
    std::vector<std::int64_t> waits;    // per acquire, in service order
    std::vector<std::uint64_t> served;  // arrival ticket of each acquire, in service order
    std::atomic<std::uint64_t> arrivals{0};
    std::atomic<std::size_t> completed{0};
    std::atomic<int> errors{0};
    std::atomic<int> workers_left{0};
    std::atomic<bool> started{false};
    clock_type::time_point start, end;
};

template <class Source>
asio::awaitable<void> contended_worker(Source& source, int cycles, contended_record& rec) {
    if (!rec.started.exchange(true)) rec.start = clock_type::now();
    for (int i = 0; i < cycles; ++i) {
        const std::uint64_t ticket = rec.arrivals.fetch_add(1);
        const auto t0 = clock_type::now();
        error_code ec;
        typename Source::lease_type lease;
        if constexpr (blocking_source<Source>) lease = source.pool->acquire_blocking();
        else std::tie(ec, lease) = co_await source.async_acquire(asio::as_tuple(asio::use_awaitable));
        const auto t1 = clock_type::now();
        const std::size_t k = rec.completed.fetch_add(1);
        rec.served[k] = ticket;
        rec.waits[k] = ns_between(t0, t1);
        if (ec || !lease) rec.errors.fetch_add(1);
        lease.release();
    }
    if (rec.workers_left.fetch_sub(1) == 1) rec.end = clock_type::now();
}

// Grants served while an earlier-ticketed request was still waiting.
std::uint64_t count_inversions(const std::vector<std::uint64_t>& served) {
    std::vector<bool> done(served.size(), false);
    std::uint64_t lowest = 0, inversions = 0;
    for (const std::uint64_t t : served) {
        if (t > lowest) ++inversions;
        done[t] = true;
        while (lowest < served.size() && done[lowest]) ++lowest;
    }
    return inversions;
}

template <class Design>
void contended_once(std::size_t size, int workers, int cycles, int threads, contended_record& rec) {
    asio::io_context io(threads);
    auto pool = Design::make(io, size);
    using source_type = decltype(Design::source(*pool));
    std::vector<source_type> sources;
    sources.reserve(static_cast<std::size_t>(workers));
    for (int w = 0; w < workers; ++w) sources.push_back(Design::source(*pool));
    rec.workers_left = workers;
    for (int w = 0; w < workers; ++w)
        asio::co_spawn(io, contended_worker(sources[static_cast<std::size_t>(w)], cycles, rec), asio::detached);
    run_on(io, threads);
    if (rec.errors.load() != 0 || rec.completed.load() != rec.waits.size()) {
        std::fprintf(stderr, "%s: %d errors, %zu of %zu completed\n", Design::name, rec.errors.load(),
                     rec.completed.load(), rec.waits.size());
        std::exit(1);
    }
}

void scenario_grid(int reps, int cycles) {
    const std::size_t sizes[] = {4, 8, 16};
    const int worker_counts[] = {4, 16, 64, 256};
    for (const std::size_t size : sizes)
        for (const int workers : worker_counts) {
            const std::string name = "grid/size=" + std::to_string(size) + "/workers=" + std::to_string(workers);
            std::fprintf(stderr, "%s: %d reps\n", name.c_str(), reps);
            const std::size_t n = static_cast<std::size_t>(workers) * static_cast<std::size_t>(cycles);
            std::vector<std::vector<double>> totals(5);
            std::vector<std::vector<std::int64_t>> waits(5);
            for (int r = 0; r < reps; ++r) {
                int d = 0;
                for_each_design([&](auto design) {
                    contended_record rec(n);
                    contended_once<decltype(design)>(size, workers, cycles, 2, rec);
                    totals[d].push_back(static_cast<double>(ns_between(rec.start, rec.end)) / 1000.0);
                    waits[d].insert(waits[d].end(), rec.waits.begin(), rec.waits.end());
                    ++d;
                });
            }
            int d = 0;
            for_each_design([&](auto design) {
                auto& w = waits[d];
                std::sort(w.begin(), w.end());
                row(name, design.name, "total", median(totals[d]), "us");
                row(name, design.name, "wait_p50", quantile_sorted(w, 0.5), "ns");
                row(name, design.name, "wait_p99", quantile_sorted(w, 0.99), "ns");
                row(name, design.name, "wait_p99.9", quantile_sorted(w, 0.999), "ns");
                row(name, design.name, "wait_max", static_cast<double>(w.back()), "ns");
                ++d;
            });
        }
}

// --- Order inversions -----------------------------------------------------------------
//
// On one io thread the arrival ticket order is the order the pool saw the requests and
// the handler order is the order it served them, so the count is exact. On two threads
// it also counts races between taking a ticket and reaching the pool, and between two
// handlers starting on the two threads: an upper bound, for every design alike.

void scenario_inversions(int reps, int cycles) {
    for (const int threads : {1, 2}) {
        const std::size_t size = 4;
        const int workers = 64;
        const std::string name = "inversions/threads=" + std::to_string(threads) + "/size=4/workers=64";
        std::fprintf(stderr, "%s: %d reps\n", name.c_str(), reps);
        const std::size_t n = static_cast<std::size_t>(workers) * static_cast<std::size_t>(cycles);
        std::vector<std::uint64_t> inversions(5, 0), grants(5, 0);
        for (int r = 0; r < reps; ++r) {
            int d = 0;
            for_each_design([&](auto design) {
                contended_record rec(n);
                contended_once<decltype(design)>(size, workers, cycles, threads, rec);
                inversions[static_cast<std::size_t>(d)] += count_inversions(rec.served);
                grants[static_cast<std::size_t>(d)] += n;
                ++d;
            });
        }
        std::size_t d = 0;
        for_each_design([&](auto design) {
            row(name, design.name, "inversions_per_1000_grants",
                1000.0 * static_cast<double>(inversions[d]) / static_cast<double>(grants[d]), "count");
            ++d;
        });
    }
}

// --- Per-tenant fairness ----------------------------------------------------------------
//
// Ten tenants share a pool of 4: tenant 0 is greedy (20 concurrent workers), tenants
// 1..9 have one worker each. Every worker loops acquire → use the resource for ~1 µs
// (a spin, never suspending: the blocking pool cannot hold a lease across a suspension)
// → release → yield, for a fixed time on 2 threads. For fairpool each tenant is one handle;
// the baselines have no notion of a tenant. Jain's index over the 10 tenants' grant
// counts: 1 = equal shares, 0.206 = shares proportional to demand (20:1).

void spin_for(std::chrono::nanoseconds d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

template <class Source>
asio::awaitable<void> tenant_worker(Source& source, std::atomic<std::uint64_t>& grants, const std::atomic<bool>& stop,
                                    std::atomic<int>& errors) {
    while (!stop.load(std::memory_order_relaxed)) {
        error_code ec;
        typename Source::lease_type lease;
        if constexpr (blocking_source<Source>) lease = source.pool->acquire_blocking();
        else std::tie(ec, lease) = co_await source.async_acquire(asio::as_tuple(asio::use_awaitable));
        if (ec || !lease) {
            errors.fetch_add(1);
            co_return;
        }
        grants.fetch_add(1, std::memory_order_relaxed);
        spin_for(std::chrono::nanoseconds(1000));
        lease.release();
        // Yield between requests (a server does I/O between two uses): without it, a
        // worker of the blocking pool, which never suspends, would keep its thread.
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
}

template <class Design>
std::vector<std::uint64_t> tenants_once(std::chrono::milliseconds duration) {
    constexpr int tenants = 10, greedy_workers = 20;
    asio::io_context io(2);
    auto pool = Design::make(io, 4);
    using source_type = decltype(Design::source(*pool));
    std::vector<source_type> sources;
    sources.reserve(tenants);
    for (int t = 0; t < tenants; ++t) sources.push_back(Design::source(*pool));
    std::vector<std::atomic<std::uint64_t>> grants(tenants);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    for (int t = 0; t < tenants; ++t)
        for (int w = 0; w < (t == 0 ? greedy_workers : 1); ++w)
            asio::co_spawn(io,
                           tenant_worker(sources[static_cast<std::size_t>(t)], grants[static_cast<std::size_t>(t)],
                                         stop, errors),
                           asio::detached);
    asio::steady_timer timer(io, duration);
    timer.async_wait([&stop](error_code) { stop = true; });
    run_on(io, 2);
    if (errors.load() != 0) {
        std::fprintf(stderr, "%s: %d errors\n", Design::name, errors.load());
        std::exit(1);
    }
    std::vector<std::uint64_t> out;
    for (auto& g : grants) out.push_back(g.load());
    return out;
}

void scenario_tenants(int reps, std::chrono::milliseconds duration) {
    const std::string name = "tenants/greedy=20x/light=9/size=4";
    std::fprintf(stderr, "%s: %d reps x %lld ms\n", name.c_str(), reps, static_cast<long long>(duration.count()));
    std::vector<std::vector<std::uint64_t>> sums(5, std::vector<std::uint64_t>(10, 0));
    for (int r = 0; r < reps; ++r) {
        std::size_t d = 0;
        for_each_design([&](auto design) {
            const auto g = tenants_once<decltype(design)>(duration);
            for (std::size_t t = 0; t < g.size(); ++t) sums[d][t] += g[t];
            ++d;
        });
    }
    std::size_t d = 0;
    for_each_design([&](auto design) {
        const auto& g = sums[d];
        double sum = 0, sum_sq = 0, light_min = 1e300, light_sum = 0;
        for (std::size_t t = 0; t < g.size(); ++t) {
            const auto x = static_cast<double>(g[t]);
            sum += x, sum_sq += x * x;
            if (t > 0) light_min = std::min(light_min, x), light_sum += x;
        }
        const double per_rep = static_cast<double>(reps);
        row(name, design.name, "jain_index", sum_sq > 0 ? sum * sum / (10.0 * sum_sq) : 0.0, "index");
        row(name, design.name, "greedy_share", sum > 0 ? static_cast<double>(g[0]) / sum : 0.0, "fraction");
        row(name, design.name, "grants_greedy", static_cast<double>(g[0]) / per_rep, "count");
        row(name, design.name, "grants_light_mean", light_sum / 9.0 / per_rep, "count");
        row(name, design.name, "grants_light_min", light_min / per_rep, "count");
        row(name, design.name, "grants_total", sum / per_rep, "count");
        ++d;
    });
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    int reps = 5;
    std::string only;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--only" && i + 1 < argc) only = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--reps N] [--only round_trip|grid|inversions|tenants]\n",
                         argv[0]);
            return 2;
        }
    }
    if (quick) reps = 1;
    const auto want = [&](std::string_view s) { return only.empty() || only == s; };
    if (want("round_trip")) scenario_round_trip(reps, quick ? 20'000 : 200'000);
    if (want("grid")) scenario_grid(reps, 10);
    if (want("inversions")) scenario_inversions(reps, 10);
    if (want("tenants")) scenario_tenants(reps, std::chrono::milliseconds(quick ? 100 : 300));
    return 0;
}
