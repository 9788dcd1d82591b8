// The reference model's snapshots (docs/CONTRACT.md section 7.2): restoring from the
// records and writing them, read straight from the contract's text, not from the core.
#include "fairpool/model/reference_model.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <type_traits>

#include "snapshot_counters.hpp"

namespace fairpool::model {

using core::nanos;
using core::slot_state;

reference_model::reference_model(const core::config& config, std::span<const core::snapshot_record> snapshot)
    : reference_model(config) {
    for (const core::snapshot_record& r : snapshot) restore(r);
    // Handle records list the rotation, then capped handles outside it: those at their
    // cap, or without waiters.
    std::deque<std::uint64_t> listed;
    listed.swap(rotation_);
    for (const std::uint64_t handle : listed)
        if (queued_of(handle) > 0 && is_eligible(handle)) rotation_.push_back(handle);
    for (const std::uint64_t handle : listed)
        if (queued_of(handle) == 0) turns_.erase(handle);
    refresh_gauges();
}

void reference_model::restore(const core::snapshot_record& record) {
    std::visit(
        [&](const auto& r) {
            using R = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<R, core::snapshot_begin>) {
                last_now_ = r.now;
                started_ = r.started;
                shutting_down_ = r.shutting_down;
                closed_emitted_ = r.closed;
                next_lease_ = r.last_lease + 1;
                highest_waiter_ = r.highest_waiter;
                arrivals_ = r.arrivals;
                failures_ = r.spawn_failures_in_a_row;
                // 0 and 0 mean no failure since the last spawned: no backoff.
                if (r.spawn_failures_in_a_row > 0 || r.backoff_end > 0) backoff_end_ = r.backoff_end;
                idle_seq_ = r.idle_seq;
                jitter_state_ = r.jitter_state;
            } else if constexpr (std::is_same_v<R, core::snapshot_sizes>) {
                max_slots_ = r.max_slots;
                min_slots_ = r.min_slots;
            } else if constexpr (std::is_same_v<R, core::snapshot_slot>) {
                slot_record& s = slots_.at(r.index);
                s.holder = r.handle;
                s.state = r.state;
                s.expires_at = r.expires_at;
                s.uses = r.uses;
                s.idle_since = r.idle_since;
                s.idle_seq = r.idle_seq;
                s.verified = r.verified_at;
                s.keepalive = r.keepalive_check;
                s.lease = r.lease;
                s.granted_at = r.granted_at;
                s.leak_reported = r.state == slot_state::leased && !r.leak_unreported;
            } else if constexpr (std::is_same_v<R, core::snapshot_idle>) {
                (void)slots_.at(r.slot);
                idle_order_.push_back(r.slot);
            } else if constexpr (std::is_same_v<R, core::snapshot_handle>) {
                rotation_.push_back(r.id);
                turns_[r.id] = turn_record{r.weight, r.turn};
                caps_[r.id] = r.max_leases;
            } else if constexpr (std::is_same_v<R, core::snapshot_waiter>) {
                waiters_.push_back(waiter_record{r.id, r.handle, r.deadline, r.arrived_at, r.arrival});
            } else if constexpr (std::is_same_v<R, core::snapshot_counter>) {
                detail::stats_field(stats_, r.name) = r.value;
            } else if constexpr (std::is_same_v<R, core::snapshot_bucket>) {
                stats_.wait_histogram.at(r.index) = r.count;
            }
        },
        record);
}

std::vector<core::snapshot_record> reference_model::snapshot() const {
    std::vector<core::snapshot_record> out;
    core::snapshot_begin begin;
    begin.now = last_now_;
    begin.started = started_;
    begin.shutting_down = shutting_down_;
    begin.closed = closed_emitted_;
    begin.last_lease = next_lease_ - 1;
    begin.highest_waiter = highest_waiter_;
    begin.arrivals = arrivals_;
    begin.spawn_failures_in_a_row = failures_;
    begin.backoff_end = backoff_end_.value_or(0);
    begin.idle_seq = idle_seq_;
    begin.jitter_state = jitter_state_;
    out.emplace_back(begin);
    if (max_slots_ != config_.max_slots || min_slots_ != config_.min_slots)
        out.emplace_back(core::snapshot_sizes{max_slots_, min_slots_});
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].state != slot_state::empty) out.emplace_back(snapshot_of(i));
    for (const std::uint32_t slot : idle_order_) out.emplace_back(core::snapshot_idle{slot});
    auto cap_of = [&](std::uint64_t handle) {
        const auto it = caps_.find(handle);
        return it == caps_.end() ? std::uint64_t{0} : it->second;
    };
    for (const std::uint64_t handle : rotation_) {
        const turn_record& t = turns_.at(handle);
        out.emplace_back(core::snapshot_handle{handle, t.weight, t.turn, cap_of(handle)});
    }
    // Then every other known handle with a cap, by id (caps_ is ordered by id).
    for (const auto& [handle, cap] : caps_) {
        if (cap == 0 || in_rotation(handle) || !is_known(handle)) continue;
        const auto t = turns_.find(handle);
        out.emplace_back(core::snapshot_handle{handle, t == turns_.end() ? 1 : t->second.weight, 0, cap});
    }
    for (const waiter_record& w : waiters_)
        out.emplace_back(core::snapshot_waiter{w.id, w.handle, w.deadline, w.acquired_at, w.arrival});
    detail::put_counters(stats_, [&](const core::snapshot_record& r) { out.push_back(r); });
    out.emplace_back(core::snapshot_end{});
    return out;
}

// Section 7.2, "What the fields mean": each state writes only the fields it uses.
core::snapshot_slot reference_model::snapshot_of(std::uint32_t index) const {
    const slot_record& s = slots_[index];
    core::snapshot_slot r;
    r.index = index;
    r.state = s.state;
    switch (s.state) {
        case slot_state::idle:
            r.expires_at = s.expires_at, r.verified_at = s.verified, r.idle_since = s.idle_since;
            r.idle_seq = s.idle_seq, r.uses = s.uses;
            break;
        case slot_state::leased:
            r.expires_at = s.expires_at, r.granted_at = s.granted_at, r.lease = s.lease, r.uses = s.uses;
            r.handle = s.holder;
            r.leak_unreported = config_.leak_threshold > 0 && !s.leak_reported;
            break;
        case slot_state::checking:
            r.expires_at = s.expires_at, r.idle_since = s.idle_since, r.idle_seq = s.idle_seq, r.uses = s.uses;
            r.keepalive_check = s.keepalive;
            break;
        case slot_state::resetting: r.expires_at = s.expires_at, r.uses = s.uses; break;
        case slot_state::empty:
        case slot_state::spawning:
        case slot_state::retiring: break;
    }
    return r;
}

}  // namespace fairpool::model
