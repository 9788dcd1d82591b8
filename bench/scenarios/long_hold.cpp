// A tenant that holds 20× longer (issue 15): ten tenants share a pool of 4, as in
// tenants.cpp, but here tenant 0 (the greedy one) differs by how long it holds, not
// only by how often it asks. It runs 4 workers (enough to hold every slot alone), each
// holding its lease for 10 ms; tenants 1..9 run one worker each, holding for 500 µs.
// A holder suspends on a timer (workers.hpp: suspended_hold), so its lease stays out
// while the thread serves the others, as a server's connection stays out while its
// query is on the wire; the holds are long enough that a timer's lateness (some tens
// of µs, more on a busy machine: light_hold_mean and greedy_hold_mean say how long
// they really were) leaves the ratio near 20. Fair turns in grants still leave the
// greedy tenant most of the held time: in a round of ten grants it takes one and holds
// it 20× longer. fairpool runs as the other scenarios run it, and again with every
// handle capped at one lease out (max_leases_per_handle = 1; rows NAME/cap=1): each
// light tenant only ever has one worker, so the cap binds the greedy tenant alone and
// leaves the light tenants 3 of the 4 slots. Reported per design: the light tenants'
// waits (p50, p99, over every light acquire of every repetition) and their share of
// the held time (all nine, and the smallest one's), the greedy tenant's share, its
// most and mean concurrent leases and its median wait, how busy the slots were and
// the grants per repetition. Then fairpool alone, with and without the cap, with only
// 2 light tenants (light=2): too few to fill the 3 slots the cap leaves them, so what
// the cap costs shows as idle slots while the greedy tenant's workers wait.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "common.hpp"
#include "scenarios.hpp"
#include "workers.hpp"

