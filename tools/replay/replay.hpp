#pragma once
// The modes of fairpool-replay, each a function over a parsed trace. They print to
// `out` and return the exit status (0 pass, 1 the trace fails).
#include <ostream>
#include <string>

#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::replay {

struct options {
    std::string file;  // the name used in messages ("<stdin>" for -)
    model::lockstep::fault fault = nullptr;
};

// Replays through the core and prints the canonical trace.
int print_canonical(const trace::trace& t, const options& o, std::ostream& out);
// Compares the recorded effects and errors with the core's; first difference → 1.
int check(const trace::trace& t, const options& o, std::ostream& out);
// Core against model and invariants after every step; first breach → 1.
int check_invariants(const trace::trace& t, const options& o, std::ostream& out);
// Grants and rejections by reason, wait percentiles, grants per handle, Jain's index.
int print_stats(const trace::trace& t, const options& o, std::ostream& out);
// Shrinks a trace that fails --invariants to a 1-minimal one failing the same way,
// written canonically to `output_path`.
int minimize(const trace::trace& t, const options& o, const std::string& output_path, std::ostream& out);

}  // namespace fairpool::replay
