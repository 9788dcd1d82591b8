// Instructions per iteration of the core's scenarios (bench/core_scenarios.hpp),
// counted by callgrind: noise-free where time on a shared machine is not.
//
//   valgrind --tool=callgrind --toggle-collect='*measured*'
//       build-release/bench/core_instructions SCENARIO [ARG] ITERATIONS
//
// Only `measured` is counted (set-up is not); divide callgrind's total by ITERATIONS.
// bench/core_instructions.sh runs every scenario and prints the rows.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core_scenarios.hpp"

namespace {

using namespace fairpool::bench;

template <class Scenario>
[[gnu::noinline]] void measured(Scenario& s, std::uint64_t iterations) {
    for (std::uint64_t i = 0; i < iterations; ++i) s.iteration();
}

int usage() {
    std::fprintf(stderr, "usage: core_instructions cycle ITERATIONS | queued_waiters N ITERATIONS | "
                         "active_handles H ITERATIONS | snapshot N ITERATIONS\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return usage();
    const std::string scenario = argv[1];
    const auto number = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
    if (scenario == "cycle" && argc == 3) {
        cycle_scenario s;
        measured(s, number(2));
        return 0;
    }
    if (scenario == "snapshot" && argc == 4) {
        snapshot_scenario s(number(2));
        measured(s, number(3));
        return 0;
    }
    if ((scenario == "queued_waiters" || scenario == "active_handles") && argc == 4) {
        queued_scenario s = scenario == "queued_waiters" ? queued_scenario(number(2), queued_waiters_handles)
                                                         : queued_scenario(active_handles_waiters, number(2));
        measured(s, number(3));
        return s.steady() ? 0 : 1;
    }
    return usage();
}
