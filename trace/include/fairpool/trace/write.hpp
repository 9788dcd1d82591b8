#pragma once
// Writing the canonical trace: the header, the canonical config line (every key, in
// table order, with its value in force), and each event followed by its effects and
// its error, if any. Comments and blank lines are not kept.
#include <ostream>
#include <span>

#include "fairpool/trace/trace.hpp"

namespace fairpool::trace {

void write_header(std::ostream& out, const core::config& c);
void write_step(std::ostream& out, const core::event& e, std::span<const core::effect> effects,
                core::event_error error);
void write(std::ostream& out, const trace& t);

}  // namespace fairpool::trace
