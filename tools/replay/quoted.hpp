#pragma once
// How fairpool-replay quotes what it compares in --check's messages: an effect as its
// trace record ("`= grant waiter=1 slot=0 lease=1`"), an error as its code.
#include <string>

#include "fairpool/core/event.hpp"
#include "fairpool/trace/format.hpp"

namespace fairpool::replay {

[[nodiscard]] inline std::string quoted_effect(const core::effect& f) { return "`= " + trace::format(f) + "`"; }

[[nodiscard]] inline std::string quoted_error(core::event_error e) {
    return e == core::event_error::ok ? std::string("no error") : std::string("`! ") + core::to_string(e) + "`";
}

}  // namespace fairpool::replay
