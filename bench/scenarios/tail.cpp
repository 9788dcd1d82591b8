// Tail fairness, the scenario of HikariCP issue #2192 (a few threads sharing a pool
// half their number; the reporter saw single waits far above the mean while the mean
// looked healthy): 4 workers, 2 resources, each holding its resource for a fixed
// 20 µs, for `duration` (workers.hpp: timed_run). A fair pool bounds the worst wait by a small
// multiple of the mean (a worker waits for at most the holders ahead of it); a pool
// that lets a releaser or a newcomer take the resource back can make one worker wait
// many rounds. The waits include the OS descheduling a thread (on a busy machine that
// dominates the max), so the scenario also counts, per request, the grants made to
// others while it waited: a measure of the pool alone.
#include <algorithm>
#include <cstdio>
#include <mutex>

#include "common.hpp"
#include "scenarios.hpp"
#include "workers.hpp"

namespace fairpool_bench {

void scenario_tail(int reps, std::chrono::milliseconds duration) {
    const std::string name = "tail/hikari2192/workers=4/size=2/hold=20us";
    std::fprintf(stderr, "%s: %d reps x %lld ms\n", name.c_str(), reps, static_cast<long long>(duration.count()));
    std::vector<std::vector<std::int64_t>> waits(design_count), overtaken(design_count);
    for (int r = 0; r < reps; ++r)
        for_each_design([&](auto design, std::size_t d) {
            std::mutex m;
            timed_run<decltype(design)>(2, {1, 1, 1, 1}, std::chrono::microseconds(20), duration,
                                        [&](std::size_t, std::int64_t wait, std::uint64_t others) {
                                            const std::lock_guard lock(m);
                                            waits[d].push_back(wait);
                                            overtaken[d].push_back(static_cast<std::int64_t>(others));
                                        });
        });
    for_each_design([&](auto design, std::size_t d) {
        auto& w = waits[d];
        std::sort(w.begin(), w.end());
        double sum = 0;
        for (const auto x : w) sum += static_cast<double>(x);
        const double mean = w.empty() ? 0 : sum / static_cast<double>(w.size());
        const double max = w.empty() ? 0 : static_cast<double>(w.back());
        row(name, design.name, "wait_mean", mean, "ns");
        row(name, design.name, "wait_p99.9", quantile_sorted(w, 0.999), "ns");
        row(name, design.name, "wait_max", max, "ns");
        row(name, design.name, "max_over_mean", mean > 0 ? max / mean : 0, "ratio");
        auto& o = overtaken[d];
        std::sort(o.begin(), o.end());
        row(name, design.name, "grants_while_waiting_p99.9", quantile_sorted(o, 0.999), "count");
        row(name, design.name, "grants_while_waiting_max", o.empty() ? 0 : static_cast<double>(o.back()), "count");
        row(name, design.name, "grants", static_cast<double>(w.size()) / reps, "count");
    });
}

}  // namespace fairpool_bench
