#include "workload.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace fairpool::sim {

namespace {

constexpr nanos us = 1'000;
constexpr nanos ms = 1'000'000;

// A duration that is 0 (feature off) with probability p_off, 1 ns (an edge) now and
// then, else uniform in [lo, hi].
nanos duration(rng& r, double p_off, nanos lo, nanos hi) {
    if (r.chance(p_off)) return 0;
    if (r.chance(0.04)) return 1;
    return r.between(std::max<nanos>(lo, 1), std::max<nanos>(hi, 1));
}

// A fault probability: the fault rate, times the fault's base rate, times a per-seed
// factor in [0, 2] (some seeds never see the fault, some see twice the base rate).
double fault(rng& r, double rate, double base, double cap = 0.95) {
    return std::min(cap, rate * base * r.percent(0, 200));
}

nanos at_least_one(double v) { return v < 1 ? 1 : static_cast<nanos>(v); }

core::config make_config(rng& r, nanos hold_mean) {
    core::config c;
    c.max_slots = r.between(1, 8);
    c.min_slots = r.chance(0.5) ? 0 : r.between(0, c.max_slots);
    c.max_waiters = r.chance(0.2) ? r.between(1, 4) : r.between(5, 64);
    if (r.chance(0.5)) c.max_waiters_per_handle = r.between(1, c.max_waiters);
    c.policy = r.chance(0.65) ? core::fairness_policy::round_robin : core::fairness_policy::fifo;
    c.idle_order = r.chance(0.5) ? core::idle_order::lifo : core::idle_order::fifo;
    c.acquire_timeout = duration(r, 0.5, hold_mean / 4, hold_mean * 8);
    c.idle_timeout = duration(r, 0.5, hold_mean / 2, hold_mean * 20);
    c.max_lifetime = duration(r, 0.6, hold_mean, hold_mean * 200);
    c.max_uses = r.chance(0.6) ? 0 : r.between(1, 30);
    c.leak_threshold = duration(r, 0.5, hold_mean, hold_mean * 10);
    c.spawn_backoff_initial = r.chance(0.05) ? 1 : r.between(hold_mean / 10, hold_mean * 2);
    c.spawn_backoff_max = r.chance(0.2) ? c.spawn_backoff_initial : c.spawn_backoff_initial * r.between(1, 64);
    if (r.chance(0.4)) c.max_concurrent_spawns = r.between(1, c.max_slots);
    return c;
}

// Health (issue 13), from its own generator: in about 40% of the seeds every health
// feature is off, and those seeds play exactly as they did before health existed. When
// on, each feature is on in about half the seeds, its durations comparable to the
// holding time, so that idle slots go stale and keepalives fire between uses.
void add_health(rng& h, nanos hold_mean, core::config& c) {
    if (h.chance(0.4)) return;
    c.check_after_idle = duration(h, 0.5, hold_mean / 10, hold_mean * 5);
    c.keepalive_interval = duration(h, 0.5, hold_mean / 4, hold_mean * 10);
    c.max_concurrent_checks = h.chance(0.5) ? 1 : h.between(1, c.max_slots + 1);
    c.reset_on_release = h.chance(0.4);
    if (c.max_lifetime > 0 && h.chance(0.5))
        c.max_lifetime_jitter = h.chance(0.1) ? c.max_lifetime : h.between(0, c.max_lifetime);
    c.jitter_seed = h.next();
}

bool health_on(const core::config& c) {
    return c.check_after_idle > 0 || c.keepalive_interval > 0 || c.reset_on_release || c.max_lifetime_jitter > 0;
}

// Tenant isolation (issue 15), from its own generator: in about 40% of the seeds no cap
// and no resize, and those seeds play exactly as they did before. When on: room above
// max_slots for resizes to grow into, sometimes a cap for every handle, greedy tenants
// that hold their leases far longer, mostly under a cap of their own, some light
// tenants naming max_leases=0, and resizes under load.
void add_isolation(rng& iso, scenario& s) {
    if (iso.chance(0.4)) return;
    core::config& c = s.config;
    c.slot_capacity = c.max_slots + iso.between(0, 4);
    if (iso.chance(0.3)) c.max_leases_per_handle = iso.between(1, c.max_slots);
    for (tenant& t : s.tenants) {
        if (t.greedy) {
            if (iso.chance(0.75)) t.max_leases = iso.between(1, std::max<std::uint64_t>(1, c.max_slots - 1));
            if (iso.chance(0.7)) t.hold_factor = iso.between(5, 30);
        } else if (iso.chance(0.15)) {
            t.max_leases = iso.chance(0.5) ? 0 : iso.between(1, 3);
        }
    }
    s.p_other_cap = iso.chance(0.5) ? 0 : 0.05;
    if (iso.chance(0.65)) s.resize_gap_mean = s.hold_mean * iso.between(2, 60);
    s.p_bad_size = s.p_invalid > 0 ? 0.15 : 0;
}

std::vector<tenant> make_tenants(rng& r, const run_settings& settings, const core::config& c, nanos hold_mean,
                                 double load) {
    const std::uint64_t count = settings.handles ? *settings.handles : r.between(1, 12);
    std::uint64_t greedy = 0;
    if (r.chance(0.75)) greedy = r.chance(0.6) ? 1 : 2;
    greedy = std::min(greedy, count);
    const double greedy_share = greedy == 0 ? 0 : greedy == count ? 1 : r.percent(50, 85);

    // Acquires per nanosecond that the whole workload offers, on average.
    const double capacity = static_cast<double>(c.max_slots) / static_cast<double>(hold_mean);
    const double demand = load * capacity;
    const bool random_ids = r.chance(0.5);

    std::vector<tenant> tenants(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        tenant& t = tenants[i];
        t.greedy = i < greedy;
        t.handle = i + 1;
        if (random_ids) {
            // Arbitrary 64-bit ids (distinct), to exercise the id tables.
            for (bool clash = true; clash;) {
                t.handle = r.next();
                clash = std::any_of(tenants.begin(), tenants.begin() + static_cast<std::ptrdiff_t>(i),
                                    [&](const tenant& o) { return o.handle == t.handle; });
            }
        }
        const double rate = t.greedy ? demand * greedy_share / static_cast<double>(greedy)
                                     : demand * (1 - greedy_share) / static_cast<double>(count - greedy);
        if (t.greedy) {
            t.on_mean = hold_mean * r.between(100, 1000);
            t.off_mean = hold_mean * r.between(5, 100);
            t.p_burst = r.percent(20, 60);
        } else {
            t.on_mean = hold_mean * r.between(10, 200);
            t.off_mean = hold_mean * r.between(10, 400);
            t.p_burst = r.percent(0, 50);
        }
        const double duty = static_cast<double>(t.on_mean) / static_cast<double>(t.on_mean + t.off_mean);
        const double burst = 1 / (1 - t.p_burst);
        t.gap_mean = at_least_one(burst * duty / std::max(rate, 1e-18));
    }
    return tenants;
}

}  // namespace

