#pragma once
// Printing events, effects and configs in the syntax of trace format v1
// (docs/CONTRACT.md, section 7): fields in table order, optional ones only when given.
#include <string>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"

namespace fairpool::trace {

// "acquire waiter=1 handle=7 deadline=1000" — the event without its "@NOW " prefix.
[[nodiscard]] std::string format(const core::event& e);
// "@20 acquire waiter=1 handle=7"
[[nodiscard]] std::string format_line(const core::event& e);
// "grant waiter=1 slot=0 lease=1"
[[nodiscard]] std::string format(const core::effect& f);
// "waiter id=3 handle=1 arrived_at=10 arrival=2 deadline=500" (section 7.2)
[[nodiscard]] std::string format(const core::snapshot_record& r);
// "config max_slots=4 min_slots=0 …": every key in table order, with the value in force
// (max_leases_per_handle only when not 0, slot_capacity only when not max_slots).
[[nodiscard]] std::string format_canonical(const core::config& c);

}  // namespace fairpool::trace