namespace fairpool_bench {
namespace {

constexpr std::size_t pool_size = 4;
constexpr int greedy_workers = 4;
constexpr std::chrono::microseconds light_hold{500};
constexpr std::chrono::microseconds long_hold = 20 * light_hold;
using capped = fairpool_capped_design<1>;

// What one design's repetitions add up to. Only what happens inside each repetition's
// `duration` counts: a hold is clipped to it, a grant after it is left out (after the
// stop, the workers still queued are served once more while the others leave).
struct tally {
    explicit tally(std::size_t light) : held(light + 1, 0.0) {}
    std::vector<std::int64_t> light_waits, greedy_waits;
    std::vector<double> held;  // ns inside the windows, per tenant (0: the greedy one)
    double elapsed = 0;        // ns: the windows' length
    std::uint64_t light_grants = 0, greedy_grants = 0;
    // Over the whole run: the greedy tenant's leases as its workers count them, from a
    // grant's completion to the release call (never more than the pool counts out).
    int greedy_leases_max = 0;
};

template <class Design>
void run_once(std::chrono::milliseconds duration, tally& out) {
    const std::size_t tenants = out.held.size();
    std::mutex m;
    std::vector<std::atomic<std::int64_t>> held(tenants);
    std::atomic<int> greedy_leases{0}, greedy_leases_max{0};
    std::vector<int> workers(tenants, 1);
    workers[0] = greedy_workers;
    std::vector<suspended_hold> holds(tenants, suspended_hold{light_hold});
    holds[0] = suspended_hold{long_hold};
    const auto start = clock_type::now();
    const auto end = start + duration;
    timed_run<Design>(
        pool_size, workers, holds, duration,
        [&](std::size_t t, std::int64_t wait, std::uint64_t) {
            if (t == 0) {
                const int now = greedy_leases.fetch_add(1) + 1;
                int seen = greedy_leases_max.load();
                while (now > seen && !greedy_leases_max.compare_exchange_weak(seen, now)) {
                }
            }
            if (clock_type::now() >= end) return;
            const std::lock_guard lock(m);
            (t == 0 ? out.greedy_waits : out.light_waits).push_back(wait);
            ++(t == 0 ? out.greedy_grants : out.light_grants);
        },
        [&](std::size_t t, clock_type::time_point granted, clock_type::time_point released) {
            if (t == 0) greedy_leases.fetch_sub(1);
            const std::int64_t inside = ns_between(std::max(granted, start), std::min(released, end));
            if (inside > 0) held[t].fetch_add(inside, std::memory_order_relaxed);
        });
    out.elapsed += static_cast<double>(ns_between(start, end));
    for (std::size_t t = 0; t < tenants; ++t) out.held[t] += static_cast<double>(held[t].load());
    out.greedy_leases_max = std::max(out.greedy_leases_max, greedy_leases_max.load());
}

void rows(const std::string& name, const char* design, tally& s, int reps) {
    std::sort(s.light_waits.begin(), s.light_waits.end());
    std::sort(s.greedy_waits.begin(), s.greedy_waits.end());
    double all = 0, light = 0, light_min = 1e300;
    for (std::size_t t = 0; t < s.held.size(); ++t) {
        all += s.held[t];
        if (t > 0) light += s.held[t], light_min = std::min(light_min, s.held[t]);
    }
    const auto share = [all](double x) { return all > 0 ? x / all : 0.0; };
    const auto per = [](double x, std::uint64_t n) { return n > 0 ? x / static_cast<double>(n) : 0.0; };
    row(name, design, "light_wait_p50", quantile_sorted(s.light_waits, 0.5), "ns");
    row(name, design, "light_wait_p99", quantile_sorted(s.light_waits, 0.99), "ns");
    row(name, design, "light_held_share", share(light), "fraction");
    row(name, design, "light_held_share_min", share(light_min), "fraction");
    row(name, design, "light_hold_mean", per(light, s.light_grants), "ns");
    row(name, design, "greedy_held_share", share(s.held[0]), "fraction");
    row(name, design, "greedy_leases_max", s.greedy_leases_max, "count");
    row(name, design, "greedy_leases_mean", s.elapsed > 0 ? s.held[0] / s.elapsed : 0.0, "count");
    row(name, design, "greedy_hold_mean", per(s.held[0], s.greedy_grants), "ns");
    row(name, design, "greedy_wait_p50", quantile_sorted(s.greedy_waits, 0.5), "ns");
    row(name, design, "slots_busy", s.elapsed > 0 ? all / (static_cast<double>(pool_size) * s.elapsed) : 0.0,
        "fraction");
    row(name, design, "grants", static_cast<double>(s.light_grants + s.greedy_grants) / reps, "count");
}

// Every design with 9 light tenants; fairpool alone, with and without the cap, with
// `light` tenants otherwise.
void long_hold_case(std::size_t light, int reps, std::chrono::milliseconds duration) {
    const std::string name = "tenants/long_hold=20x/light=" + std::to_string(light) + "/size=4";
    const bool baselines = light == 9;
    std::fprintf(stderr, "%s: %d reps x %lld ms\n", name.c_str(), reps, static_cast<long long>(duration.count()));
    std::vector<tally> tallies(design_count, tally(light));
    tally capped_tally(light);
    for (int r = 0; r < reps; ++r) {
        if (baselines)
            for_each_design([&](auto design, std::size_t d) { run_once<decltype(design)>(duration, tallies[d]); });
        else
            run_once<fairpool_design>(duration, tallies[0]);
        run_once<capped>(duration, capped_tally);
    }
    if (capped_tally.greedy_leases_max > static_cast<int>(capped::cap)) {
        std::fprintf(stderr, "%s: the capped tenant held %d leases at once (cap %llu)\n", name.c_str(),
                     capped_tally.greedy_leases_max, static_cast<unsigned long long>(capped::cap));
        std::exit(1);
    }
    if (baselines) for_each_design([&](auto design, std::size_t d) { rows(name, design.name, tallies[d], reps); });
    else rows(name, fairpool_design::name, tallies[0], reps);
    rows(name + "/cap=" + std::to_string(capped::cap), capped::name, capped_tally, reps);
}

}  // namespace

void scenario_long_hold(int reps, std::chrono::milliseconds duration) {
    long_hold_case(9, reps, duration);
    long_hold_case(2, reps, duration);
}

}  // namespace fairpool_bench
