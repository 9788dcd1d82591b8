#pragma once
// --to-text and --to-binary: each input as recorded (not replayed), written canonically
// in text (sections 7, 7.2: a v3 trace as v2 when it has a segment, a snapshot or a gap,
// else as v1) or in v3 (section 7.3,
// v3::canonical_block_steps steps a block). One input goes to the file OUT ("-":
// standard output); several go into the directory OUT, each under its own file name.
#include <ostream>
#include <string>
#include <vector>

#include "chain.hpp"

namespace fairpool::replay {

enum class target_format { text, binary };

// The exit status: 0, or 2 when OUT cannot be written (said on `err`).
int convert(const std::vector<input>& inputs, target_format format, const std::string& out_path, bool into_directory,
            std::ostream& err);

}  // namespace fairpool::replay
