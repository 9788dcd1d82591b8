#pragma once
// The modes of fairpool-replay, each a function over a chain of segments (chain.hpp;
// one trace is a chain of one). They print to `out` and return the exit status (0
// pass, 1 the trace fails). A chain that starts from a snapshot replays from the
// state it describes.
#include <ostream>
#include <string>

#include "chain.hpp"
#include "fairpool/model/lockstep.hpp"

namespace fairpool::replay {

struct options {
    model::lockstep::fault fault = nullptr;
};

// Replays through the core and prints the canonical trace (v2 when it has a snapshot).
int print_canonical(const chain& c, const options& o, std::ostream& out);
// Compares the recorded effects and errors with the core's; first difference → 1.
int check(const chain& c, const options& o, std::ostream& out);
// Core against model and invariants after every step; first breach → 1.
int check_invariants(const chain& c, const options& o, std::ostream& out);
// Grants and rejections by reason, wait percentiles, grants per handle, Jain's index.
int print_stats(const chain& c, const options& o, std::ostream& out);
// Shrinks the events of a chain that fails --invariants to a 1-minimal list failing
// the same way, replayed from the chain's first snapshot, and writes it canonically
// (config, that snapshot, the events) to `output_path`.
int minimize(const chain& c, const options& o, const std::string& output_path, std::ostream& out);
// Cuts the chain into segments of `events` events each (the last may be shorter), each
// a v2 trace with its segment record and the snapshot of the state before its first
// event, written canonically to DIRECTORY/segment-NNNNNNNN.trace (created if needed).
int split(const chain& c, const options& o, std::uint64_t events, const std::string& directory, std::ostream& out);

}  // namespace fairpool::replay
