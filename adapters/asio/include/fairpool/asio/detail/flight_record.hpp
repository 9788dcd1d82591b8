#pragma once
// What the actor hands the flight recorder's writer: one fixed-size, trivially copyable
// record type, copied into a preallocated ring. A segment is
//
//   segment_start, snapshot records (core::snapshot_begin … core::snapshot_end),
//   then per event: step_record, its effect_count effects;
//   optionally a gap_record last (events lost after it).
//
// A step_record carries its effect count so that the writer knows when a step is whole
// (the actor pushes its records one by one; the writer may see a step's first records
// before the rest).
#include <cstdint>
#include <type_traits>
#include <variant>

#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"

namespace fairpool::detail {

struct step_record {
    core::event event;
    std::uint32_t effect_count = 0;
    core::event_error error = core::event_error::ok;
};

struct segment_start {
    std::uint64_t number = 0;
    std::uint64_t events_before = 0;  // events seen before this segment (recorded or lost)
};

struct gap_record {
    std::uint64_t events = 0;  // lost after the segment's last step
};

using flight_record = std::variant<step_record, core::effect, core::snapshot_record, segment_start, gap_record>;
static_assert(std::is_trivially_copyable_v<flight_record>);
// The event stays at 72 bytes with caps and resizes (issue 15: their fields share its
// words), a step_record 80, as large as a snapshot record.
static_assert(sizeof(flight_record) <= 88);

}  // namespace fairpool::detail
