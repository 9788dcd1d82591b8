#pragma once
// What fairpool-replay replays: one trace, or the segments of a recording (section 7.2)
// that form a chain. A chain is merged into one trace, replayed from its first
// segment's snapshot, once it has been checked to be one recording: the same config,
// consecutive segment numbers, each segment's snapshot the state after the one
// before, no gap except at the end.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string>
#include <variant>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::replay {

// The notices for a recording's last file cut by the death of its process (section 7.2,
// "Cut files"; 7.3): after "FILE:LINE: " or "FILE: byte N: ", and after "FILE".
inline constexpr const char* cut_notice =
    "cut: the recording stops in the middle of a write here (its process ended while writing, or the write failed "
    "and could not be cut back); what comes before is replayed";
inline constexpr const char* cut_in_start =
    ": cut before its first event (its process ended while writing the segment's start, or that write failed and the "
    "file could not be removed)";

struct input {
    std::string file;  // as named in messages ("<stdin>" for -)
    trace::trace trace;
};

// A failure to read or link the inputs: the message and the exit status.
struct input_error {
    std::string message;  // "FILE:LINE: …" or "PATH: …"
    int status = 2;
};

struct inputs {
    std::vector<input> files;
    std::vector<std::string> notices;  // for standard error: the last file was cut (section 7.2)
};

// Reads every path: a FILE, "-" (standard input), or a DIRECTORY (its *.trace files in
// segment order: by name, segment-N.trace by N). The last file may have been cut by the
// death of its recorder's process: it is read up to the cut, or left out if the cut
// comes before its first event, with a notice.
[[nodiscard]] std::variant<inputs, input_error> read_inputs(const std::vector<std::string>& paths);

// A file's bytes, or standard input's for "-".
[[nodiscard]] std::variant<std::string, input_error> contents_of(const std::string& path);

// The files the paths name: each FILE or "-" as it is, each DIRECTORY's *.trace files in
// segment order.
[[nodiscard]] std::variant<std::vector<std::string>, input_error> files_of(const std::vector<std::string>& paths);

// What makes `next` not the segment after `previous` (which held `previous_steps`
// steps), short of replaying: not a segment, another config, not the next number, a
// gap at the end of `previous`, an events_before that does not add up, no snapshot.
[[nodiscard]] std::optional<input_error> not_next(const input& previous, std::uint64_t previous_steps,
                                                  const input& next);
// Whether segment `next` starts in the state `s` was left in by replaying `previous`
// (status 1 when `checking`, else 2).
[[nodiscard]] std::optional<input_error> continues(const core::scheduler& s, const input& previous, const input& next,
                                                   bool checking);

struct chain {
    trace::trace merged;  // the first's config, segment and snapshot; every step; the last's gap
    std::vector<core::snapshot_record> snapshot;  // merged.snapshot's records
    std::vector<std::string> files;               // one per input
    std::vector<int> versions;                    // each input's trace version (3: positions are byte offsets)
    std::vector<std::size_t> file_of_step;        // merged.steps[i] is from files[file_of_step[i]]
    std::string name;                             // how the whole is named in messages

    [[nodiscard]] const std::string& file_of(std::size_t step) const { return files[file_of_step[step]]; }
    // "FILE:LINE: " (or "FILE: byte OFFSET: ") for a position in the input of a step.
    [[nodiscard]] std::string at(std::size_t step, std::size_t position) const {
        return trace::where(file_of(step), versions[file_of_step[step]], position);
    }
    [[nodiscard]] const std::string& last_file() const { return files.back(); }
};

// Checks that the inputs form a chain and merges them. A segment that does not continue
// the one before is a failed check under --check (`checking`: status 1) and bad input
// otherwise (2); every other problem is bad input.
[[nodiscard]] std::variant<chain, input_error> link(std::vector<input> inputs, bool checking);

}  // namespace fairpool::replay
