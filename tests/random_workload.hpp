#pragma once
// A seeded random workload for whole-machine tests (allocation, determinism): mostly
// valid events chosen from the machine's current state, with time moving forward,
// and a few invalid ones. It allocates only at construction, so it can run inside
// an allocation-counting window.
#include <cstdint>
#include <random>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool::testing {

class random_workload {
public:
    random_workload(const core::config& c, std::uint64_t seed, std::uint64_t max_waiter_ids)
        : config_(c.resolved()), rng_(seed), lease_of_slot_(config_.max_slots, 0),
          live_position_(max_waiter_ids + 2, none) {
        live_.reserve(max_waiter_ids + 1);
    }

    // The next event, given the machine's current slot states.
    template <class Machine>
    core::event next(const Machine& m) {
        if (!started_) {
            started_ = true;
            return core::event::start(now_);
        }
        now_ += pick(4) == 0 ? pick(1000) : pick(20);
        const auto roll = pick(100);
        if (roll < 35) return acquire();
        if (roll < 42 && !live_.empty()) return core::event::cancel(now_, live_[pick(live_.size())]);
        if (roll < 44) return core::event::deregister(now_, 1 + pick(handles));
        if (roll < 46) return invalid();
        if (roll < 47 && pick(50) == 0) return core::event::shutdown(now_);
        if (roll < 49) return core::event::tick(now_);
        return slot_event(m);
    }

    // Call after each step with its result: admitted waiters are tracked until their
    // grant or rejection, and each slot's current lease is remembered.
    void observe(const core::event& e, const core::step_result& r) {
        if (e.kind == core::event_kind::acquire && r.ok() && e.waiter < live_position_.size() &&
            live_position_[e.waiter] == pending) {
            live_position_[e.waiter] = static_cast<std::uint32_t>(live_.size());
            live_.push_back(e.waiter);
        }
        for (const core::effect& f : r.effects) {
            if (f.kind == core::effect_kind::grant) lease_of_slot_[f.slot] = f.lease;
            if (f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject) forget(f.waiter);
        }
    }

private:
    static constexpr std::uint64_t handles = 8;
    static constexpr std::uint32_t none = ~std::uint32_t{0};
    static constexpr std::uint32_t pending = none - 1;

    std::uint64_t pick(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }

    core::event acquire() {
        const std::uint64_t waiter = next_waiter_++;
        if (waiter < live_position_.size()) live_position_[waiter] = pending;
        std::optional<core::nanos> deadline;
        if (pick(3) == 0) deadline = now_ + pick(300);
        std::optional<std::uint64_t> weight;
        if (pick(4) == 0) weight = 1 + pick(3);
        return core::event::acquire(now_, waiter, 1 + pick(handles), deadline, weight);
    }

    // On completion the waiter leaves `live_` (swap with the last).
    void forget(std::uint64_t waiter) {
        if (waiter >= live_position_.size()) return;
        const std::uint32_t at = live_position_[waiter];
        live_position_[waiter] = none;
        if (at == none || at == pending) return;
        const std::uint64_t last = live_.back();
        live_[at] = last;
        if (last != waiter) live_position_[last] = at;
        live_.pop_back();
    }

    template <class Machine>
    core::event slot_event(const Machine& m) {
        const auto slot = static_cast<std::uint32_t>(pick(config_.max_slots));
        switch (m.slot(slot)) {
            case core::slot_state::leased:
                return core::event::release(now_, slot, lease_of_slot_[slot],
                                            pick(5) == 0 ? core::release_outcome::dirty : core::release_outcome::clean);
            case core::slot_state::spawning:
                return pick(6) == 0 ? core::event::spawn_failed(now_, slot) : core::event::spawned(now_, slot);
            case core::slot_state::retiring: return core::event::retired(now_, slot);
            case core::slot_state::idle: return pick(8) == 0 ? core::event::died(now_, slot) : core::event::tick(now_);
            case core::slot_state::empty: return core::event::tick(now_);
        }
        return core::event::tick(now_);
    }

    core::event invalid() {
        switch (pick(6)) {
            case 0: return core::event::tick(now_ - std::min(now_, 1 + pick(5)));
            case 1: return core::event::release(now_, static_cast<std::uint32_t>(pick(70000)), pick(5));
            case 2: return core::event::acquire(now_, next_waiter_ - 1, 1, std::nullopt, pick(2) * 70000);
            case 3: return core::event::spawned(now_, static_cast<std::uint32_t>(pick(config_.max_slots)));
            case 4: return core::event::retired(now_, static_cast<std::uint32_t>(pick(config_.max_slots)));
            default: return core::event::start(now_);
        }
    }

    core::config config_;
    std::mt19937_64 rng_;
    bool started_ = false;
    core::nanos now_ = 0;
    std::uint64_t next_waiter_ = 1;
    std::vector<std::uint64_t> lease_of_slot_;
    std::vector<std::uint64_t> live_;             // admitted, not yet completed
    std::vector<std::uint32_t> live_position_;    // by waiter id: index in live_, pending or none
};

}  // namespace fairpool::testing
