#pragma once
// The coroutine workers the contended scenarios spawn, one per simulated client, and the
// runs that spawn them.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"

namespace fairpool_bench {

// Acquires through `source` (co_await for the asynchronous designs, a direct call for
// the blocking one); an error leaves the lease empty.
template <class Source>
asio::awaitable<typename Source::lease_type> acquire_from(Source& source) {
    error_code ec;
    typename Source::lease_type lease;
    if constexpr (blocking_source<Source>) lease = source.pool->acquire_blocking();
    else std::tie(ec, lease) = co_await source.async_acquire(asio::as_tuple(asio::use_awaitable));
    co_return lease;
}

// How a counted worker holds each lease between its grant and its release, as a type
// (no value in the worker's frame): not at all (no_hold, the grid's), across one
// zero-delay post round trip (post_hold), or suspended on a timer of `Microseconds`
// (timer_hold).
struct no_hold {};
struct post_hold {};
template <std::int64_t Microseconds>
struct timer_hold {
    static constexpr std::chrono::microseconds duration{Microseconds};
};

// A fixed number of acquire → hold → release cycles: what the grids and the inversion
// count measure.
struct counted_run {
    explicit counted_run(std::size_t n) : waits(n), served(n) {}
    std::vector<std::int64_t> waits;    // per acquire, in service order
    std::vector<std::uint64_t> served;  // arrival ticket of each acquire, in service order
    std::atomic<std::uint64_t> arrivals{0};
    std::atomic<std::size_t> completed{0};
    std::atomic<int> errors{0};
    std::atomic<int> workers_left{0};
    std::atomic<bool> started{false};
    clock_type::time_point start, end;
};

// With no_hold the worker compiles to the loop without a hold (the other branches are
// discarded). The timer is made per hold, a block-scope local, so that the hold-nothing
// worker's frame has no timer in it; making it costs every design the same.
template <class Hold = no_hold, class Source>
asio::awaitable<void> counted_worker(Source& source, int cycles, counted_run& run) {
    if (!run.started.exchange(true)) run.start = clock_type::now();
    for (int i = 0; i < cycles; ++i) {
        const std::uint64_t ticket = run.arrivals.fetch_add(1);
        const auto t0 = clock_type::now();
        auto lease = co_await acquire_from(source);
        const auto t1 = clock_type::now();
        const std::size_t k = run.completed.fetch_add(1);
        run.served[k] = ticket;
        run.waits[k] = ns_between(t0, t1);
        if (!lease) run.errors.fetch_add(1);
        if constexpr (std::is_same_v<Hold, post_hold>) {
            co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        } else if constexpr (requires { Hold::duration; }) {
            asio::steady_timer timer(co_await asio::this_coro::executor, Hold::duration);
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        } else {
            static_assert(std::is_same_v<Hold, no_hold>);
        }
        lease.release();
    }
    if (run.workers_left.fetch_sub(1) == 1) run.end = clock_type::now();
}

// What a contended run costs besides its time: handlers run by the io_context, and
// for fairpool the commands its actor fed per drain.
struct run_costs {
    std::size_t handlers = 0;
    bool both_threads = false;  // each thread ran at least a tenth of the handlers (common.hpp)
    double commands_per_drain = 0;
};

// One contended run: `workers` counted workers (one source each), `cycles` cycles each,
// every lease held as Hold says, on `threads` threads.
template <class Design, class Hold = no_hold>
run_costs contended_once(std::size_t size, int workers, int cycles, int threads, counted_run& run) {
    asio::io_context io(threads);
    auto pool = Design::make(io, size);
    using source_type = decltype(Design::source(*pool));
    std::vector<source_type> sources;
    sources.reserve(static_cast<std::size_t>(workers));
    for (int w = 0; w < workers; ++w) sources.push_back(Design::source(*pool));
    run.workers_left = workers;
    for (auto& source : sources) asio::co_spawn(io, counted_worker<Hold>(source, cycles, run), asio::detached);
    run_costs costs;
    const std::uint64_t fed = commands_fed(*pool), drains = drains_run(*pool);
    const handlers_run ran = run_on(io, threads);
    costs.handlers = ran.total;
    costs.both_threads = ran.every_thread;
    if (run.errors.load() != 0 || run.completed.load() != run.waits.size()) {
        std::fprintf(stderr, "%s: %d errors, %zu of %zu completed\n", Design::name, run.errors.load(),
                     run.completed.load(), run.waits.size());
        std::exit(1);
    }
    if (drains_run(*pool) > drains)
        costs.commands_per_drain =
            static_cast<double>(commands_fed(*pool) - fed) / static_cast<double>(drains_run(*pool) - drains);
    return costs;
}

// The source a design's workers acquire through, and the io threads a run of `workers`
// workers that hold their leases gets: 2 for the asynchronous designs; one per worker
// for the blocking pool, the only way it can be used (on 2 threads a spinning holder's
// workers would never find each other waiting, and holders suspended across an
// operation would deadlock it: both threads parked in acquire, none left to resume a
// holder; a suspended holder frees its thread, and with one thread per worker a
// thread is always left to resume it).
template <class Design>
using source_of = decltype(Design::source(std::declval<typename Design::pool_type&>()));
template <class Design>
constexpr int io_threads_for(int workers) {
    return blocking_source<source_of<Design>> ? workers : 2;
}

// How a timed worker holds its lease: busy on its thread, never suspending (a plain
// std::chrono::nanoseconds), or suspended on a timer (suspended_hold: the lease stays out
// while the thread serves others, as a server's connection stays out while its query
// is on the wire).
struct suspended_hold {
    std::chrono::nanoseconds duration;
};
// The on_release of a run that does not measure how long leases were held.
struct no_release {
    template <class... Args>
    void operator()(Args...) const noexcept {}
};

// Acquire → hold for `hold` → release → yield, until `stop`; on_grant(wait_ns,
// overtaken) after each grant, where `overtaken` counts the grants (to any worker) made
// between this request's start and its own grant: unlike the wait, it does not grow
// when the OS deschedules a thread, so it shows a pool's unfairness even on a busy
// machine; on_release(granted, released), the clock at the grant and now, just before
// each release (unless it is no_release). The yield stands for a server's I/O between
// two uses: without it a worker of the blocking pool, which never suspends, would keep
// its thread.
template <class Source, class Hold, class OnGrant, class OnRelease>
asio::awaitable<void> timed_worker(Source& source, Hold hold, const std::atomic<bool>& stop,
                                   std::atomic<int>& errors, std::atomic<std::uint64_t>& grants, OnGrant on_grant,
                                   OnRelease on_release) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t g0 = grants.load();
        const auto t0 = clock_type::now();
        auto lease = co_await acquire_from(source);
        if (!lease) {
            errors.fetch_add(1);
            co_return;
        }
        const auto t1 = clock_type::now();
        on_grant(ns_between(t0, t1), grants.fetch_add(1) - g0);
        if constexpr (std::is_same_v<Hold, suspended_hold>) {
            timer.expires_after(hold.duration);
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        } else {
            spin_for(hold);
        }
        if constexpr (!std::is_same_v<OnRelease, no_release>) on_release(t1, clock_type::now());
        lease.release();
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
}

