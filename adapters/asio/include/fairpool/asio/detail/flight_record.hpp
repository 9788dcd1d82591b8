#pragma once
// What the actor copies into the flight recorder's ring (flight_ring.hpp), byte for
// byte the records of trace format v3 (docs/CONTRACT.md section 7.3,
// fairpool/trace/binary.hpp), plus two markers of its own. A segment is
//
//   a segment marker: segment_tag, u64 number, u64 events_before, u32 records;
//   that many snapshot records (v3: core::snapshot_begin … core::snapshot_end);
//   then per event: its v3 event record (its kind, 0..13, first) and effect records;
//   optionally a gap marker last: gap_tag, u64 events (lost after the segment's last step).
//
// Every record is contiguous in the ring; the writer tells them apart by their first
// byte and finds their sizes from their fields (trace::v3::step_bytes,
// snapshot_record_bytes).
#include <cstddef>
#include <cstdint>

#include "fairpool/core/config.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/binary.hpp"

namespace fairpool::detail {

// A segment marker's fields.
struct segment_start {
    std::uint64_t number = 0;
    std::uint64_t events_before = 0;  // events seen before this segment (recorded or lost)
};

}  // namespace fairpool::detail

namespace fairpool::detail::ring_record {

inline constexpr std::uint8_t segment_tag = 0xF0;
inline constexpr std::uint8_t gap_tag = 0xF1;
inline constexpr std::size_t segment_bytes = 1 + 8 + 8 + 4;
inline constexpr std::size_t gap_bytes = 1 + 8;
static_assert(core::event_kind_count < segment_tag);

// The most bytes a snapshot of a scheduler with this (resolved) config takes.
[[nodiscard]] constexpr std::size_t max_snapshot_bytes(const core::config& resolved) noexcept {
    return static_cast<std::size_t>(core::max_snapshot_records(resolved)) * trace::v3::max_snapshot_record_bytes;
}
// The largest record: what the ring needs past its end.
[[nodiscard]] constexpr std::size_t max_record_bytes(const core::config& resolved) noexcept {
    const std::size_t step = trace::v3::max_step_bytes(static_cast<std::size_t>(core::max_effects_per_step(resolved)));
    return step > segment_bytes + trace::v3::max_snapshot_record_bytes ? step
                                                                       : segment_bytes + trace::v3::max_snapshot_record_bytes;
}

}  // namespace fairpool::detail::ring_record
