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

namespace fairpool::trace {

inline constexpr const char* header = "fairpool-trace v1";  // the first record

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

struct trace {
    core::config config;  // as read (optional fields unset unless given)
    std::vector<step> steps;
};

}  // namespace fairpool::trace