// Source i's on_release(granted, released) for its workers: no_release stays
// no_release, so the spinning runs read no clock for it.
template <class OnRelease>
auto release_callback([[maybe_unused]] OnRelease& on_release, [[maybe_unused]] std::size_t i) {
    if constexpr (std::is_same_v<OnRelease, no_release>) return no_release{};
    else
        return [&on_release, i](clock_type::time_point granted, clock_type::time_point released) {
            on_release(i, granted, released);
        };
}

// One pool of `size` for `duration`: source i (a handle for fairpool, the pool itself
// for the baselines) runs workers_per_source[i] timed workers, each holding its leases
// for hold_per_source[i]; on_grant(i, wait_ns, overtaken) and on_release(i, granted,
// released) are called from every thread. The asynchronous designs run on 2 threads,
// the blocking pool on one thread per worker (io_threads_for).
template <class Design, class Hold, class OnGrant, class OnRelease = no_release>
void timed_run(std::size_t size, const std::vector<int>& workers_per_source, const std::vector<Hold>& hold_per_source,
               std::chrono::milliseconds duration, OnGrant on_grant, OnRelease on_release = {}) {
    using source_type = source_of<Design>;
    int workers = 0;
    for (const int w : workers_per_source) workers += w;
    const int threads = io_threads_for<Design>(workers);
    asio::io_context io(threads);
    auto pool = Design::make(io, size);
    std::vector<source_type> sources;
    sources.reserve(workers_per_source.size());
    for (std::size_t i = 0; i < workers_per_source.size(); ++i) sources.push_back(Design::source(*pool));
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    std::atomic<std::uint64_t> grants{0};
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const auto released = release_callback(on_release, i);
        for (int w = 0; w < workers_per_source[i]; ++w)
            asio::co_spawn(io,
                           timed_worker(
                               sources[i], hold_per_source[i], stop, errors, grants,
                               [&on_grant, i](std::int64_t wait, std::uint64_t overtaken) { on_grant(i, wait, overtaken); },
                               released),
                           asio::detached);
    }
    asio::steady_timer timer(io, duration);
    timer.async_wait([&stop](error_code) { stop = true; });
    run_on(io, threads);
    if (errors.load() != 0) {
        std::fprintf(stderr, "%s: %d errors\n", Design::name, errors.load());
        std::exit(1);
    }
}

// The same, every source's workers spinning for `hold`, no hold times measured.
template <class Design, class OnGrant>
void timed_run(std::size_t size, const std::vector<int>& workers_per_source, std::chrono::nanoseconds hold,
               std::chrono::milliseconds duration, OnGrant on_grant) {
    timed_run<Design>(size, workers_per_source, std::vector<std::chrono::nanoseconds>(workers_per_source.size(), hold),
                      duration, on_grant);
}

}  // namespace fairpool_bench