bool isolation_on(const scenario& s) {
    const core::config& c = s.config;
    return c.max_leases_per_handle > 0 || c.slot_capacity.value_or(c.max_slots) > c.max_slots ||
           s.resize_gap_mean > 0 ||
           std::any_of(s.tenants.begin(), s.tenants.end(), [](const tenant& t) { return t.max_leases.has_value(); });
}

scenario make_scenario(rng& r, rng& health, rng& isolation, const run_settings& settings) {
    scenario s;
    s.hold_mean = r.between(1 * ms, 20 * ms);
    const nanos hm = s.hold_mean;
    s.config = make_config(r, hm);
    add_health(health, hm, s.config);
    s.load = r.chance(0.5) ? r.percent(30, 100) : r.percent(100, 300);
    s.tenants = make_tenants(r, settings, s.config, hm, s.load);

    s.hold = {hm / 10, hm * 19 / 10};
    s.p_long_hold = r.chance(0.5) ? 0.02 : 0;
    s.p_deadline = r.chance(0.5) ? 0 : r.percent(5, 50);
    s.deadline_max = hm * r.between(1, 8);
    s.p_weight = r.chance(0.6) ? 0 : r.percent(10, 50);
    s.p_cancel = r.chance(0.3) ? 0 : r.percent(1, 30);
    s.patience = {hm / 4, hm * 10};
    s.p_late_cancel = 0.1;
    s.p_deregister = r.chance(0.4) ? 0 : r.percent(5, 50);
    const std::uint64_t base_kind = r.below(4);
    s.waiter_base = base_kind < 2 ? 1 : base_kind == 2 ? r.between(2, nanos{1} << 40) : ~nanos{0} - (nanos{1} << 33);
    const std::uint64_t start_kind = r.below(20);
    if (start_kind < 10) s.start_at = 0;
    else if (start_kind < 18) s.start_at = r.between(1, 1000 * ms);
    else if (start_kind < 19) s.start_at = r.between(nanos{1} << 61, nanos{1} << 62);
    else s.start_at = core::never - r.between(hm, hm * 500);  // runs into the end of time (2^64-1)
    const std::uint64_t quantum_kind = r.below(20);
    s.quantum = quantum_kind < 14 ? 1 : quantum_kind < 17 ? us : hm / 2;

    s.spawn_delay = {hm / 20, hm * 2};
    s.retire_delay = {hm / 50, hm / 2};
    s.death_delay = {hm, hm * 100};
    s.check_delay = {hm / 100, hm / 2};
    s.reset_delay = {hm / 100, hm / 4};

    const double f = settings.fault_rate;
    s.p_spawn_fail = fault(r, f, 0.3);
    s.p_outage = fault(r, f, 0.05);
    s.outage = {hm, hm * 100};
    s.p_slow_spawn = fault(r, f, 0.2);
    s.p_dirty = fault(r, f, 0.2);
    s.p_die = fault(r, f, 0.3);
    if (health_on(s.config)) {
        s.p_silent_death = fault(health, f, 0.5);
        s.p_check_dead = fault(health, f, 0.1);
        s.p_slow_check = fault(health, f, 0.2);
        s.p_reset_fail = fault(health, f, 0.1);
        s.p_health_invalid = 0.25;
    }
    s.p_slow_retire = fault(r, f, 0.3);
    s.p_invalid = fault(r, f, 0.02);

    if (settings.shutdown && settings.events >= 2 && r.chance(0.75))
        s.shutdown_after = r.between(std::max<std::uint64_t>(settings.events / 20, 1), settings.events - 1);
    s.late_acquires = r.between(0, 3);
    s.p_second_shutdown = 0.2;
    s.after_closed = r.chance(0.5) ? 0 : r.between(1, 3);
    add_isolation(isolation, s);
    return s;
}

