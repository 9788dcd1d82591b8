#pragma once
// A trace (docs/CONTRACT.md, section 7): a config and a list of events, each with the
// effects and error recorded for it, if any. Reading may allocate; the scheduler
// never does.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"

namespace fairpool::trace {

inline constexpr const char* header = "fairpool-trace v1";     // the first record of a v1 trace
inline constexpr const char* header_v2 = "fairpool-trace v2";  // of a v2 trace (section 7.2)
// (a v3 trace is binary: fairpool/trace/binary.hpp, section 7.3)

// Where something is in a trace file, as messages name it: "FILE:LINE: " in a text
// trace (v1, v2), "FILE: byte OFFSET: " in a binary one (v3), whose positions are
// byte offsets.
[[nodiscard]] inline std::string where(const std::string& file, int version, std::size_t position) {
    if (version >= 3) return file + ": byte " + std::to_string(position) + ": ";
    return file + ":" + std::to_string(position) + ": ";
}

struct recorded_effect {
    core::effect effect;
    std::size_t line = 0;  // 1-based line in the source, 0 when not read from a file
};

struct step {
    core::event event;
    std::size_t line = 0;
    std::vector<recorded_effect> effects;   // `= …` records after the event
    std::optional<core::event_error> error;  // `! CODE` after the event (never `ok`)
    std::size_t error_line = 0;
};

// `segment number=N events_before=E` (section 7.2).
struct segment_info {
    std::uint64_t number = 0;
    std::uint64_t events_before = 0;
    std::size_t line = 0;
    friend bool operator==(const segment_info&, const segment_info&) = default;
};

struct snapshot_line {
    core::snapshot_record record;
    std::size_t line = 0;
};

// `gap events=N`: the recorder lost N events after the last step.
struct gap_info {
    std::uint64_t events = 0;
    std::size_t line = 0;
};

struct trace {
    int version = 1;      // 1 or 2; 3 when read from a binary file (every `line` is then a byte offset)
    core::config config;  // as read (optional fields unset unless given)
    std::optional<segment_info> segment;    // v2 only
    std::vector<snapshot_line> snapshot;    // v2 only: empty, or begin … end
    std::vector<step> steps;
    std::optional<gap_info> gap;            // v2 only: the last record
    std::size_t config_line = 0;            // where the config record is
};

}  // namespace fairpool::trace
