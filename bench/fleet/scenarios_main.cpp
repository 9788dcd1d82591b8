// fleet_scenarios: the fleet suite's scenarios (tests/fleet/scenarios.hpp) run for their
// figures, printed as bench rows (one JSON object per line) for bench/results.json:
// scenario "fleet/S1" ... "fleet/S7b", design "fence_off", "fence_on" or "control".
//
//   fleet_scenarios REPLICA_PROGRAM   (FAIRPOOL_REDIS_SERVER names redis-server)
#include <cstdio>
#include <string>

#include "scenarios.hpp"

namespace {

void row(const fairpool::fleet::figures& f, const char* design, const char* metric, double value, const char* unit) {
    if (value < 0) return;  // not measured in this scenario
    std::printf("{\"scenario\": \"fleet/%s\", \"design\": \"%s\", \"metric\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n",
                f.scenario.c_str(), design, metric, value, unit);
}

void rows(const fairpool::fleet::figures& f, const char* design) {
    row(f, design, "max_connections", static_cast<double>(f.max_connections), "connections");
    row(f, design, "budget", static_cast<double>(f.budget), "connections");
    row(f, design, "violations", static_cast<double>(f.violations), "runs");
    row(f, design, "refused_logins", static_cast<double>(f.refused_logins), "logins");
    row(f, design, "time_to_fair", f.seconds_to_fair < 0 ? -1 : f.seconds_to_fair * 1e6, "us");
    row(f, design, "time_to_reuse", f.seconds_to_reuse < 0 ? -1 : f.seconds_to_reuse * 1e6, "us");
    row(f, design, "utilisation", f.utilisation, "fraction");
    row(f, design, "script_calls_per_second", f.script_calls_per_second, "calls/s");
    std::fflush(stdout);
    std::fprintf(stderr, "%s %s: max %llu of %llu, %s\n", f.scenario.c_str(), design,
                 static_cast<unsigned long long>(f.max_connections), static_cast<unsigned long long>(f.budget),
                 f.converged ? "converged" : "NOT converged");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fleet_scenarios REPLICA_PROGRAM\n");
        return 2;
    }
    using namespace fairpool::fleet;
    world w(argv[1], 12);
    scenario_timing t;
    t.steady_window = std::chrono::seconds(5);
    for (const bool fence : {false, true}) {
        const char* design = fence ? "fence_on" : "fence_off";
        for (const auto& f : run_s1_s2_s3(w, fence, t)) rows(f, design);
        rows(run_s4_pause(w, fence, t), design);
        rows(run_s5_redis_restart(w, fence, t), design);
        rows(run_s6_rolling_deploy(w, fence, t), design);
    }
    rows(run_s7a_static_split(w, t), "control");
    rows(run_s7b_immediate_shrink(w, t), "control");
    // What the fleet's timings were (the figures' context).
    std::printf("{\"scenario\": \"fleet/settings\", \"design\": \"fleet\", \"metric\": \"refresh\", \"value\": %lld, \"unit\": \"us\"}\n",
                static_cast<long long>(w.refresh.count()) * 1000);
    std::printf("{\"scenario\": \"fleet/settings\", \"design\": \"fleet\", \"metric\": \"lease\", \"value\": %lld, \"unit\": \"us\"}\n",
                static_cast<long long>(w.lease.count()) * 1000);
    std::printf("{\"scenario\": \"fleet/settings\", \"design\": \"fleet\", \"metric\": \"grace\", \"value\": %lld, \"unit\": \"us\"}\n",
                static_cast<long long>(w.grace.count()) * 1000);
    return 0;
}
