#pragma once
// --check over a recording in trace format v3 (docs/CONTRACT.md section 7.3) at the speed
// of the core: each file is decoded a step at a time and replayed as it is read, never
// held as a trace in memory, so a recording of millions of events checks in seconds.
// The same checks and messages as link() and check() on the files read whole: a chain
// of consecutive segments, each starting where the one before ended, then every step's
// effects and error as recorded.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chain.hpp"
#include "replay.hpp"

namespace fairpool::replay {

// The files are all v3 (is_binary): the exit status, after printing the verdict to
// `out`, and the problems and notices to `err`. Empty when some file is not v3 (then
// nothing was printed: check the files read whole).
[[nodiscard]] std::optional<int> stream_check(const std::vector<std::string>& files, const options& o,
                                              std::ostream& out, std::ostream& err);

}  // namespace fairpool::replay
