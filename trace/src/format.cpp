#include "fairpool/trace/format.hpp"

namespace fairpool::trace {

namespace {

void field(std::string& out, const char* key, std::uint64_t value) {
    out += ' ';
    out += key;
    out += '=';
    out += std::to_string(value);
}

void field(std::string& out, const char* key, const char* value) {
    out += ' ';
    out += key;
    out += '=';
    out += value;
}

}  // namespace

std::string format(const core::event& e) {
    using core::event_kind;
    std::string out = core::to_string(e.kind);
    switch (e.kind) {
        case event_kind::acquire:
            field(out, "waiter", e.waiter);
            field(out, "handle", e.handle);
            if (e.deadline) field(out, "deadline", *e.deadline);
            if (e.weight) field(out, "weight", *e.weight);
            break;
        case event_kind::cancel: field(out, "waiter", e.waiter); break;
        case event_kind::deregister: field(out, "handle", e.handle); break;
        case event_kind::release:
            field(out, "slot", e.slot);
            field(out, "lease", e.lease);
            field(out, "outcome", core::to_string(e.outcome));
            break;
        case event_kind::spawned:
        case event_kind::spawn_failed:
        case event_kind::retired:
        case event_kind::died: field(out, "slot", e.slot); break;
        case event_kind::start:
        case event_kind::tick:
        case event_kind::shutdown: break;
    }
    return out;
}

// Appended piece by piece: "@" + std::to_string(…) draws a false -Wrestrict from g++ 12
// at -O3 (GCC bug 105651, in operator+(const char*, std::string&&)).
std::string format_line(const core::event& e) {
    std::string out = "@";
    out += std::to_string(e.now);
    out += ' ';
    out += format(e);
    return out;
}

std::string format(const core::effect& f) {
    using core::effect_kind;
    std::string out = core::to_string(f.kind);
    switch (f.kind) {
        case effect_kind::grant:
            field(out, "waiter", f.waiter);
            field(out, "slot", f.slot);
            field(out, "lease", f.lease);
            break;
        case effect_kind::reject:
            field(out, "waiter", f.waiter);
            field(out, "reason", core::to_string(f.rejected));
            break;
        case effect_kind::spawn: field(out, "slot", f.slot); break;
        case effect_kind::retire:
            field(out, "slot", f.slot);
            field(out, "reason", core::to_string(f.retired));
            break;
        case effect_kind::leak_suspected:
            field(out, "slot", f.slot);
            field(out, "lease", f.lease);
            break;
        case effect_kind::closed: break;
    }
    return out;
}

std::string format_canonical(const core::config& input) {
    const core::config c = input.resolved();
    std::string out = "config";
    field(out, "max_slots", c.max_slots);
    field(out, "min_slots", c.min_slots);
    field(out, "max_waiters", c.max_waiters);
    field(out, "max_waiters_per_handle", *c.max_waiters_per_handle);
    field(out, "policy", core::to_string(c.policy));
    field(out, "idle_order", core::to_string(c.idle_order));
    field(out, "acquire_timeout", c.acquire_timeout);
    field(out, "idle_timeout", c.idle_timeout);
    field(out, "max_lifetime", c.max_lifetime);
    field(out, "max_uses", c.max_uses);
    field(out, "spawn_backoff_initial", c.spawn_backoff_initial);
    field(out, "spawn_backoff_max", c.spawn_backoff_max);
    field(out, "max_concurrent_spawns", *c.max_concurrent_spawns);
    field(out, "leak_threshold", c.leak_threshold);
    return out;
}

}  // namespace fairpool::trace
