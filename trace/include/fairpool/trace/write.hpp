#pragma once
// Writing the canonical trace: the header, the canonical config line (every key, in
// table order, with its value in force; max_leases_per_handle only when not 0 and
// slot_capacity only when not max_slots), and each event followed by its effects and
// its error, if any. Comments and blank lines are not kept.
#include <ostream>
#include <optional>
#include <span>

#include "fairpool/trace/trace.hpp"

namespace fairpool::trace {

void write_header(std::ostream& out, const core::config& c);  // v1: the header and the config
// v2 (section 7.2): the header, the config, the segment record if any, the snapshot.
void write_header_v2(std::ostream& out, const core::config& c, const std::optional<segment_info>& segment,
                     std::span<const core::snapshot_record> snapshot);
void write_snapshot_record(std::ostream& out, const core::snapshot_record& r);  // one line
void write_gap(std::ostream& out, std::uint64_t events);                       // `gap events=N`
void write_step(std::ostream& out, const core::event& e, std::span<const core::effect> effects,
                core::event_error error);
void write(std::ostream& out, const trace& t);  // v1 or v2, as t.version

}  // namespace fairpool::trace
