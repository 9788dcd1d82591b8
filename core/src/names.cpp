// Names of enumerators, as they are spelled in traces and messages.
#include <iterator>

#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"

namespace fairpool::core {

namespace {

template <typename Enum, std::size_t N>
const char* name_of(Enum value, const char* const (&names)[N]) noexcept {
    const auto index = static_cast<std::size_t>(value);
    return index < N ? names[index] : "?";
}

}  // namespace

const char* to_string(event_kind k) noexcept {
    static const char* const names[] = {"start",   "acquire",      "cancel",  "deregister",
                                        "release", "spawned",      "spawn_failed", "retired",
                                        "died",    "tick",         "shutdown",     "checked",
                                        "reset_done", "resize"};
    return name_of(k, names);
}

const char* to_string(release_outcome o) noexcept {
    static const char* const names[] = {"clean", "dirty"};
    return name_of(o, names);
}

const char* to_string(check_outcome o) noexcept {
    static const char* const names[] = {"alive", "dead"};
    return name_of(o, names);
}

const char* to_string(reset_outcome o) noexcept {
    static const char* const names[] = {"ok", "failed"};
    return name_of(o, names);
}

const char* to_string(event_error e) noexcept {
    static const char* const names[] = {"ok",           "not_started",      "already_started", "time_went_backwards",
                                        "bad_slot",     "bad_weight",       "bad_size",        "duplicate_waiter", "stale_lease",
                                        "not_spawning", "not_retiring",     "not_idle",        "not_checking",
                                        "not_resetting"};
    return name_of(e, names);
}

const char* to_string(effect_kind k) noexcept {
    static const char* const names[] = {"grant", "reject", "spawn", "retire", "leak_suspected", "closed", "check", "reset"};
    return name_of(k, names);
}

const char* to_string(reject_reason r) noexcept {
    static const char* const names[] = {"saturated", "timeout", "cancelled", "deregistered", "closed"};
    return name_of(r, names);
}

const char* to_string(retire_reason r) noexcept {
    static const char* const names[] = {"dirty", "max_uses", "max_lifetime", "idle", "died", "shutdown", "reset_failed", "resize"};
    return name_of(r, names);
}

const char* to_string(slot_state s) noexcept {
    static const char* const names[] = {"empty", "spawning", "idle", "leased", "retiring", "checking", "resetting"};
    return name_of(s, names);
}

const char* to_string(counter c) noexcept {
    static const char* const names[] = {
        "acquires",           "grants_immediate",         "grants_after_wait",        "rejections_saturated",
        "rejections_timeout", "rejections_cancelled",     "rejections_deregistered",  "rejections_closed",
        "spawns",             "spawn_failures",           "retirements_dirty",        "retirements_max_uses",
        "retirements_max_lifetime", "retirements_idle",   "retirements_died",         "retirements_shutdown",
        "retirements_reset_failed", "retirements_resize", "leaks_suspected",    "checks_started",           "checks_passed",
        "checks_failed",      "resets_started",           "resets_failed",            "resizes"};
    static_assert(std::size(names) == counter_count);
    return name_of(c, names);
}

}  // namespace fairpool::core
