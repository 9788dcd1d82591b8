// fairpool-replay [--check] [--invariants] [--stats] [--minimize OUT] [--fault NAME] FILE|-
//
// Replays a trace (docs/CONTRACT.md section 7) through the core scheduler. Without a
// mode it prints the canonical trace, every effect and error filled in. Exit status:
// 0 ok, 1 the trace fails a check, 2 unreadable or malformed input or bad usage.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "fairpool/model/planted_faults.hpp"
#include "fairpool/trace/read.hpp"
#include "replay.hpp"

namespace {

constexpr const char* usage =
    "usage: fairpool-replay [--check] [--invariants] [--stats] [--minimize OUT] [--fault NAME] FILE|-\n"
    "  (no mode)       print the canonical trace with every effect and error filled in\n"
    "  --check         compare with the effects and errors recorded in FILE\n"
    "  --invariants    check the core against the reference model and the invariants\n"
    "  --stats         grants, rejections, checks and resets, wait percentiles, grants per\n"
    "                  handle, fairness\n"
    "  --minimize OUT  shrink a trace failing --invariants to a 1-minimal one, into OUT\n"
    "  --fault NAME    plant a bug to test the tooling: reuse-dirty | lose-cancel | keep-dead\n";

int bad_usage(const std::string& why) {
    std::cerr << "fairpool-replay: " << why << "\n" << usage;
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false, invariants = false, stats = false;
    std::string minimize_to, path;
    fairpool::replay::options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--check") check = true;
        else if (arg == "--invariants") invariants = true;
        else if (arg == "--stats") stats = true;
        else if (arg == "--help" || arg == "-h") return std::cout << usage, 0;
        else if (arg == "--minimize" || arg == "--fault") {
            if (i + 1 == argc) return bad_usage(arg + " needs a value");
            const std::string value = argv[++i];
            if (arg == "--minimize") minimize_to = value;
            else if (!(o.fault = fairpool::model::planted_fault(value))) return bad_usage("unknown fault " + value);
        } else if (arg.size() > 1 && arg[0] == '-') return bad_usage("unknown option " + arg);
        else if (!path.empty()) return bad_usage("one trace at a time");
        else path = arg;
    }
    if (path.empty()) return bad_usage("no trace given");

    std::ifstream file;
    if (path != "-") {
        file.open(path);
        if (!file) {
            std::cerr << path << ": cannot open: " << std::strerror(errno) << "\n";
            return 2;
        }
    }
    o.file = path == "-" ? "<stdin>" : path;
    auto parsed = fairpool::trace::read(path == "-" ? std::cin : file);
    if (const auto* error = std::get_if<fairpool::trace::read_error>(&parsed)) {
        std::cerr << error->describe(o.file) << "\n";
        return 2;
    }
    const auto& t = std::get<fairpool::trace::trace>(parsed);

    if (!check && !invariants && !stats && minimize_to.empty())
        return fairpool::replay::print_canonical(t, o, std::cout);
    if (check && fairpool::replay::check(t, o, std::cout) != 0) return 1;
    if (invariants && fairpool::replay::check_invariants(t, o, std::cout) != 0) return 1;
    if (stats) fairpool::replay::print_stats(t, o, std::cout);
    if (!minimize_to.empty()) return fairpool::replay::minimize(t, o, minimize_to, std::cout);
    return 0;
}
