#pragma once
// The fleet scenarios (docs/guide/11-fleet-budget.md's failure table, measured): each
// runs replicas on a world and returns what the watcher and the allocator saw. The
// fleet test asserts on them; bench/fleet reports them as bench/results.json rows.
#include <cstdint>
#include <string>
#include <vector>

#include "fleet.hpp"

namespace fairpool::fleet {

struct figures {
    std::string scenario;  // "S1" ... "S7b"
    bool fence = false;
    std::uint64_t budget = 0;
    std::uint64_t max_connections = 0;  // the most backends of the fleet the watcher saw at once
    std::uint64_t samples = 0;          // the watcher's samples over the scenario
    std::uint64_t violations = 0;       // the allocator's count (Σ committed > B)
    std::uint64_t refused_logins = 0;   // spawns that failed: with the fence on, logins refused
    bool converged = false;             // the grants reached the fair shares the scenario expects
    double seconds_to_fair = -1;        // from the demand step (start, join, deploy) to fair grants
    double seconds_to_reuse = -1;       // S3: from the kill to its share granted to the others
    double utilisation = -1;            // S1: mean Σ backends / min(B, Σ demand) at steady state
    double script_calls_per_second = -1;
    bool saw_fallback = false;          // S5: every replica fell back while Redis was down
    std::string detail;                 // grants as the scenario ended, for a failure message
};

struct scenario_timing {
    std::chrono::milliseconds steady_window{1500};  // S1's utilisation window
    std::chrono::milliseconds converge_limit{15000};
};

// S1 steady state (wants 20/4/2 on 12 -> 6/4/2), S2 a fourth member joins (wants 6),
// S3 the largest member is killed (kill -9): one fleet, three figures.
std::vector<figures> run_s1_s2_s3(world& w, bool fence, scenario_timing t = {});
// S4 a member stopped (SIGSTOP) past L + G while the others want its share, until they
// have spawned into it (past B without the fence; refused logins with it).
figures run_s4_pause(world& w, bool fence, scenario_timing t = {});
// S5 Redis stopped past the lease (members fall back to min(grant, fallback = B / 4)),
// then restarted empty (learning, then fair shares again).
figures run_s5_redis_restart(world& w, bool fence, scenario_timing t = {});
// S6 a rolling deploy: 3 members, 3 more join, the first 3 leave.
figures run_s6_rolling_deploy(world& w, bool fence, scenario_timing t = {});
// S7a the static split B / N under the deploy surge (no budget client), S7b an
// allocator that frees a lowered grant at once (members report held <= grant): the
// negative controls, which must overshoot B.
figures run_s7a_static_split(world& w, scenario_timing t = {});
figures run_s7b_immediate_shrink(world& w, scenario_timing t = {});

}  // namespace fairpool::fleet
