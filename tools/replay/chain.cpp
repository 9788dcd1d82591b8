#include "chain.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/segment_order.hpp"
#include "fairpool/trace/snapshots.hpp"

namespace fairpool::replay {

namespace {

// "FILE:LINE: " in a text trace, "FILE: byte OFFSET: " in a binary one.
std::string at(const input& in, std::size_t position) { return trace::where(in.file, in.trace.version, position); }

std::string name_of(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::variant<input, input_error> parsed(const std::string& file, trace::read_result read) {
    if (const auto* error = std::get_if<trace::read_error>(&read)) return input_error{error->describe(file)};
    return input{file, std::move(std::get<trace::trace>(read))};
}

}  // namespace

std::variant<std::string, input_error> contents_of(const std::string& path) {
    std::ifstream file;
    if (path != "-") {
        file.open(path, std::ios::binary);
        if (!file) return input_error{path + ": cannot open: " + std::strerror(errno)};
    }
    std::ostringstream text;
    text << (path == "-" ? std::cin : file).rdbuf();
    if ((path == "-" ? std::cin : file).bad()) return input_error{name_of(path) + ": read error"};
    return std::move(text).str();
}

namespace {

std::variant<input, input_error> read_one(const std::string& path) {
    auto text = contents_of(path);
    if (auto* e = std::get_if<input_error>(&text)) return std::move(*e);
    return parsed(name_of(path), trace::read(std::get<std::string>(text)));
}

// Where a file its recorder was writing when its process died was cut, if it was: at
// the first line that starts with a NUL byte (the hole a cut write leaves,
// flight_writer.cpp), or at an unterminated last line (a writer that wrote at any byte);
// at 0 in an empty file. A step whose effects or error the cut line belongs to is cut
// with it: its effects cannot be known to be all there.
std::optional<std::size_t> cut_in(std::string_view text) {
    using namespace std::string_view_literals;
    if (text.empty() || text.front() == '\0') return 0;
    if (const std::size_t hole = text.find("\n\0"sv); hole != std::string_view::npos)
        return hole + 1;  // the start of a cut write: whole steps before it
    if (text.back() == '\n') return std::nullopt;
    const std::size_t last = text.rfind('\n');
    if (last == std::string_view::npos) return 0;
    if (text[last + 1] != '=' && text[last + 1] != '!') return last + 1;
    const std::size_t event = text.rfind("\n@"sv, last);
    return event == std::string_view::npos ? last + 1 : event + 1;
}

std::size_t line_at(std::string_view text, std::size_t offset) {
    const std::string_view before = text.substr(0, offset);
    return static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n')) + 1;
}

bool holds_an_event(std::string_view text) {
    return text.starts_with('@') || text.find("\n@") != std::string_view::npos;
}

// What is left of a file cut before its first event: nothing, or the start of a trace
// (header, config, segment record, snapshot) that stops short.
bool cut_in_its_start(std::string_view kept, const trace::read_result& read) {
    if (holds_an_event(kept)) return false;
    const auto* error = std::get_if<trace::read_error>(&read);
    return kept.empty() || (error && error->line >= line_at(kept, kept.size()));  // "… found end of file"
}

struct left_out {};


// The last file of a recording in v3 (section 7.3): a torn tail is cut at the last whole
// block, with a notice; a file cut in its header is left out of a chain, or refused alone.
std::variant<input, input_error, left_out> read_last_binary(const std::string& file, std::string_view whole,
                                                           bool after_others, std::vector<std::string>& notices) {
    std::optional<std::size_t> cut;
    auto read = trace::v3::read(whole, true, &cut);
    if (auto* error = std::get_if<trace::read_error>(&read)) {
        if (cut && *cut == 0 && after_others) {
            notices.push_back(file + cut_in_start + "; left out of the recording");
            return left_out{};
        }
        if (cut && *cut == 0) return input_error{file + cut_in_start + ": nothing to replay"};
        return input_error{error->describe(file)};
    }
    if (cut) notices.push_back(trace::where(file, 3, *cut) + cut_notice);
    return input{file, std::move(std::get<trace::trace>(read))};
}

// The last file of a recording, which its recorder may have been writing when its
// process died (section 7.2, "Cut files"): a segment cut in the middle of a write is read
// up to the cut, with a notice; one cut before its first event is left out of a chain
// (`after_others`), with a notice, and is an error alone. Anything else reads as any
// other file: a whole file, one that is not a recorder's segment, a cut that leaves a
// malformed trace.
std::variant<input, input_error, left_out> read_last(const std::string& path, bool after_others,
                                                    std::vector<std::string>& notices) {
    const auto as_last = [](std::variant<input, input_error> one) -> std::variant<input, input_error, left_out> {
        if (auto* e = std::get_if<input_error>(&one)) return std::move(*e);
        return std::move(std::get<input>(one));
    };
    auto text = contents_of(path);
    if (auto* e = std::get_if<input_error>(&text)) return std::move(*e);
    const std::string_view whole = std::get<std::string>(text);
    const std::string file = name_of(path);
    if (trace::v3::is_binary(whole)) return read_last_binary(file, whole, after_others, notices);
    if (const auto cut = cut_in(whole)) {
        const std::string_view kept = whole.substr(0, *cut);
        auto read = trace::read(std::string(kept));
        if (const auto* t = std::get_if<trace::trace>(&read); t && t->segment) {
            notices.push_back(file + ":" + std::to_string(line_at(whole, *cut)) + ": " + cut_notice);
            return as_last(parsed(file, std::move(read)));
        }
        const std::string start_cut = file + cut_in_start;
        const bool in_its_start = cut_in_its_start(kept, read);
        if (in_its_start && after_others) {
            notices.push_back(start_cut + "; left out of the recording");
            return left_out{};
        }
        if (in_its_start && !whole.empty()) return input_error{start_cut + ": nothing to replay"};
    }
    return as_last(parsed(file, trace::read(std::get<std::string>(text))));
}

// The *.trace files of a directory, in segment order (trace::segment_order_key).
std::variant<std::vector<std::string>, input_error> traces_in(const std::string& directory) {
    std::error_code error;
    std::vector<std::pair<std::string, std::string>> files;  // {order_key, path}
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error))
        if (it->path().extension() == ".trace" && !it->is_directory(error))
            files.emplace_back(trace::segment_order_key(it->path().filename().string()), it->path().string());
    if (error) return input_error{directory + ": cannot read the directory: " + error.message()};
    if (files.empty()) return input_error{directory + ": no *.trace file in the directory"};
    std::sort(files.begin(), files.end());
    std::vector<std::string> paths;
    for (auto& f : files) paths.push_back(std::move(f.second));
    return paths;
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

}  // namespace

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
        return input_error{at(next, line) + "segment " + std::to_string(next.trace.segment->number) +
                               " does not continue segment " + std::to_string(previous.trace.segment->number) +
                               ": its snapshot has " + quoted(got) + ", the state after segment " +
                               std::to_string(previous.trace.segment->number) + " (" + previous.file + ") has " +
                               quoted(want),
                           checking ? 1 : 2};
    }
    return std::nullopt;
}

