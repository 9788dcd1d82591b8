#pragma once
// What fairpool-replay replays: one trace, or the segments of a recording (section 7.2)
// that form a chain. A chain is merged into one trace, replayed from its first
// segment's snapshot, once it has been checked to be one recording: the same config,
// consecutive segment numbers, each segment's snapshot the state after the one
// before, no gap except at the end.
#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::replay {

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
