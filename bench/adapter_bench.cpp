// The Boost.Asio adapter's uncontended acquire → release round trip, one thread: a
// completion handler releases its lease and starts the next acquire. Per iteration:
// one lock-free push and a drain for the acquire, one scheduler step, the completion
// posted to the handler's executor, then one push and a drain for the release.
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>

#include "fairpool/asio/pool.hpp"

namespace {

namespace asio = boost::asio;

struct connection {
    int id;
};

fairpool::pool_options one_slot() {
    fairpool::pool_options o;
    o.max_slots = 1;
    o.min_slots = 1;
    return o;
}

fairpool::pool<connection> make_pool(asio::io_context& io) {
    return fairpool::pool<connection>(io.get_executor(), one_slot(),
                                      []() -> asio::awaitable<connection> { co_return connection{1}; });
}

void round_trip_callback(benchmark::State& state) {
    asio::io_context io;
    auto pool = make_pool(io);
    io.run();
    for (auto _ : state) {
        state.PauseTiming();
        io.restart();
        std::int64_t left = 10'000;
        std::function<void(boost::system::error_code, fairpool::lease<connection>)> next;
        next = [&](boost::system::error_code, fairpool::lease<connection> l) {
            l.release();
            if (--left > 0) pool.async_acquire(next);
        };
        state.ResumeTiming();
        pool.async_acquire(next);
        io.run();
    }
    state.SetItemsProcessed(state.iterations() * 10'000);
    state.counters["ns_per_round_trip"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * 10'000, benchmark::Counter::kIsRate |
                                                                                 benchmark::Counter::kInvert);
}

void round_trip_coroutine(benchmark::State& state) {
    asio::io_context io;
    auto pool = make_pool(io);
    io.run();
    for (auto _ : state) {
        io.restart();
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            for (int i = 0; i < 10'000; ++i) {
                auto lease = co_await pool.async_acquire(asio::use_awaitable);
            }
        }, asio::detached);
        io.run();
    }
    state.SetItemsProcessed(state.iterations() * 10'000);
}

}  // namespace

BENCHMARK(round_trip_callback)->Unit(benchmark::kMillisecond);
BENCHMARK(round_trip_coroutine)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
