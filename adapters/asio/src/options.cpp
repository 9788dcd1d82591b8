#include "fairpool/asio/options.hpp"

#include <string>

#include "fairpool/asio/detail/pool_settings.hpp"

namespace fairpool {

namespace {

using std::chrono::nanoseconds;

std::string ns(nanoseconds d) { return std::to_string(d.count()) + " ns"; }

// A duration that bounds a wait or triggers work: forever is the core's 0 ("off"); any
// other must be positive (0 would be the core's "off" too, silently: refused).
std::optional<std::string> bound(const char* field, nanoseconds d, std::uint64_t& out) {
    if (d == forever) {
        out = 0;
        return std::nullopt;
    }
    if (d.count() <= 0) return std::string(field) + ": must be positive, got " + ns(d) + " (fairpool::forever: no bound)";
    out = static_cast<std::uint64_t>(d.count());
    return std::nullopt;
}

std::optional<std::string> positive(const char* field, nanoseconds d, std::uint64_t& out) {
    if (d.count() <= 0) return std::string(field) + ": must be positive, got " + ns(d);
    out = static_cast<std::uint64_t>(d.count());
    return std::nullopt;
}

// The options as the scheduler's config, the first bad duration named; the rest of the
// checks are the core's (its field names are these options' own).
std::optional<std::string> convert(const pool_options& o, core::config& c) {
    c.max_slots = o.max_slots;
    c.min_slots = o.min_slots;
    c.max_waiters = o.max_waiters;
    c.max_waiters_per_handle = o.max_waiters_per_handle;
    c.slot_capacity = o.slot_capacity;
    c.policy = o.policy;
    c.idle_order = o.idle_order;
    c.max_leases_per_handle = o.max_leases_per_handle;
    c.max_concurrent_spawns = o.max_concurrent_spawns;
    c.max_uses = o.max_uses;
    c.jitter_seed = o.jitter_seed;
    c.max_concurrent_checks = o.max_concurrent_checks;
    c.reset_on_release = o.reset_on_release;
    if (auto why = bound("acquire_timeout", o.acquire_timeout, c.acquire_timeout)) return why;
    std::uint64_t unused = 0;
    if (auto why = bound("create_timeout", o.create_timeout, unused)) return why;
    if (auto why = positive("spawn_backoff_initial", o.spawn_backoff_initial, c.spawn_backoff_initial)) return why;
    if (auto why = positive("spawn_backoff_max", o.spawn_backoff_max, c.spawn_backoff_max)) return why;
    if (o.retire_grace.count() < 0) return "retire_grace: must not be negative, got " + ns(o.retire_grace);
    if (auto why = bound("idle_timeout", o.idle_timeout, c.idle_timeout)) return why;
    if (auto why = bound("max_lifetime", o.max_lifetime, c.max_lifetime)) return why;
    if (o.max_lifetime_jitter.count() < 0 || (o.max_lifetime != forever && o.max_lifetime_jitter > o.max_lifetime) ||
        (o.max_lifetime == forever && o.max_lifetime_jitter.count() != 0))
        return "max_lifetime_jitter: must be 0..max_lifetime (0 when max_lifetime is forever), got " +
               ns(o.max_lifetime_jitter);
    c.max_lifetime_jitter = static_cast<std::uint64_t>(o.max_lifetime_jitter.count());
    if (auto why = bound("check_after_idle", o.check_after_idle, c.check_after_idle)) return why;
    if (auto why = bound("keepalive_interval", o.keepalive_interval, c.keepalive_interval)) return why;
    if (auto why = positive("check_timeout", o.check_timeout, unused)) return why;
    if (auto why = positive("reset_timeout", o.reset_timeout, unused)) return why;
    if (auto why = bound("leak_threshold", o.leak_threshold, c.leak_threshold)) return why;
    if (auto why = core::validate(c)) return why;
    // The slot-event queue holds slot_capacity commands, and a Boost.Lockfree fixed-size
    // queue at most 65534 (mailbox.hpp).
    if (const std::uint64_t slots = *c.resolved().slot_capacity; slots > max_adapter_slots)
        return "slot_capacity: the Boost.Asio adapter holds at most " + std::to_string(max_adapter_slots) +
               " slots, got " + std::to_string(slots);
    if (o.mailbox_capacity < 1) return std::string("mailbox_capacity: must be at least 1");
    if (o.mailbox_capacity > 32766 || o.max_waiters + o.mailbox_capacity > 32766)
        return "mailbox_capacity: max_waiters + mailbox_capacity is " +
               std::to_string(o.max_waiters + o.mailbox_capacity) + ", above 32766";
    if (o.recording)
        if (auto why = validate(*o.recording)) return "recording." + *why;
    return std::nullopt;
}

}  // namespace

std::optional<std::string> validate(const pool_options& o) {
    core::config c;
    return convert(o, c);
}

core::config scheduler_config(const pool_options& o) { return detail::settings_of(o).scheduler; }

std::optional<std::string> validate(const handle_options& o) {
    if (o.weight < 1 || o.weight > core::max_weight)
        return "weight: must be 1.." + std::to_string(core::max_weight) + ", got " + std::to_string(o.weight);
    return std::nullopt;
}

namespace detail {

pool_settings settings_of(const pool_options& o) {
    pool_settings s;
    if (auto why = convert(o, s.scheduler)) throw config_error("invalid pool options: " + *why);
    s.scheduler = s.scheduler.resolved();
    s.mailbox_capacity = static_cast<std::uint32_t>(o.mailbox_capacity);
    s.retire_grace = o.retire_grace;
    s.check_timeout = o.check_timeout;
    s.reset_timeout = o.reset_timeout;
    s.create_timeout = o.create_timeout == forever ? nanoseconds{0} : o.create_timeout;
    s.recording = o.recording;
    s.on_leak_suspected = o.on_leak_suspected;
    return s;
}

}  // namespace detail

}  // namespace fairpool
