// The invariant checker from a snapshot (docs/CONTRACT.md section 7.2): its bookkeeping
// set to the state the records describe, so that a segment of a recording can be
// checked from its snapshot on.
#include "fairpool/model/invariant_checker.hpp"

#include <type_traits>

#include "snapshot_counters.hpp"

namespace fairpool::model {

using core::slot_state;

invariant_checker::invariant_checker(const core::config& config, std::span<const core::snapshot_record> snapshot)
    : invariant_checker(config) {
    std::vector<core::snapshot_handle> rotation;
    for (const core::snapshot_record& r : snapshot) {
        if (const auto* h = std::get_if<core::snapshot_handle>(&r))
            rotation.push_back(*h);
        else
            restore(r);
    }
    restore_rotation(rotation);
    // The gauges follow from the records (section 7.2); a bad event after the snapshot
    // must leave them as they are (invariant 11).
    prev_.queued_waiters = queued_.size();
    prev_.active_handles = handles_.size();
    for (const auto& [id, h] : handles_) prev_.active_weight += h.weight;
    for (const auto& [id, h] : handles_) prev_.waiters_behind_cap += at_cap(id) ? h.waiters.size() : 0;
    for (const auto& [id, k] : known_) prev_.handles_at_cap += at_cap(id) ? 1 : 0;
    for (int i = 0; i < core::slot_state_count; ++i) prev_.slots[i] = count(static_cast<slot_state>(i));
    have_prev_ = true;
}

void invariant_checker::restore(const core::snapshot_record& record) {
    std::visit(
        [&](const auto& r) {
            using R = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<R, core::snapshot_begin>) {
                started_ = r.started;
                now_ = r.now;
                // Only the order of these sequence numbers matters: the snapshot's are
                // "the count before", this checker's "the count after" (1, 2, 3, ...).
                arrivals_ = r.arrivals;
                idle_seq_ = r.idle_seq;
                jitter_state_ = r.jitter_state;
                last_lease_ = r.last_lease;
                shutting_down_ = r.shutting_down;
                closed_emitted_ = r.closed;
                spawn_failures_in_a_row_ = r.spawn_failures_in_a_row;
                backoff_end_ = r.backoff_end;
            } else if constexpr (std::is_same_v<R, core::snapshot_sizes>) {
                max_slots_ = r.max_slots, min_slots_ = r.min_slots;
            } else if constexpr (std::is_same_v<R, core::snapshot_slot>) {
                slot_info& s = slots_.at(r.index);
                s.state = r.state;
                // Spawned since its last retire: every state a spawn leads to but retiring.
                s.fresh = r.state != slot_state::spawning && r.state != slot_state::retiring;
                s.expires_at = r.expires_at;
                s.uses = r.uses;
                s.idle_seq = r.idle_seq + 1;
                s.idle_since = r.idle_since;
                s.verified = r.verified_at;
                s.keepalive = r.keepalive_check;
                s.lease = r.state == slot_state::leased ? r.lease : 0;
                s.granted_at = r.granted_at;
                s.holder = r.state == slot_state::leased ? r.handle : 0;
                if (r.state == slot_state::leased) ++known_[r.handle].leases;  // decision 15
                s.leak_reported = r.state == slot_state::leased && !r.leak_unreported;
            } else if constexpr (std::is_same_v<R, core::snapshot_idle>) {
                slots_.at(r.slot).verify_seq = ++verify_seq_;  // the idle order is by verification
            } else if constexpr (std::is_same_v<R, core::snapshot_waiter>) {
                const waiter_info w{r.id, r.handle, r.arrival + 1, r.arrived_at, r.deadline};
                queued_[w.id] = w;
                by_arrival_[w.arrival] = w.id;
                by_deadline_.emplace(w.deadline, w.arrival, w.id);
                handles_[w.handle].waiters.emplace(w.arrival, w.id);
            } else if constexpr (std::is_same_v<R, core::snapshot_counter>) {
                detail::stats_field(prev_, r.name) = r.value;
            } else if constexpr (std::is_same_v<R, core::snapshot_bucket>) {
                prev_.wait_histogram.at(r.index) = r.count;
            }
        },
        record);
}

// The round-robin rules (check_round_robin) judge queue grants by a history the
// snapshot does not hold; it holds what that history left: the rotation and the front
// handle's turn in progress. So the history is made up to match: every handle active
// from the start, having entered the back in rotation order (the front first), and the
// front handle granted `turn` times in a row just before the snapshot, a run that began
// with its current turn. Whatever came before cannot be checked; everything after is,
// by the same rules as in a run from `start`.
// Handle records after the rotation (handles with a cap: at it, or with leases and no
// waiter) give caps only; a handle at its cap is out of the rotation (decision 15).
void invariant_checker::restore_rotation(const std::vector<core::snapshot_handle>& rotation) {
    std::uint64_t stamp = 0;
    const core::snapshot_handle* front_record = nullptr;
    for (const core::snapshot_handle& r : rotation) {
        known_[r.id].cap = r.max_leases;
        const auto it = handles_.find(r.id);
        if (it == handles_.end()) continue;  // leases but no waiter
        handle_info& h = it->second;
        h.weight = r.weight;
        h.activated_at = 0;
        h.entry_lo = h.entry_hi = ++stamp;
        if (front_record == nullptr && !at_cap(r.id)) front_record = &r;
    }
    rr_clock_ = stamp;
    if (front_record == nullptr || front_record->turn == 0) return;
    const core::snapshot_handle& front = *front_record;
    handle_info& h = handles_[front.id];
    rr_grants_ = front.turn;
    h.run_start = 1;
    h.last_grant = rr_grants_;
    h.last_grant_stamp = ++rr_clock_;
    rr_last_handle_ = front.id;
}

}  // namespace fairpool::model
