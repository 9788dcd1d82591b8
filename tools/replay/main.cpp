// fairpool-replay [--check] [--invariants] [--stats] [--minimize OUT] [--split N DIR]
//                 [--to-text OUT | --to-binary OUT] [--fault NAME] INPUT…
//
// Replays a trace (docs/CONTRACT.md sections 7, 7.2 and 7.3: text v1, v2, binary v3) through the core scheduler,
// from its snapshot if it has one; several inputs (files, or a directory of segment
// files) replay as one chain of consecutive segments. Without a mode it prints the
// canonical trace, every effect and error filled in. Exit status: 0 ok, 1 the trace
// fails a check, 2 unreadable or malformed input or bad usage.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "chain.hpp"
#include "convert.hpp"
#include "fairpool/model/planted_faults.hpp"
#include "replay.hpp"
#include "stream_check.hpp"

namespace {

constexpr const char* usage =
    "usage: fairpool-replay [--check] [--invariants] [--stats] [--minimize OUT] [--split N DIR]\n"
    "                       [--to-text OUT | --to-binary OUT] [--fault NAME] INPUT...\n"
    "  INPUT           a trace FILE (text v1, v2 or binary v3, told by its first bytes), - for\n"
    "                  standard input, or a DIRECTORY of segment files\n"
    "                  (its *.trace files in name order, segment-N.trace by N); several inputs\n"
    "                  are replayed as one recording: consecutive segments, each starting\n"
    "                  where the one before ended (else exit 2; 1 under --check), no gap\n"
    "                  between them\n"
    "  (no mode)       print the canonical trace with every effect and error filled in\n"
    "                  (the segments merged into one trace)\n"
    "  --check         compare with the effects and errors recorded in the input\n"
    "  --invariants    check the core against the reference model and the invariants\n"
    "  --stats         grants, rejections, checks and resets, wait percentiles, grants per\n"
    "                  handle, fairness (from a snapshot the counts include what came before it)\n"
    "  --minimize OUT  shrink a trace failing --invariants to a 1-minimal one, into OUT\n"
    "                  (from the first snapshot: the events after it are shrunk)\n"
    "  --split N DIR   cut the input into segments of N events (each with the snapshot\n"
    "                  before its first event), written to DIR/segment-NNNNNNNN.trace\n"
    "  --to-text OUT   write each input as recorded (not replayed) as canonical text (v3 as v2),\n"
    "                  into the file OUT (- for standard output), or with several inputs into the\n"
    "                  directory OUT, each under its own name\n"
    "  --to-binary OUT the same in binary trace format v3, canonically (4096 steps a block)\n"
    "  --fault NAME    plant a bug to test the tooling: reuse-dirty | lose-cancel | keep-dead\n"
    "A trace that ends in a gap (its recorder lost events) replays up to the gap, with a\n"
    "notice on standard error. The last segment of a recording whose process died while\n"
    "writing it replays up to where the write was cut, with a notice (left out if the cut\n"
    "comes before its first event).\n";

int bad_usage(const std::string& why) {
    std::cerr << "fairpool-replay: " << why << "\n" << usage;
    return 2;
}

int refused(const fairpool::replay::input_error& e) {
    std::cerr << e.message << "\n";
    return e.status;
}

int run(const fairpool::replay::chain& c, const fairpool::replay::options& o, bool check, bool invariants, bool stats,
        const std::string& minimize_to) {
    if (!check && !invariants && !stats && minimize_to.empty())
        return fairpool::replay::print_canonical(c, o, std::cout);
    if (check && fairpool::replay::check(c, o, std::cout) != 0) return 1;
    if (invariants && fairpool::replay::check_invariants(c, o, std::cout) != 0) return 1;
    if (stats) fairpool::replay::print_stats(c, o, std::cout);
    if (!minimize_to.empty()) return fairpool::replay::minimize(c, o, minimize_to, std::cout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false, invariants = false, stats = false;
    std::string minimize_to, split_to, convert_to;
    auto convert_format = fairpool::replay::target_format::text;
    std::uint64_t split_events = 0;
    std::vector<std::string> paths;
    fairpool::replay::options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--check") check = true;
        else if (arg == "--invariants") invariants = true;
        else if (arg == "--stats") stats = true;
        else if (arg == "--help" || arg == "-h") return std::cout << usage, 0;
        else if (arg == "--split") {
            if (i + 2 >= argc) return bad_usage("--split needs a number of events and a directory");
            const std::string n = argv[++i];
            if (n.empty() || n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos ||
                std::stoull(n) == 0)
                return bad_usage("--split needs a number of events from 1, not " + n);
            split_events = std::stoull(n);
            split_to = argv[++i];
        } else if (arg == "--to-text" || arg == "--to-binary") {
            if (i + 1 == argc) return bad_usage(arg + " needs an output file or directory");
            if (!convert_to.empty()) return bad_usage("--to-text and --to-binary: one conversion at a time");
            convert_to = argv[++i];
            convert_format = arg == "--to-text" ? fairpool::replay::target_format::text
                                                : fairpool::replay::target_format::binary;
        } else if (arg == "--minimize" || arg == "--fault") {
            if (i + 1 == argc) return bad_usage(arg + " needs a value");
            const std::string value = argv[++i];
            if (arg == "--minimize") minimize_to = value;
            else if (!(o.fault = fairpool::model::planted_fault(value))) return bad_usage("unknown fault " + value);
        } else if (arg.size() > 1 && arg[0] == '-') return bad_usage("unknown option " + arg);
        else paths.push_back(arg);
    }
    if (paths.empty()) return bad_usage("no trace given");
    if (split_events > 0 && (check || invariants || stats || !minimize_to.empty()))
        return bad_usage("--split is a mode of its own");
    if (std::count(paths.begin(), paths.end(), "-") > 1) return bad_usage("- (standard input) given twice");
    if (!convert_to.empty() && (check || invariants || stats || !minimize_to.empty() || split_events > 0))
        return bad_usage("--to-text and --to-binary are a mode of their own");

    if (check && !invariants && !stats && minimize_to.empty() && split_events == 0) {
        // A recording in v3 is checked as it is read, at the speed of the core.
        auto files = fairpool::replay::files_of(paths);
        if (const auto* error = std::get_if<fairpool::replay::input_error>(&files)) return refused(*error);
        if (const auto status = fairpool::replay::stream_check(std::get<std::vector<std::string>>(files), o, std::cout,
                                                               std::cerr))
            return *status;
    }

    auto inputs = fairpool::replay::read_inputs(paths);
    if (const auto* error = std::get_if<fairpool::replay::input_error>(&inputs)) return refused(*error);
    auto& [files, notices] = std::get<fairpool::replay::inputs>(inputs);
    if (!convert_to.empty()) {
        bool into_directory = files.size() > 1;
        for (const std::string& p : paths) into_directory = into_directory || std::filesystem::is_directory(p);
        const int status = fairpool::replay::convert(files, convert_format, convert_to, into_directory, std::cerr);
        for (const std::string& notice : notices) std::cerr << notice << "\n";
        return status;
    }
    auto linked = fairpool::replay::link(std::move(files), check);
    if (const auto* error = std::get_if<fairpool::replay::input_error>(&linked)) return refused(*error);
    const auto& c = std::get<fairpool::replay::chain>(linked);

    const int status = split_events > 0 ? fairpool::replay::split(c, o, split_events, split_to, std::cout)
                                        : run(c, o, check, invariants, stats, minimize_to);
    if (const auto& gap = c.merged.gap)
        std::cerr << fairpool::trace::where(c.last_file(), c.versions.back(), gap->line) << "gap: " << gap->events
                  << " events were lost after this point; nothing after it was recorded\n";
    for (const std::string& notice : notices) std::cerr << notice << "\n";
    return status;
}
