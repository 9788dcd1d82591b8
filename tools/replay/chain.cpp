#include "chain.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "fairpool/trace/read.hpp"

namespace fairpool::replay {

namespace {

std::string at(const std::string& file, std::size_t line) { return file + ":" + std::to_string(line) + ": "; }

std::variant<input, input_error> read_one(const std::string& path) {
    input in;
    in.file = path == "-" ? "<stdin>" : path;
    std::ifstream file;
    if (path != "-") {
        file.open(path);
        if (!file) return input_error{path + ": cannot open: " + std::strerror(errno)};
    }
    auto parsed = trace::read(path == "-" ? std::cin : file);
    if (const auto* error = std::get_if<trace::read_error>(&parsed)) return input_error{error->describe(in.file)};
    in.trace = std::move(std::get<trace::trace>(parsed));
    return in;
}

// The *.trace files of a directory, in name order (a recorder names them
// segment-00000000.trace, segment-00000001.trace, …).
std::variant<std::vector<std::string>, input_error> traces_in(const std::string& directory) {
    std::error_code error;
    std::vector<std::string> files;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error))
        if (it->path().extension() == ".trace" && !it->is_directory(error)) files.push_back(it->path().string());
    if (error) return input_error{directory + ": cannot read the directory: " + error.message()};
    if (files.empty()) return input_error{directory + ": no *.trace file in the directory"};
    std::sort(files.begin(), files.end());
    return files;
}

core::scheduler restored(const trace::trace& t) {
    return trace::starting_scheduler(t.config, trace::snapshot_of(t));
}

// Appended, not `"`" + format(...)`: GCC 12 at -O3 warns a false -Wrestrict on that.
std::string quoted(const core::snapshot_record* r) {
    if (r == nullptr) return "nothing";
    std::string s = "`";
    s += trace::format(*r);
    s += '`';
    return s;
}

// Segment `next` must start in the state `s` was left in by replaying `previous`.
std::optional<input_error> continues(const core::scheduler& s, const input& previous, const input& next,
                                     bool checking) {
    const std::vector<core::snapshot_record> expected = trace::snapshot_of(s);
    const std::vector<trace::snapshot_line>& recorded = next.trace.snapshot;
    const std::size_t n = std::max(expected.size(), recorded.size());
    for (std::size_t i = 0; i < n; ++i) {
        const core::snapshot_record* want = i < expected.size() ? &expected[i] : nullptr;
        const core::snapshot_record* got = i < recorded.size() ? &recorded[i].record : nullptr;
        if (want && got && *want == *got) continue;
        const std::size_t line = got ? recorded[i].line : recorded.back().line + 1;
        return input_error{at(next.file, line) + "segment " + std::to_string(next.trace.segment->number) +
                               " does not continue segment " + std::to_string(previous.trace.segment->number) +
                               ": its snapshot has " + quoted(got) + ", the state after segment " +
                               std::to_string(previous.trace.segment->number) + " (" + previous.file + ") has " +
                               quoted(want),
                           checking ? 1 : 2};
    }
    return std::nullopt;
}

// What makes `next` not the segment after `previous`, short of replaying.
std::optional<input_error> not_next(const input& previous, const input& next) {
    const trace::trace& t = next.trace;
    if (!t.segment)
        return input_error{at(next.file, t.config_line) +
                           "not a segment (no 'segment' record): several traces replay only as consecutive segments"};
    if (!(t.config.resolved() == previous.trace.config.resolved()))
        return input_error{at(next.file, t.config_line) + "the config differs from segment " +
                           std::to_string(previous.trace.segment->number) + "'s (" + previous.file + ")"};
    const trace::segment_info& before = *previous.trace.segment;
    if (t.segment->number != before.number + 1)
        return input_error{at(next.file, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " follows segment " + std::to_string(before.number) + " (" + previous.file +
                           "): segments must be consecutive"};
    if (const auto& gap = previous.trace.gap)
        return input_error{at(previous.file, gap->line) + "gap: " + std::to_string(gap->events) +
                           " events were lost here; the recording cannot be replayed across it"};
    const std::uint64_t events = before.events_before + previous.trace.steps.size();
    if (t.segment->events_before != events)
        return input_error{at(next.file, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " says " + std::to_string(t.segment->events_before) + " events came before it, but segment " +
                           std::to_string(before.number) + " ends after " + std::to_string(events)};
    if (t.snapshot.empty())
        return input_error{at(next.file, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " has no snapshot (every segment after the first starts with one)"};
    return std::nullopt;
}

}  // namespace

std::variant<std::vector<input>, input_error> read_inputs(const std::vector<std::string>& paths) {
    std::vector<input> inputs;
    for (const std::string& path : paths) {
        std::vector<std::string> files{path};
        std::error_code error;
        if (path != "-" && std::filesystem::is_directory(path, error)) {
            auto listed = traces_in(path);
            if (auto* e = std::get_if<input_error>(&listed)) return std::move(*e);
            files = std::move(std::get<std::vector<std::string>>(listed));
        }
        for (const std::string& file : files) {
            auto one = read_one(file);
            if (auto* e = std::get_if<input_error>(&one)) return std::move(*e);
            inputs.push_back(std::move(std::get<input>(one)));
        }
    }
    return inputs;
}

std::variant<chain, input_error> link(std::vector<input> inputs, bool checking) {
    if (inputs.size() > 1 && !inputs.front().trace.segment)
        return input_error{at(inputs.front().file, inputs.front().trace.config_line) +
                           "not a segment (no 'segment' record): several traces replay only as consecutive segments"};
    for (std::size_t i = 1; i < inputs.size(); ++i)
        if (auto e = not_next(inputs[i - 1], inputs[i])) return std::move(*e);
    if (inputs.size() > 1) {
        core::scheduler s = restored(inputs.front().trace);
        for (std::size_t i = 0; i + 1 < inputs.size(); ++i) {
            for (const trace::step& step : inputs[i].trace.steps) (void)s.step(step.event);
            if (auto e = continues(s, inputs[i], inputs[i + 1], checking)) return std::move(*e);
        }
    }

    chain c;
    c.name = inputs.size() == 1 ? inputs.front().file
                                : inputs.front().file + " … " + inputs.back().file + " (" +
                                      std::to_string(inputs.size()) + " segments)";
    c.snapshot = trace::snapshot_of(inputs.front().trace);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        trace::trace& t = inputs[i].trace;
        if (i == 0) {
            c.merged.version = t.version;
            c.merged.config = t.config;
            c.merged.config_line = t.config_line;
            c.merged.segment = t.segment;
            c.merged.snapshot = std::move(t.snapshot);
        }
        c.merged.gap = t.gap;
        c.merged.version = std::max(c.merged.version, t.version);
        for (trace::step& s : t.steps) {
            c.merged.steps.push_back(std::move(s));
            c.file_of_step.push_back(i);
        }
        c.files.push_back(std::move(inputs[i].file));
    }
    return c;
}

}  // namespace fairpool::replay
