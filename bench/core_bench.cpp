// Per-step cost of the core scheduler in time, and its flatness in queue depth and in
// the number of active handles (docs/CONTRACT.md invariant 10: O(log W + effects)).
// Scenarios: bench/core_scenarios.hpp; instructions: bench/core_instructions.cpp.
#include <benchmark/benchmark.h>

#include "core_scenarios.hpp"

namespace {

using namespace fairpool::bench;

void cycle(benchmark::State& state) {
    cycle_scenario s;
    for (auto _ : state) s.iteration();
    state.SetItemsProcessed(state.iterations());
}

void queued(benchmark::State& state, std::uint64_t waiters, std::uint64_t handles) {
    queued_scenario s(waiters, handles);
    for (auto _ : state) s.iteration();
    if (!s.steady()) state.SkipWithError("queue depth drifted");
    state.SetItemsProcessed(state.iterations());
}

void queued_waiters(benchmark::State& state) {
    queued(state, static_cast<std::uint64_t>(state.range(0)), queued_waiters_handles);
}

void active_handles(benchmark::State& state) {
    queued(state, active_handles_waiters, static_cast<std::uint64_t>(state.range(0)));
}

void snapshot(benchmark::State& state) {
    snapshot_scenario s(static_cast<std::uint64_t>(state.range(0)));
    for (auto _ : state) s.iteration();
    state.counters["records"] = static_cast<double>(s.records());
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(cycle);
BENCHMARK(queued_waiters)->Arg(10)->Arg(1'000)->Arg(100'000);
BENCHMARK(active_handles)->Arg(1)->Arg(100)->Arg(10'000);
BENCHMARK(snapshot)->Arg(10)->Arg(100'000);
BENCHMARK_MAIN();