std::string describe(const scenario& s) {
    const core::config c = s.config.resolved();
    std::uint64_t greedy = 0;
    std::string greedy_cap = "none";
    std::uint64_t greedy_hold = 1;
    for (const tenant& t : s.tenants) {
        greedy += t.greedy ? 1 : 0;
        if (t.greedy && t.max_leases) greedy_cap = std::to_string(*t.max_leases);
        if (t.greedy) greedy_hold = std::max(greedy_hold, t.hold_factor);
    }
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "slots=%llu..%llu waiters=%llu/%llu %s idle=%s spawns<=%llu | timeout=%llu idle_timeout=%llu "
                  "lifetime=%llu jitter=%llu uses=%llu leak=%llu backoff=%llu..%llu | check_after_idle=%llu "
                  "keepalive=%llu checks<=%llu reset=%s | %zu tenants (%llu greedy) load=%.2f "
                  "hold=%.2fms | faults spawn=%.2f outage=%.3f dirty=%.2f die=%.2f silent=%.2f check_dead=%.2f "
                  "reset_fail=%.2f invalid=%.3f | capacity=%llu cap=%llu greedy_cap=%s greedy_hold=%llux "
                  "resize_every=%.2fms",
                  static_cast<unsigned long long>(c.min_slots), static_cast<unsigned long long>(c.max_slots),
                  static_cast<unsigned long long>(*c.max_waiters_per_handle),
                  static_cast<unsigned long long>(c.max_waiters), core::to_string(c.policy),
                  core::to_string(c.idle_order), static_cast<unsigned long long>(*c.max_concurrent_spawns),
                  static_cast<unsigned long long>(c.acquire_timeout), static_cast<unsigned long long>(c.idle_timeout),
                  static_cast<unsigned long long>(c.max_lifetime),
                  static_cast<unsigned long long>(c.max_lifetime_jitter), static_cast<unsigned long long>(c.max_uses),
                  static_cast<unsigned long long>(c.leak_threshold),
                  static_cast<unsigned long long>(c.spawn_backoff_initial),
                  static_cast<unsigned long long>(c.spawn_backoff_max),
                  static_cast<unsigned long long>(c.check_after_idle),
                  static_cast<unsigned long long>(c.keepalive_interval),
                  static_cast<unsigned long long>(c.max_concurrent_checks), c.reset_on_release ? "on" : "off",
                  s.tenants.size(),
                  static_cast<unsigned long long>(greedy), s.load, static_cast<double>(s.hold_mean) / 1e6,
                  s.p_spawn_fail, s.p_outage, s.p_dirty, s.p_die, s.p_silent_death, s.p_check_dead, s.p_reset_fail,
                  s.p_invalid, static_cast<unsigned long long>(*c.slot_capacity),
                  static_cast<unsigned long long>(c.max_leases_per_handle), greedy_cap.c_str(),
                  static_cast<unsigned long long>(greedy_hold), static_cast<double>(s.resize_gap_mean) / 1e6);
    return buf;
}

}  // namespace fairpool::sim
