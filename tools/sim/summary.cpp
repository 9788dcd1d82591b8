#include "summary.hpp"

namespace fairpool::sim {

namespace {

const char* policy_name(int p) { return core::to_string(static_cast<core::fairness_policy>(p)); }

}  // namespace

void summary::index_stats::add(double value, std::uint64_t seed) {
    sum += value;
    ++seeds;
    if (!worst || value < *worst) worst = value, worst_seed = seed;
}

void summary::index_stats::print(std::FILE* out, const char* policy) const {
    if (seeds == 0) {
        std::fprintf(out, "                %-11s no such seed\n", policy);
        return;
    }
    std::fprintf(out, "                %-11s mean %.3f over %llu seeds, worst seed %llu: %.3f\n", policy,
                 sum / static_cast<double>(seeds), static_cast<unsigned long long>(seeds),
                 static_cast<unsigned long long>(worst_seed), *worst);
}

void summary::add(const seed_result& r) {
    if (seeds_++ == 0) first_seed_ = r.seed;
    if (r.failure) ++failed_;
    events_ += r.events;
    virtual_seconds_ += static_cast<double>(r.virtual_time) / 1e9;
    const core::stats& c = r.counters;
    totals_.acquires += c.acquires;
    totals_.grants_immediate += c.grants_immediate;
    totals_.grants_after_wait += c.grants_after_wait;
    for (std::size_t i = 0; i < c.rejections.size(); ++i) totals_.rejections[i] += c.rejections[i];
    totals_.spawns += c.spawns;
    totals_.spawn_failures += c.spawn_failures;
    for (std::size_t i = 0; i < c.retirements.size(); ++i) totals_.retirements[i] += c.retirements[i];
    totals_.leaks_suspected += c.leaks_suspected;
    totals_.checks_started += c.checks_started;
    totals_.checks_passed += c.checks_passed;
    totals_.checks_failed += c.checks_failed;
    totals_.resets_started += c.resets_started;
    totals_.resets_failed += c.resets_failed;
    totals_.resizes += c.resizes;
    if (r.isolation) ++isolation_seeds_;
    if (c.resizes > 0) ++resized_seeds_;
    const adapter_counters& a = r.adapter;
    adapter_.timer_ticks += a.timer_ticks;
    adapter_.cancels += a.cancels;
    adapter_.late_cancels += a.late_cancels;
    adapter_.deregisters += a.deregisters;
    adapter_.dirty_releases += a.dirty_releases;
    adapter_.deaths_idle += a.deaths_idle;
    adapter_.deaths_leased += a.deaths_leased;
    adapter_.deaths_unnoticed += a.deaths_unnoticed;
    adapter_.checks_found_dead += a.checks_found_dead;
    adapter_.checks_failed += a.checks_failed;
    adapter_.slow_checks += a.slow_checks;
    adapter_.resets_failed += a.resets_failed;
    adapter_.outages += a.outages;
    adapter_.invalid_events += a.invalid_events;
    adapter_.bad_sizes += a.bad_sizes;
    adapter_.capped_acquires += a.capped_acquires;
    adapter_.steps_at_cap += a.steps_at_cap;
    adapter_.steps_behind_cap += a.steps_behind_cap;
    if (a.steps_at_cap > 0) ++capped_seeds_;
    if (r.shut_down) ++shut_down_;
    if (r.closed) ++closed_;
    const int p = static_cast<int>(r.policy);
    if (r.fairness.share_index) share_[p].add(*r.fairness.share_index, r.seed);
    if (r.fairness.grant_index) grant_[p].add(*r.fairness.grant_index, r.seed);
}

void summary::print(std::FILE* out, double wall_seconds) const {
    const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(out, "fairpool-sim: %llu seed%s (%llu..%llu), %s\n", u(seeds_), seeds_ == 1 ? "" : "s",
                 u(first_seed_), u(first_seed_ + (seeds_ ? seeds_ - 1 : 0)),
                 failed_ ? "FAILED" : "all passed");
    const double rate = wall_seconds > 0 ? static_cast<double>(events_) / wall_seconds : 0;
    std::fprintf(out, "  events        %llu simulated in %.2f s wall (%.0f events/s); %.1f s of virtual time\n",
                 u(events_), wall_seconds, rate, virtual_seconds_);
    const core::stats& t = totals_;
    std::fprintf(out, "  acquires      %llu\n", u(t.acquires));
    std::fprintf(out, "  grants        %llu immediate, %llu after waiting\n", u(t.grants_immediate),
                 u(t.grants_after_wait));
    std::fprintf(out, "  rejections   ");
    for (int i = 0; i < core::reject_reason_count; ++i)
        std::fprintf(out, " %s=%llu", core::to_string(static_cast<core::reject_reason>(i)), u(t.rejections[i]));
    std::fprintf(out, "\n  spawns        %llu, spawn failures %llu\n", u(t.spawns), u(t.spawn_failures));
    std::fprintf(out, "  retirements  ");
    for (int i = 0; i < core::retire_reason_count; ++i)
        std::fprintf(out, " %s=%llu", core::to_string(static_cast<core::retire_reason>(i)), u(t.retirements[i]));
    std::fprintf(out, "\n  leaks         %llu suspected\n", u(t.leaks_suspected));
    std::fprintf(out, "  checks        %llu started, %llu passed, %llu failed; resets %llu started, %llu failed\n",
                 u(t.checks_started), u(t.checks_passed), u(t.checks_failed), u(t.resets_started),
                 u(t.resets_failed));
    const adapter_counters& a = adapter_;
    std::fprintf(out,
                 "  adapter       %llu timer ticks, %llu cancels (%llu after completion), %llu deregistrations\n",
                 u(a.timer_ticks), u(a.cancels), u(a.late_cancels), u(a.deregisters));
    std::fprintf(out,
                 "  faults        %llu dirty releases, %llu deaths idle + %llu leased + %llu unnoticed, %llu backend "
                 "outages, %llu invalid events (all refused as expected)\n",
                 u(a.dirty_releases), u(a.deaths_idle), u(a.deaths_leased), u(a.deaths_unnoticed), u(a.outages),
                 u(a.invalid_events));
    std::fprintf(out,
                 "  health faults %llu checks found a dead resource, %llu failed a live one, %llu slow checks, "
                 "%llu resets failed\n",
                 u(a.checks_found_dead), u(a.checks_failed), u(a.slow_checks), u(a.resets_failed));
    std::fprintf(out,
                 "  isolation     %llu seeds with caps or resizes: %llu acquires naming a cap, a handle at its cap "
                 "after %llu steps (in %llu seeds), waiters behind a cap after %llu; %llu resizes (in %llu seeds), "
                 "%llu retirements resize, %llu bad sizes refused\n",
                 u(isolation_seeds_), u(a.capped_acquires), u(a.steps_at_cap), u(capped_seeds_), u(a.steps_behind_cap),
                 u(t.resizes), u(resized_seeds_), u(t.retirements[static_cast<int>(core::retire_reason::resize)]),
                 u(a.bad_sizes));
    std::fprintf(out, "  shutdown      %llu seeds shut down mid-load, %llu reached `closed`\n", u(shut_down_),
                 u(closed_));
    std::fprintf(out,
                 "  fairness      Jain's index per seed of x = grants from the queue / weighted fair share while\n"
                 "                backlogged, over the handles that waited (entitled to >= 1 grant; seeds with >= 2\n"
                 "                such handles and >= %llu grants from the queue):\n",
                 u(min_queue_grants));
    for (int p = 0; p < 2; ++p) share_[p].print(out, policy_name(p));
    std::fprintf(out, "                plain Jain's index of queue grants per handle that waited (demand-sensitive):\n");
    for (int p = 0; p < 2; ++p) grant_[p].print(out, policy_name(p));
}

}  // namespace fairpool::sim
