// The contended grid with real holds: W coroutine workers, grid_cycles_per_worker cycles
// each, every lease held across one asynchronous operation before its release, the
// shape of a pool in front of a backend (a connection stays out while its query is on
// the wire). Two holds: a zero-delay asio::post round trip (hold=post) and a 20 µs
// steady_timer wait (hold=timer20us). The asynchronous designs run on an io_context of
// 2 threads, as the hold-nothing grid (contended.cpp) does; the blocking pool
// (mutex_condvar) on one io thread per worker (workers.hpp: io_threads_for), the
// convention of timed_run: on 2 threads its two threads would park in acquire with
// none left to resume a suspended holder, a deadlock. Its threads are started by
// run_on while its first workers already run, so its total includes part of starting
// them; and "both threads" has no meaning for it (no runs_on_both_threads row).
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "scenarios.hpp"
#include "workers.hpp"

namespace fairpool_bench {
namespace {

struct cell {
    std::size_t size;
    int workers;
};

std::size_t design_index(std::string_view name) {
    std::size_t index = design_count;
    for_each_design([&](auto design, std::size_t d) {
        if (name == design.name) index = d;
    });
    return index;
}

// Every cell of one hold kind, each design interleaved run by run, `reps` runs each.
template <class Hold>
void hold_cells(const char* hold_name, int reps, const std::vector<cell>& cells) {
    const std::size_t fairpool = design_index(fairpool_design::name);
    const std::size_t servicing_task = design_index(servicing_task_design::name);
    const std::size_t channel = design_index(channel_design::name);
    for (const cell c : cells) {
        const std::string name = std::string("grid_hold/hold=") + hold_name + "/size=" + std::to_string(c.size) +
                                 "/workers=" + std::to_string(c.workers);
        std::fprintf(stderr, "%s: %d reps\n", name.c_str(), reps);
        const std::size_t n = static_cast<std::size_t>(c.workers) * grid_cycles_per_worker;
        std::vector<std::vector<double>> totals(design_count), handlers(design_count);
        std::vector<std::size_t> both_threads(design_count, 0);
        std::vector<std::vector<std::int64_t>> waits(design_count);
        for (int r = 0; r < reps; ++r)
            for_each_design([&](auto design, std::size_t d) {
                using Design = decltype(design);
                counted_run run(n);
                const run_costs costs = contended_once<Design, Hold>(c.size, c.workers, grid_cycles_per_worker,
                                                                     io_threads_for<Design>(c.workers), run);
                totals[d].push_back(static_cast<double>(ns_between(run.start, run.end)) / 1000.0);
                handlers[d].push_back(static_cast<double>(costs.handlers) / static_cast<double>(n));
                if (costs.both_threads) ++both_threads[d];
                waits[d].insert(waits[d].end(), run.waits.begin(), run.waits.end());
            });
        for_each_design([&](auto design, std::size_t d) {
            using Design = decltype(design);
            auto& w = waits[d];
            std::sort(w.begin(), w.end());
            row(name, design.name, "total", median(totals[d]), "us");
            row(name, design.name, "wait_p50", quantile_sorted(w, 0.5), "ns");
            row(name, design.name, "wait_p99", quantile_sorted(w, 0.99), "ns");
            if constexpr (!blocking_source<source_of<Design>>)
                row(name, design.name, "runs_on_both_threads", static_cast<double>(both_threads[d]), "count");
            row(name, design.name, "handlers_per_cycle", median(handlers[d]), "count");
        });
        const double fairpool_total = median(totals[fairpool]);
        row(name, "fairpool", "total_vs_servicing_task", fairpool_total / median(totals[servicing_task]), "ratio");
        row(name, "fairpool", "total_vs_channel", fairpool_total / median(totals[channel]), "ratio");
    }
}

}  // namespace

void scenario_hold_grid(int reps, bool quick) {
    std::vector<cell> cells;
    for (const std::size_t size : {4, 8, 16})
        for (const int workers : {16, 64, 256})
            if (!quick || (size == 4 && workers <= 64)) cells.push_back({size, workers});
    hold_cells<post_hold>("post", reps, cells);
    hold_cells<timer_hold<20>>("timer20us", reps, cells);
}

}  // namespace fairpool_bench
