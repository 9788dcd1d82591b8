#pragma once
// The flight recorder's settings (pool_options::recording) and what it reports
// (pool::recording_status). The recorder is meant to stay on in production: the actor
// copies each step into a preallocated ring, field by field as the records of trace
// format v3 (no allocation, no formatting, no I/O; a few bytes an event), and a
// thread the recorder owns copies them from the ring into segment files (binary v3,
// docs/CONTRACT.md section 7.3, or text v2, section 7.2) that `fairpool-replay` replays
// one by one or as a chain.
//
// Memory: the ring holds ring_bytes plus the largest snapshot (72 bytes a record, at most
// core::max_snapshot_records(config) records) and the largest step past its end,
// allocated when the pool is made: about 4.2 MiB with the defaults.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace fairpool {

// How segment files are written: trace format v3, binary (docs/CONTRACT.md section 7.3;
// the writer copies fields, it does not format), or v2 text (section 7.2), which a
// person can follow with `tail -f` at several times the writer's cost.
enum class recording_format : std::uint8_t { binary, text };

struct recorder_options {
    // Where segment files go: segment-00000000.trace, segment-00000001.trace, …
    // numbered by segment number (created if missing). Files of an earlier recording
    // found there when the pool starts are moved into DIRECTORY/previous/ (replacing
    // what was there), so the recording of the run before a restart survives one
    // restart. Nothing here is touched before the pool has started: a pool whose
    // construction throws leaves the directory as it was. Unused with memory_only.
    std::filesystem::path directory{};
    // Events per segment (each segment starts with the config and a snapshot). At least 1.
    std::uint64_t segment_events = 100'000;
    // Segment files kept, the current one included; older ones are deleted, oldest
    // first. At least 1.
    std::uint32_t keep_segments = 8;
    // No files: the writer keeps the last two segments in memory (so the last
    // segment_events events and the snapshot before them are always there) and
    // writes them only on pool::dump_recording.
    bool memory_only = false;
    // Bytes the ring holds beyond one snapshot of the largest state (a step takes its v3
    // records' size: an acquire, its grant and the release about 14 bytes together). When the writer
    // falls behind and the ring is full, events are lost, never waited for: the segment
    // ends with `gap events=N` and the next one starts with a fresh snapshot. At least
    // 1, at most 2^30 (max_ring_bytes).
    std::uint32_t ring_bytes = 4U << 20;
    static constexpr std::uint32_t max_ring_bytes = 1U << 30;
    // How often the writer wakes to drain the ring and flush the current file: a crash
    // loses at most about this much of the recording. It also wakes sooner, when the
    // actor finds the ring more than half full (at most once per half ring of bytes),
    // so a busy pool does not lose events waiting for it. Positive, at most 24 hours
    // (max_flush_interval: a longer wait would overflow the clock's arithmetic).
    std::chrono::milliseconds flush_interval{10};
    static constexpr std::chrono::milliseconds max_flush_interval = std::chrono::hours(24);
    // The segment files' format: binary (v3) unless text (v2) is asked for.
    recording_format format = recording_format::binary;
};

// Empty if valid, else "FIELD: why".
[[nodiscard]] std::optional<std::string> validate(const recorder_options& o);

// What the recorder did so far (pool::recording_status). After a failed write the file
// being written keeps only its whole steps (cut back, or removed if it holds no whole
// start); if the cut itself fails, last_error says so ("…: left cut where that write
// began") and the file keeps the failed write's torn tail, which fairpool-replay drops
// (docs/CONTRACT.md section 7.2, "Cut files"). Either way segments_written and
// events_written count only what the files hold whole, never the failed write.
struct recording_status {
    std::uint64_t segments_started = 0;  // by the actor: segment records pushed
    std::uint64_t segments_written = 0;  // by the writer: segments whose start it wrote
    std::uint64_t events_written = 0;    // steps the writer wrote whole to a file (or to memory)
    std::uint64_t events_lost = 0;       // in gaps (the ring was full), the open one included
    std::uint64_t gaps = 0;              // gap records pushed
    std::uint64_t write_errors = 0;      // failed writes; after the first, nothing more is written
    std::string last_error;              // the last failure, empty if none
    // The writer thread's CPU time so far, user and system (its thread's CPU clock):
    // what the recorder costs beyond the actor's copy into the ring.
    std::chrono::nanoseconds writer_cpu_time{0};
};

}  // namespace fairpool
