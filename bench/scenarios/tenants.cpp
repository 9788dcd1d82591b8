// Per-tenant fairness: ten tenants share a pool of 4; tenant 0 is greedy (20 concurrent
// workers), tenants 1..9 have one worker each. Every worker loops acquire → use the
// resource for ~1 µs → release → yield, for a fixed time (workers.hpp: timed_run). For fairpool
// each tenant is one handle; the baselines have no notion of a tenant. Jain's index
// over the 10 tenants' grant counts: 1 = equal shares, 0.206 = shares proportional to
// demand (20:1).
#include <cstdio>

#include "common.hpp"
#include "scenarios.hpp"
#include "workers.hpp"

namespace fairpool_bench {

void scenario_tenants(int reps, std::chrono::milliseconds duration) {
    constexpr std::size_t tenants = 10;
    const std::vector<int> workers = {20, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const std::string name = "tenants/greedy=20x/light=9/size=4";
    std::fprintf(stderr, "%s: %d reps x %lld ms\n", name.c_str(), reps, static_cast<long long>(duration.count()));
    std::vector<std::vector<std::uint64_t>> sums(design_count, std::vector<std::uint64_t>(tenants, 0));
    for (int r = 0; r < reps; ++r)
        for_each_design([&](auto design, std::size_t d) {
            std::vector<std::atomic<std::uint64_t>> grants(tenants);
            timed_run<decltype(design)>(4, workers, std::chrono::nanoseconds(1000), duration,
                                        [&grants](std::size_t t, std::int64_t, std::uint64_t) {
                                            grants[t].fetch_add(1, std::memory_order_relaxed);
                                        });
            for (std::size_t t = 0; t < tenants; ++t) sums[d][t] += grants[t].load();
        });
    for_each_design([&](auto design, std::size_t d) {
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
    });
}

}  // namespace fairpool_bench
