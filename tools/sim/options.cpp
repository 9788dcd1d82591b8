#include "options.hpp"

#include "fairpool/model/planted_faults.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace fairpool::sim {

namespace {

bool parse_u64(std::string_view text, std::uint64_t& out) {
    if (text.empty()) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

bool parse_unit(const std::string& text, double& out) {
    if (text.empty()) return false;
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && std::isfinite(out) && out >= 0 && out <= 1;
}

}  // namespace

const char* usage() {
    return "usage: fairpool-sim [--seed N] [--seeds K] [--events M] [--handles H] [--fault-rate P]\n"
           "                    [--no-shutdown] [--out DIR] [--trace-always] [--quiet] [--help]\n"
           "                    [--plant-fault NAME] [--snapshot-every N]\n"
           "\n"
           "Deterministic simulation of the fairpool scheduler in virtual time: a random config,\n"
           "workload and fault profile per seed; every event is checked against the reference\n"
           "model and the invariants (docs/CONTRACT.md). Same seed, same run, byte for byte.\n"
           "\n"
           "  --seed N        first seed (default 1)\n"
           "  --seeds K       run K seeds: N, N+1, ..., N+K-1 (default 1)\n"
           "  --events M      events per seed, 1..10^7 (default 10000); a seed that shuts down\n"
           "                  runs on until `closed`\n"
           "  --handles H     tenants (handles) per seed, 1..4096 (default: random 1..12)\n"
           "  --fault-rate P  0..1, scales every fault probability (default 0.5; 0: no faults)\n"
           "  --no-shutdown   never shut down mid-load\n"
           "  --out DIR       where traces are written (default: .)\n"
           "  --trace-always  write every seed's trace, also when it passes\n"
           "  --quiet         print only failures and the summary\n"
           "  --snapshot-every N  every N events, snapshot the core (it must equal the\n"
           "                  model's) and go on with a core, model and invariant checker\n"
           "                  restored from it (docs/CONTRACT.md section 7.2); 0: never\n"
           "  --help          this text\n"
           "  --plant-fault NAME  test the tooling: plant a bug in the core's effects, as\n"
           "                  fairpool-replay --fault does: reuse-dirty | lose-cancel | keep-dead\n"
           "\n"
           "A failing seed writes DIR/fairpool-sim-SEED.trace, prints the breach and the command\n"
           "that replays it, and the run exits 1. Exit 0: every seed passed; 2: bad options.\n";
}

std::optional<options> parse(int argc, char** argv, std::string& error) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::optional<std::string> inline_value;
        if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            inline_value = arg.substr(eq + 1);
            arg.resize(eq);
        }
        const auto flag = [&](bool& target) {
            if (inline_value) {
                error = arg + " takes no value";
                return false;
            }
            target = true;
            return true;
        };
        const auto value = [&](std::string& into) {
            if (inline_value) {
                into = *inline_value;
                return true;
            }
            if (i + 1 >= argc) {
                error = arg + " needs a value";
                return false;
            }
            into = argv[++i];
            return true;
        };
        const auto number = [&](std::uint64_t& into, std::uint64_t lo, std::uint64_t hi) {
            std::string text;
            if (!value(text)) return false;
            if (!parse_u64(text, into) || into < lo || into > hi) {
                error = arg + ": '" + text + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi);
                return false;
            }
            return true;
        };

        bool ok = false;
        bool no_shutdown = false;
        if (arg == "--seed") {
            ok = number(o.seed, 0, ~std::uint64_t{0});
        } else if (arg == "--seeds") {
            ok = number(o.seeds, 1, std::uint64_t{1} << 40);
        } else if (arg == "--events") {
            ok = number(o.run.events, 1, 10'000'000);  // the trace is kept in memory (~150 bytes an event)
        } else if (arg == "--handles") {
            std::uint64_t h = 0;
            ok = number(h, 1, 4096);
            o.run.handles = h;
        } else if (arg == "--fault-rate") {
            std::string text;
            ok = value(text);
            if (ok && !parse_unit(text, o.run.fault_rate)) {
                error = arg + ": '" + text + "' is not a number in 0..1";
                ok = false;
            }
        } else if (arg == "--no-shutdown") {
            ok = flag(no_shutdown);
            if (ok) o.run.shutdown = false;
        } else if (arg == "--out") {
            ok = value(o.out);
            if (ok && o.out.empty()) error = "--out: empty directory name", ok = false;
        } else if (arg == "--trace-always") {
            ok = flag(o.trace_always);
        } else if (arg == "--quiet") {
            ok = flag(o.quiet);
        } else if (arg == "--plant-fault") {
            ok = value(o.run.plant_fault);
            if (ok && model::planted_fault(o.run.plant_fault) == nullptr)
                error = "--plant-fault: unknown fault '" + o.run.plant_fault + "'", ok = false;
        } else if (arg == "--snapshot-every") {
            ok = number(o.run.snapshot_every, 0, ~std::uint64_t{0});
        } else if (arg == "--help" || arg == "-h") {
            ok = flag(o.help);
        } else {
            error = "unknown option " + arg;
        }
        if (!ok) return std::nullopt;
    }
    if (o.seeds - 1 > ~std::uint64_t{0} - o.seed) {
        error = "--seed + --seeds goes past 2^64-1";
        return std::nullopt;
    }
    return o;
}

}  // namespace fairpool::sim