std::optional<input_error> not_next(const input& previous, std::uint64_t previous_steps, const input& next) {
    const trace::trace& t = next.trace;
    if (!t.segment)
        return input_error{at(next, t.config_line) +
                           "not a segment (no 'segment' record): several traces replay only as consecutive segments"};
    if (!(t.config.resolved() == previous.trace.config.resolved()))
        return input_error{at(next, t.config_line) + "the config differs from segment " +
                           std::to_string(previous.trace.segment->number) + "'s (" + previous.file + ")"};
    const trace::segment_info& before = *previous.trace.segment;
    if (t.segment->number != before.number + 1)
        return input_error{at(next, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " follows segment " + std::to_string(before.number) + " (" + previous.file +
                           "): segments must be consecutive"};
    if (const auto& gap = previous.trace.gap)
        return input_error{at(previous, gap->line) + "gap: " + std::to_string(gap->events) +
                           " events were lost here; the recording cannot be replayed across it"};
    const std::uint64_t events = before.events_before + previous_steps;
    if (t.segment->events_before != events)
        return input_error{at(next, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " says " + std::to_string(t.segment->events_before) + " events came before it, but segment " +
                           std::to_string(before.number) + " ends after " + std::to_string(events)};
    if (t.snapshot.empty())
        return input_error{at(next, t.segment->line) + "segment " + std::to_string(t.segment->number) +
                           " has no snapshot (every segment after the first starts with one)"};
    return std::nullopt;
}

std::variant<std::vector<std::string>, input_error> files_of(const std::vector<std::string>& paths) {
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code error;
        if (path != "-" && std::filesystem::is_directory(path, error)) {
            auto listed = traces_in(path);
            if (auto* e = std::get_if<input_error>(&listed)) return std::move(*e);
            for (std::string& file : std::get<std::vector<std::string>>(listed)) files.push_back(std::move(file));
        } else {
            files.push_back(path);
        }
    }
    return files;
}

std::variant<inputs, input_error> read_inputs(const std::vector<std::string>& paths) {
    auto listed = files_of(paths);
    if (auto* e = std::get_if<input_error>(&listed)) return std::move(*e);
    const std::vector<std::string>& files = std::get<std::vector<std::string>>(listed);
    inputs read;
    for (const std::string& file : files) {
        if (&file == &files.back()) {
            auto last = read_last(file, !read.files.empty(), read.notices);
            if (auto* e = std::get_if<input_error>(&last)) return std::move(*e);
            if (auto* in = std::get_if<input>(&last)) read.files.push_back(std::move(*in));
            break;
        }
        auto one = read_one(file);
        if (auto* e = std::get_if<input_error>(&one)) return std::move(*e);
        read.files.push_back(std::move(std::get<input>(one)));
    }
    return read;
}

std::variant<chain, input_error> link(std::vector<input> inputs, bool checking) {
    if (inputs.size() > 1 && !inputs.front().trace.segment)
        return input_error{at(inputs.front(), inputs.front().trace.config_line) +
                           "not a segment (no 'segment' record): several traces replay only as consecutive segments"};
    for (std::size_t i = 1; i < inputs.size(); ++i)
        if (auto e = not_next(inputs[i - 1], inputs[i - 1].trace.steps.size(), inputs[i])) return std::move(*e);
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
        c.versions.push_back(t.version);
    }
    return c;
}

}  // namespace fairpool::replay
