// Per-step cost of the core scheduler, and its flatness in queue depth and in the
// number of active handles (docs/CONTRACT.md invariant 10: O(log W + effects)).
//
//   cycle                 acquire → immediate grant → clean release, one idle slot
//   queued_waiters/N      N waiters queued; each iteration: release (direct handoff
//                         to the next waiter) + a new acquire that queues at the back
//   active_handles/H      the same, with the N waiters spread over H handles in the
//                         round-robin rotation
#include <benchmark/benchmark.h>

#include <array>

#include "fairpool/core/scheduler.hpp"

namespace {

using fairpool::core::config;
using fairpool::core::effect;
using fairpool::core::event;
using fairpool::core::scheduler;

constexpr std::uint64_t slots = 4;

// Keeps the lease of each slot: the benchmark releases it next.
struct last_grant {
    effect grant;
    std::array<std::uint64_t, slots> lease_of{};

    void observe(const fairpool::core::step_result& r) {
        for (const effect& f : r.effects)
            if (f.kind == fairpool::core::effect_kind::grant) grant = f, lease_of[f.slot] = f.lease;
    }
};

// A started pool with every slot spawned and leased; returns the time reached.
std::uint64_t warm_and_lease_all(scheduler& s, last_grant& sink, std::uint64_t& waiter) {
    sink.observe(s.step(event::start(0)));
    for (std::uint32_t i = 0; i < slots; ++i) sink.observe(s.step(event::spawned(1, i)));
    for (std::uint32_t i = 0; i < slots; ++i) sink.observe(s.step(event::acquire(2, waiter++, 0)));
    return 2;
}

void cycle(benchmark::State& state) {
    config c;
    c.max_slots = c.min_slots = 1;
    scheduler s(c, 1);
    last_grant sink;
    sink.observe(s.step(event::start(0)));
    sink.observe(s.step(event::spawned(1, 0)));
    std::uint64_t now = 2;
    std::uint64_t waiter = 1;
    for (auto _ : state) {
        sink.observe(s.step(event::acquire(now, waiter++, 7)));
        sink.observe(s.step(event::release(now, sink.grant.slot, sink.grant.lease)));
        ++now;
    }
    state.SetItemsProcessed(state.iterations());
}

// N queued waiters over H handles, each with a deadline far away (so the deadline
// heap holds all of them); steady state: one handoff and one new arrival per iteration.
void queued(benchmark::State& state, std::uint64_t waiters, std::uint64_t handles) {
    config c;
    c.max_slots = c.min_slots = slots;
    c.max_waiters = waiters + 1;
    c.acquire_timeout = 1'000'000'000'000;
    scheduler s(c, 1);
    last_grant sink;
    std::uint64_t waiter = 1;
    std::uint64_t now = warm_and_lease_all(s, sink, waiter);
    for (std::uint64_t i = 0; i < waiters; ++i) sink.observe(s.step(event::acquire(now, waiter++, i % handles)));
    std::uint32_t next_slot = 0;
    for (auto _ : state) {
        ++now;
        sink.observe(s.step(event::release(now, next_slot, sink.lease_of[next_slot])));
        sink.observe(s.step(event::acquire(now, waiter, waiter % handles)));
        ++waiter;
        next_slot = (next_slot + 1) % slots;
    }
    if (s.counters().queued_waiters != waiters) state.SkipWithError("queue depth drifted");
    state.SetItemsProcessed(state.iterations());
}

void queued_waiters(benchmark::State& state) { queued(state, static_cast<std::uint64_t>(state.range(0)), 16); }

void active_handles(benchmark::State& state) {
    queued(state, 20'000, static_cast<std::uint64_t>(state.range(0)));
}

}  // namespace

BENCHMARK(cycle);
BENCHMARK(queued_waiters)->Arg(10)->Arg(1'000)->Arg(100'000);
BENCHMARK(active_handles)->Arg(1)->Arg(100)->Arg(10'000);
BENCHMARK_MAIN();
