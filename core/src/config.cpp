#include "fairpool/core/config.hpp"

namespace fairpool::core {

config config::resolved() const {
    config c = *this;
    if (!c.max_waiters_per_handle) c.max_waiters_per_handle = c.max_waiters;
    if (!c.slot_capacity) c.slot_capacity = c.max_slots;
    if (!c.max_concurrent_spawns) c.max_concurrent_spawns = c.slot_capacity;
    return c;
}

namespace {

std::string out_of_range(const char* field, std::uint64_t value, const std::string& range) {
    return std::string(field) + ": " + std::to_string(value) + " is out of range " + range;
}

}  // namespace

std::optional<std::string> validate(const config& input) {
    const config c = input.resolved();
    if (c.max_slots < 1 || c.max_slots > max_slots_limit)
        return out_of_range("max_slots", c.max_slots, "1..65535");
    if (c.min_slots > c.max_slots)
        return out_of_range("min_slots", c.min_slots, "0..max_slots (" + std::to_string(c.max_slots) + ")");
    if (c.max_waiters < 1 || c.max_waiters > max_waiters_limit)
        return out_of_range("max_waiters", c.max_waiters, "1..1000000");
    if (*c.max_waiters_per_handle < 1 || *c.max_waiters_per_handle > c.max_waiters)
        return out_of_range("max_waiters_per_handle", *c.max_waiters_per_handle,
                            "1..max_waiters (" + std::to_string(c.max_waiters) + ")");
    if (c.policy != fairness_policy::round_robin && c.policy != fairness_policy::fifo)
        return std::string("policy: must be round_robin or fifo");
    if (c.idle_order != idle_order::lifo && c.idle_order != idle_order::fifo)
        return std::string("idle_order: must be lifo or fifo");
    if (c.spawn_backoff_initial < 1)
        return out_of_range("spawn_backoff_initial", c.spawn_backoff_initial, "1..2^64-1");
    if (c.spawn_backoff_max < c.spawn_backoff_initial)
        return out_of_range("spawn_backoff_max", c.spawn_backoff_max,
                            "spawn_backoff_initial (" + std::to_string(c.spawn_backoff_initial) + ")..2^64-1");
    // Before max_concurrent_spawns, whose default it is: a bad slot_capacity is named
    // as itself, not as the unset field that took its value.
    if (*c.slot_capacity < c.max_slots || *c.slot_capacity > max_slots_limit)
        return out_of_range("slot_capacity", *c.slot_capacity,
                            "max_slots (" + std::to_string(c.max_slots) + ")..65535");
    if (*c.max_concurrent_spawns < 1)
        return out_of_range("max_concurrent_spawns", *c.max_concurrent_spawns, "1..2^64-1");
    if (c.max_concurrent_checks < 1)
        return out_of_range("max_concurrent_checks", c.max_concurrent_checks, "1..2^64-1");
    if (c.max_lifetime_jitter > c.max_lifetime)
        return out_of_range("max_lifetime_jitter", c.max_lifetime_jitter,
                            "0..max_lifetime (" + std::to_string(c.max_lifetime) + ")");
    return std::nullopt;
}

config checked(const config& c) {
    if (auto why = validate(c)) throw config_error("invalid config: " + *why);
    return c.resolved();
}

const char* to_string(fairness_policy p) noexcept {
    return p == fairness_policy::fifo ? "fifo" : "round_robin";
}

const char* to_string(core::idle_order o) noexcept { return o == idle_order::fifo ? "fifo" : "lifo"; }

}  // namespace fairpool::core
