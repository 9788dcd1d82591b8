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
// that bolted on through counters, one design at a time. (The core's own benchmarks,
// bench/core_bench.cpp, are Google Benchmark.)
//
// Usage: scenarios [--quick] [--reps N]
//                  [--only round_trip|grid|hold_grid|inversions|tail|tenants|long_hold|recorder|recording_files]
//        scenarios --round-trip-cycles DESIGN N   (only N round trips of one design, no rows:
//        run under callgrind by bench/round_trip_instructions.py)
//        scenarios --round-trip-cycles-threaded DESIGN N   (the same, after starting and
//        joining one thread: bench/round_trip_instructions.py counts locked instructions)
//        scenarios --grid-modes SIZE WORKERS N   (one grid cell, N runs of every design,
//        interleaved: each thread mode's run count and median total, as rows)
//        scenarios --grid-one-thread-runs DESIGN N   (only N contended runs of one design on
//        one thread, no rows: the same, per contended acquire)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scenarios.hpp"

int main(int argc, char** argv) {
    using namespace fairpool_bench;
    using std::chrono::milliseconds;
    bool quick = false;
    int reps = 5;
    std::string only;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--only" && i + 1 < argc) only = argv[++i];
        else if (a == "--round-trip-cycles" && i + 2 < argc)
            return round_trip_cycles(argv[i + 1], std::strtoull(argv[i + 2], nullptr, 10)) ? 0 : 2;
        else if (a == "--round-trip-cycles-threaded" && i + 2 < argc)
            return round_trip_cycles(argv[i + 1], std::strtoull(argv[i + 2], nullptr, 10), true) ? 0 : 2;
        else if (a == "--grid-modes" && i + 3 < argc) {
            scenario_grid_modes(std::strtoull(argv[i + 1], nullptr, 10), std::max(1, std::atoi(argv[i + 2])),
                                std::max(1, std::atoi(argv[i + 3])));
            return 0;
        } else if (a == "--grid-one-thread-runs" && i + 2 < argc)
            return grid_one_thread_runs(argv[i + 1], std::atoi(argv[i + 2])) ? 0 : 2;
        else {
            std::fprintf(stderr,
                         "usage: %s [--quick] [--reps N] "
                         "[--only round_trip|grid|hold_grid|inversions|tail|tenants|long_hold|recorder|recording_files]\n",
                         argv[0]);
            return 2;
        }
    }
    if (quick) reps = 1;
    const auto want = [&](std::string_view s) { return only.empty() || only == s; };
    if (want("round_trip")) scenario_round_trip(reps, quick ? 20'000 : 200'000);
    if (want("grid")) scenario_grid(reps, 10);
    if (want("hold_grid")) scenario_hold_grid(reps, quick);
    if (want("inversions")) scenario_inversions(reps, 10);
    if (want("tail")) scenario_tail(std::min(reps, 3), milliseconds(quick ? 100 : 1000));
    if (want("tenants")) scenario_tenants(reps, milliseconds(quick ? 100 : 300));
    if (want("long_hold")) scenario_long_hold(reps, milliseconds(quick ? 100 : 500));
    if (want("recorder")) scenario_recorder(reps, quick ? 100'000 : 400'000);
    if (want("recording_files")) scenario_recording_files(quick ? 100'000 : 400'000, quick ? 1'000'000 : 10'000'000);
    return 0;
}
