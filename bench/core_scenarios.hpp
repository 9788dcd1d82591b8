#pragma once
// The core's benchmark scenarios, shared by core_bench (time, Google Benchmark) and
// core_instructions (instructions, callgrind): each is a started scheduler in its
// steady state and one `iteration()` of work.
//
//   cycle                 acquire → immediate grant → clean release, one idle slot
//   queued_waiters/N      N waiters queued; each iteration: release (direct handoff
//                         to the next waiter) + a new acquire that queues at the back
//   active_handles/H      the same, with 20,000 waiters spread over H handles in the
//                         round-robin rotation
//   snapshot/N            a whole snapshot (section 7.2) of the queued_waiters/N state,
//                         written into a preallocated buffer, as a recorder does
#include <array>
#include <cstdint>
#include <vector>

#include "fairpool/core/scheduler.hpp"

namespace fairpool::bench {

inline constexpr std::uint64_t queued_slots = 4;

// Keeps the lease of each slot: the scenarios release it next.
struct last_grant {
    core::effect grant;
    std::array<std::uint64_t, queued_slots> lease_of{};

    void observe(const core::step_result& r) {
        for (const core::effect& f : r.effects)
            if (f.kind == core::effect_kind::grant) grant = f, lease_of[f.slot] = f.lease;
    }
};

class cycle_scenario {
public:
    cycle_scenario() : s_(config(), 1) {
        grants_.observe(s_.step(core::event::start(0)));
        grants_.observe(s_.step(core::event::spawned(1, 0)));
    }

    void iteration() {
        grants_.observe(s_.step(core::event::acquire(now_, waiter_++, 7)));
        grants_.observe(s_.step(core::event::release(now_, grants_.grant.slot, grants_.grant.lease)));
        ++now_;
    }

    [[nodiscard]] const core::scheduler& scheduler() const { return s_; }

private:
    static core::config config() {
        core::config c;
        c.max_slots = c.min_slots = 1;
        return c;
    }

    core::scheduler s_;
    last_grant grants_;
    core::nanos now_ = 2;
    std::uint64_t waiter_ = 1;
};

// N queued waiters over H handles, each with a deadline far away (so the deadline
// queue holds all of them); steady state: one handoff and one new arrival.
class queued_scenario {
public:
    queued_scenario(std::uint64_t waiters, std::uint64_t handles)
        : s_(config(waiters), 1), waiters_(waiters), handles_(handles) {
        grants_.observe(s_.step(core::event::start(0)));
        for (std::uint32_t i = 0; i < queued_slots; ++i) grants_.observe(s_.step(core::event::spawned(1, i)));
        for (std::uint32_t i = 0; i < queued_slots; ++i)
            grants_.observe(s_.step(core::event::acquire(2, waiter_++, 0)));
        for (std::uint64_t i = 0; i < waiters; ++i)
            grants_.observe(s_.step(core::event::acquire(now_, waiter_++, i % handles)));
    }

    void iteration() {
        ++now_;
        grants_.observe(s_.step(core::event::release(now_, next_slot_, grants_.lease_of[next_slot_])));
        grants_.observe(s_.step(core::event::acquire(now_, waiter_, waiter_ % handles_)));
        ++waiter_;
        next_slot_ = (next_slot_ + 1) % queued_slots;
    }

    // The depth never drifts: every iteration hands one slot over and queues one waiter.
    [[nodiscard]] bool steady() const { return s_.counters().queued_waiters == waiters_; }
    [[nodiscard]] const core::scheduler& scheduler() const { return s_; }

private:
    static core::config config(std::uint64_t waiters) {
        core::config c;
        c.max_slots = c.min_slots = queued_slots;
        c.max_waiters = waiters + 1;
        c.acquire_timeout = 1'000'000'000'000;
        return c;
    }

    core::scheduler s_;
    last_grant grants_;
    std::uint64_t waiters_;
    std::uint64_t handles_;
    core::nanos now_ = 2;
    std::uint64_t waiter_ = 1;
    std::uint32_t next_slot_ = 0;
};

class snapshot_scenario {
public:
    explicit snapshot_scenario(std::uint64_t waiters) : state_(waiters, 16) {
        records_.reserve(core::max_snapshot_records(state_.scheduler().configuration()));
    }

    void iteration() {
        records_.clear();
        auto keep = [this](const core::snapshot_record& r) { records_.push_back(r); };
        state_.scheduler().snapshot(keep);
    }

    [[nodiscard]] std::size_t records() const { return records_.size(); }

private:
    queued_scenario state_;
    std::vector<core::snapshot_record> records_;
};

inline constexpr std::uint64_t active_handles_waiters = 20'000;
inline constexpr std::uint64_t queued_waiters_handles = 16;

}  // namespace fairpool::bench
