// Contended runs: W coroutine workers, C cycles each, zero hold — the grid of the
// public Rust pool benchmark, and the count of order inversions.
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common.hpp"
#include "scenarios.hpp"
#include "workers.hpp"

namespace fairpool_bench {
namespace {

// `runs` contended runs one after the other on one pool and one thread: the part of a
// run that repeats (spawning the workers, their cycles) is all that grows with `runs`.
template <class Design>
void contended_runs_on_one_pool(int runs) {
    asio::io_context io(1);
    auto pool = Design::make(io, grid_one_thread_size);
    using source_type = decltype(Design::source(*pool));
    std::vector<source_type> sources;
    sources.reserve(static_cast<std::size_t>(grid_one_thread_workers));
    for (int w = 0; w < grid_one_thread_workers; ++w) sources.push_back(Design::source(*pool));
    const std::size_t n = static_cast<std::size_t>(grid_one_thread_workers) * grid_cycles_per_worker;
    for (int r = 0; r < runs; ++r) {
        counted_run run(n);
        run.workers_left = grid_one_thread_workers;
        for (auto& source : sources)
            asio::co_spawn(io, counted_worker(source, grid_cycles_per_worker, run), asio::detached);
        io.restart();
        io.run();
        if (run.errors.load() != 0 || run.completed.load() != n) {
            std::fprintf(stderr, "%s: %d errors, %zu of %zu completed\n", Design::name, run.errors.load(),
                         run.completed.load(), n);
            std::exit(1);
        }
    }
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

}  // namespace

bool grid_one_thread_runs(const char* design, int runs) {
    return with_design_named(design, [&](auto d) { contended_runs_on_one_pool<decltype(d)>(runs); });
}

void scenario_grid(int reps, int cycles) {
    for (const std::size_t size : {4, 8, 16})
        for (const int workers : {4, 16, 64, 256}) {
            const std::string name = "grid/size=" + std::to_string(size) + "/workers=" + std::to_string(workers);
            std::fprintf(stderr, "%s: %d reps\n", name.c_str(), reps);
            const std::size_t n = static_cast<std::size_t>(workers) * static_cast<std::size_t>(cycles);
            std::vector<std::vector<double>> totals(design_count), handlers(design_count), per_drain(design_count);
            // The same totals by the mode the run settled in: one thread or both (common.hpp).
            std::vector<std::vector<double>> one_thread(design_count), both_threads(design_count);
            std::vector<std::vector<std::int64_t>> waits(design_count);
            for (int r = 0; r < reps; ++r)
                for_each_design([&](auto design, std::size_t d) {
                    counted_run run(n);
                    const run_costs costs = contended_once<decltype(design)>(size, workers, cycles, 2, run);
                    totals[d].push_back(static_cast<double>(ns_between(run.start, run.end)) / 1000.0);
                    (costs.both_threads ? both_threads : one_thread)[d].push_back(totals[d].back());
                    handlers[d].push_back(static_cast<double>(costs.handlers) / static_cast<double>(n));
                    per_drain[d].push_back(costs.commands_per_drain);
                    waits[d].insert(waits[d].end(), run.waits.begin(), run.waits.end());
                });
            // fairpool with the flight recorder on, beside it (its rows: NAME/recorder).
            std::vector<double> recorded_totals;
            std::vector<std::int64_t> recorded_waits;
            for (int r = 0; r < reps; ++r) {
                counted_run run(n);
                contended_once<fairpool_recording_design>(size, workers, cycles, 2, run);
                recorded_totals.push_back(static_cast<double>(ns_between(run.start, run.end)) / 1000.0);
                recorded_waits.insert(recorded_waits.end(), run.waits.begin(), run.waits.end());
            }
            std::sort(recorded_waits.begin(), recorded_waits.end());
            row(name + "/recorder", "fairpool", "total", median(recorded_totals), "us");
            row(name + "/recorder", "fairpool", "total_vs_off", median(recorded_totals) / median(totals[0]), "ratio");
            row(name + "/recorder", "fairpool", "wait_p50", quantile_sorted(recorded_waits, 0.5), "ns");
            row(name + "/recorder", "fairpool", "wait_p99", quantile_sorted(recorded_waits, 0.99), "ns");
            row(name + "/recorder", "fairpool", "wait_max", static_cast<double>(recorded_waits.back()), "ns");
            for_each_design([&](auto design, std::size_t d) {
                auto& w = waits[d];
                std::sort(w.begin(), w.end());
                row(name, design.name, "total", median(totals[d]), "us");
                row(name, design.name, "runs_on_both_threads", static_cast<double>(both_threads[d].size()), "count");
                if (!one_thread[d].empty()) row(name, design.name, "total_one_thread", median(one_thread[d]), "us");
                if (!both_threads[d].empty()) row(name, design.name, "total_both_threads", median(both_threads[d]), "us");
                row(name, design.name, "wait_p50", quantile_sorted(w, 0.5), "ns");
                row(name, design.name, "wait_p99", quantile_sorted(w, 0.99), "ns");
                row(name, design.name, "wait_p99.9", quantile_sorted(w, 0.999), "ns");
                row(name, design.name, "wait_max", static_cast<double>(w.back()), "ns");
                row(name, design.name, "handlers_per_cycle", median(handlers[d]), "count");
                if (d == 0) row(name, design.name, "commands_per_drain", median(per_drain[d]), "count");
            });
        }
}

// `runs` runs of one grid cell per design, interleaved run by run: how many settled on
// one thread and how many on both (common.hpp), and each mode's median total. A cell's
// runs are bimodal, for every design: a run whose second thread joins in costs several
// times one that stays on one thread, and which mode a run lands in moves with the
// machine more than with the design, so the grid's medians mix the two. Compared mode by
// mode over many runs, the designs' ratios stand still.
void scenario_grid_modes(std::size_t size, int workers, int runs) {
    const std::string name = "grid_modes/size=" + std::to_string(size) + "/workers=" + std::to_string(workers);
    std::fprintf(stderr, "%s: %d runs\n", name.c_str(), runs);
    const std::size_t n = static_cast<std::size_t>(workers) * grid_cycles_per_worker;
    std::vector<std::vector<double>> one_thread(design_count), both_threads(design_count);
    for (int r = 0; r < runs; ++r)
        for_each_design([&](auto design, std::size_t d) {
            counted_run run(n);
            const run_costs costs = contended_once<decltype(design)>(size, workers, grid_cycles_per_worker, 2, run);
            (costs.both_threads ? both_threads : one_thread)[d].push_back(
                static_cast<double>(ns_between(run.start, run.end)) / 1000.0);
        });
    for_each_design([&](auto design, std::size_t d) {
        row(name, design.name, "runs_one_thread", static_cast<double>(one_thread[d].size()), "count");
        row(name, design.name, "runs_both_threads", static_cast<double>(both_threads[d].size()), "count");
        if (!one_thread[d].empty()) row(name, design.name, "total_one_thread", median(one_thread[d]), "us");
        if (!both_threads[d].empty()) row(name, design.name, "total_both_threads", median(both_threads[d]), "us");
    });
}

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
        std::vector<std::uint64_t> inversions(design_count, 0), grants(design_count, 0);
        for (int r = 0; r < reps; ++r)
            for_each_design([&](auto design, std::size_t d) {
                counted_run run(n);
                contended_once<decltype(design)>(size, workers, cycles, threads, run);
                inversions[d] += count_inversions(run.served);
                grants[d] += n;
            });
        for_each_design([&](auto design, std::size_t d) {
            row(name, design.name, "inversions_per_1000_grants",
                1000.0 * static_cast<double>(inversions[d]) / static_cast<double>(grants[d]), "count");
        });
    }
}

}  // namespace fairpool_bench
