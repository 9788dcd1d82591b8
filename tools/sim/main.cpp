// fairpool-sim: deterministic simulation of the fairpool scheduler (docs/CONTRACT.md,
// section 10), in the spirit of TigerBeetle's VOPR. Each seed draws a configuration,
// a workload and a fault profile, then plays the adapter in virtual time, checking the
// core against the reference model and the invariants at every event. A failing seed
// writes its trace and prints the command that replays it.
//
// This file: options, the sweep over seeds, traces on disk, the summary.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "options.hpp"
#include "simulation.hpp"
#include "summary.hpp"

namespace {

using namespace fairpool::sim;

std::string trace_path(const options& o, std::uint64_t seed) {
    return (std::filesystem::path(o.out) / ("fairpool-sim-" + std::to_string(seed) + ".trace")).string();
}

// Writes the seed's trace; returns the line of its last event, or 0 on an I/O error.
std::size_t save_trace(const simulation& sim, const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return 0;
    const std::size_t line = sim.write_trace(out);
    out.flush();
    return out ? std::max<std::size_t>(line, 1) : 0;
}

// The command line that reruns just this seed.
std::string rerun_command(const char* program, const options& o, std::uint64_t seed) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.17g", o.run.fault_rate);
    std::string cmd = std::string(program) + " --seed " + std::to_string(seed) + " --events " +
                      std::to_string(o.run.events) + " --fault-rate " + rate;
    if (o.run.handles) cmd += " --handles " + std::to_string(*o.run.handles);
    if (!o.run.shutdown) cmd += " --no-shutdown";
    if (!o.run.plant_fault.empty()) cmd += " --plant-fault " + o.run.plant_fault;
    if (o.run.snapshot_every) cmd += " --snapshot-every " + std::to_string(o.run.snapshot_every);
    if (o.out != ".") cmd += " --out " + o.out;
    return cmd;
}

void print_seed(const seed_result& r) {
    std::printf("seed %llu: %s, %llu events, %.3f s virtual%s | %s\n", static_cast<unsigned long long>(r.seed),
                r.failure ? "FAIL" : "ok", static_cast<unsigned long long>(r.events),
                static_cast<double>(r.virtual_time) / 1e9,
                r.shut_down ? (r.closed ? ", shut down, closed" : ", shut down") : "", r.scenario.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::string error;
    const std::optional<options> parsed = parse(argc, argv, error);
    if (!parsed) {
        std::fprintf(stderr, "fairpool-sim: %s\n%s", error.c_str(), usage());
        return 2;
    }
    const options& o = *parsed;
    if (o.help) {
        std::fputs(usage(), stdout);
        return 0;
    }

    const auto wall_start = std::chrono::steady_clock::now();  // for the printout only
    summary totals;
    int status = 0;
    for (std::uint64_t i = 0; i < o.seeds; ++i) {
        const std::uint64_t seed = o.seed + i;
        simulation sim(seed, o.run);
        const seed_result r = sim.run();
        totals.add(r);
        if (!o.quiet) print_seed(r);

        if (r.failure || o.trace_always) {
            const std::string path = trace_path(o, seed);
            const std::size_t line = save_trace(sim, path);
            if (line == 0) {
                std::fprintf(stderr, "fairpool-sim: cannot write %s\n", path.c_str());
                status = 1;
                if (!r.failure) break;
            }
            if (r.failure) {
                std::fflush(stdout);
                std::fprintf(stderr, "fairpool-sim: seed %llu FAILED at event %llu (%s:%zu):\n  %s\n",
                             static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.events),
                             path.c_str(), line, r.failure->c_str());
                std::fprintf(stderr, "  scenario: %s\n", r.scenario.c_str());
                if (!r.found_by_lockstep)
                    std::fprintf(stderr,
                                 "  (a check of the simulator itself; replay shows the trace, --invariants may pass)\n");
                const std::string planted = o.run.plant_fault.empty() ? "" : " --fault " + o.run.plant_fault;
                std::fprintf(stderr, "  reproduce: build/tools/fairpool-replay --invariants%s %s\n", planted.c_str(),
                             path.c_str());
                std::fprintf(stderr, "  or rerun:  %s\n", rerun_command(argv[0], o, seed).c_str());
                status = 1;
                break;
            }
        }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    std::fflush(stderr);
    totals.print(stdout, wall);
    return status;
}
