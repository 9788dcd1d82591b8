// Writing a scheduler's state as snapshot records, and restoring one from them
// (docs/CONTRACT.md, section 7.2). Restoring refuses, naming the record, any snapshot
// that no scheduler with the config could be in: what it accepts is a state some run
// reaches after a step, so every rule the steps rely on holds.
#include <algorithm>
#include <limits>
#include <string>

#include "fairpool/core/scheduler.hpp"

namespace fairpool::core {

namespace {

using detail::no_index;

template <typename T>
constexpr std::size_t index_of = snapshot_index_of<T>();  // of T in snapshot_record

constexpr nanos saturating_add(nanos a, nanos b) noexcept { return a > never - b ? never : a + b; }
constexpr bool reached(nanos due, nanos now) noexcept { return due != never && due <= now; }
// A count the steps add 1 to cannot be restored at its largest value: the next one would wrap.
constexpr std::uint64_t last_count = std::numeric_limits<std::uint64_t>::max();

// The fields each state uses (section 7.2); the others hold their defaults.
struct slot_fields {
    bool expires_at, verified_at, idle_since, idle_seq, granted_at, lease, uses, leak_unreported, keepalive_check,
        handle;
};

constexpr slot_fields fields_of(slot_state s) noexcept {
    switch (s) {
        case slot_state::idle: return {true, true, true, true, false, false, true, false, false, false};
        case slot_state::leased: return {true, false, false, false, true, true, true, true, false, true};
        case slot_state::checking: return {true, false, true, true, false, false, true, false, true, false};
        case slot_state::resetting: return {true, false, false, false, false, false, true, false, false, false};
        default: return {};
    }
}

// The record with only the fields its state uses.
snapshot_slot normalized(snapshot_slot r) noexcept {
    const slot_fields f = fields_of(r.state);
    const snapshot_slot defaults{};
    if (!f.expires_at) r.expires_at = defaults.expires_at;
    if (!f.verified_at) r.verified_at = 0;
    if (!f.idle_since) r.idle_since = 0;
    if (!f.idle_seq) r.idle_seq = 0;
    if (!f.granted_at) r.granted_at = 0;
    if (!f.lease) r.lease = 0;
    if (!f.uses) r.uses = 0;
    if (!f.leak_unreported) r.leak_unreported = false;
    if (!f.keepalive_check) r.keepalive_check = false;
    if (!f.handle) r.handle = 0;
    return r;
}

std::uint32_t u32(std::uint64_t v) noexcept { return static_cast<std::uint32_t>(v); }

[[noreturn]] void refuse(std::size_t record, const std::string& message) { throw snapshot_error(record, message); }

std::string slot_name(std::uint32_t s) { return "slot " + std::to_string(s); }

}  // namespace

// ---------------------------------------------------------------------------------
// Writing

void scheduler::snapshot(snapshot_sink sink) const {
    sink(snapshot_begin{now_, last_lease_, highest_waiter_, arrivals_, spawn_failures_in_a_row_, backoff_end_, idle_seq_,
                        jitter_state_, started_, shutting_down_, closed_});
    if (max_slots_ != config_.max_slots || min_slots_ != config_.min_slots)
        sink(snapshot_sizes{max_slots_, min_slots_});
    for (std::uint32_t s = 0; s < capacity_; ++s) {
        const slot_record& slot = slots_[s];
        if (slot.state == slot_state::empty) continue;
        const bool leased = slot.state == slot_state::leased;
        sink(normalized({slot.expires_at, slot.verified_at, slot.idle_since, leased ? 0 : slot.idle_seq,
                         slot.granted_at, slot.lease, slot.uses, s, slot.state, slot.leak_unreported,
                         slot.keepalive_check, leased ? slot.holder : 0}));
    }
    for (std::uint32_t s = idle_order_.head; s != no_index; s = idle_links_.next(s)) sink(snapshot_idle{s});
    auto handle_of = [this](std::uint32_t h) {
        const handle_record& handle = handles_[h];
        return snapshot_handle{handle.id, handle.weight, handle.turn, handle.cap};
    };
    for (std::uint32_t h = rotation_.head; h != no_index; h = rotation_links_.next(h)) sink(handle_of(h));
    parked_capped_handles();
    for (const std::uint32_t h : snapshot_scratch_) sink(handle_of(h));
    for (std::uint32_t w = arrivals_order_.head; w != no_index; w = arrival_links_.next(w)) {
        const waiter_record& waiter = waiters_[w];
        sink(snapshot_waiter{waiter.id, handles_[waiter.handle].id, waiter.deadline, waiter.arrived_at, waiter.arrival});
    }
    for (int c = 0; c < counter_count; ++c)
        if (const std::uint64_t v = counter_of(stats_, static_cast<counter>(c)); v != 0)
            sink(snapshot_counter{static_cast<counter>(c), v});
    for (int b = 0; b < wait_histogram_buckets; ++b)
        if (const std::uint64_t n = stats_.wait_histogram[static_cast<std::size_t>(b)]; n != 0)
            sink(snapshot_bucket{static_cast<std::uint32_t>(b), n});
    sink(snapshot_end{});
}

std::uint64_t scheduler::snapshot_size() const noexcept {
    parked_capped_handles();
    std::uint64_t n = 2 + occupied() + idle_order_.size + rotation_.size + snapshot_scratch_.size() +
                      arrivals_order_.size;
    if (max_slots_ != config_.max_slots || min_slots_ != config_.min_slots) ++n;
    for (int c = 0; c < counter_count; ++c) n += counter_of(stats_, static_cast<counter>(c)) != 0 ? 1 : 0;
    for (const std::uint64_t bucket : stats_.wait_histogram) n += bucket != 0 ? 1 : 0;
    return n;
}

// Every capped handle outside the rotation holds a lease (it is at its cap, or has no
// waiter and is known by its leases): the leased slots find them all.
void scheduler::parked_capped_handles() const {
    snapshot_scratch_.clear();
    if (!counting_leases_) return;  // no cap can exist yet
    for (std::uint32_t s = 0; s < capacity_; ++s) {
        const slot_record& slot = slots_[s];
        if (slot.state != slot_state::leased) continue;
        const std::uint32_t h = holders_[s];
        if (handles_[h].cap != 0 && !in_rotation(handles_[h])) snapshot_scratch_.push_back(h);
    }
    std::sort(snapshot_scratch_.begin(), snapshot_scratch_.end(),
              [this](std::uint32_t a, std::uint32_t b) { return handles_[a].id < handles_[b].id; });
    snapshot_scratch_.erase_from(std::unique(snapshot_scratch_.begin(), snapshot_scratch_.end()));
}

// ---------------------------------------------------------------------------------
// Restoring

scheduler::scheduler(const config& c, std::span<const snapshot_record> records, std::uint64_t hash_seed)
    : scheduler(c, hash_seed) {
    restore(records);
}

void scheduler::restore(std::span<const snapshot_record> records) {
    const std::size_t n = records.size();
    if (n == 0 || !std::holds_alternative<snapshot_begin>(records[0])) refuse(0, "a snapshot starts with `snapshot`");
    const auto& begin = std::get<snapshot_begin>(records[0]);
    restore_scalars(begin);
    std::size_t i = 1;
    auto kind_is = [&](std::size_t index) { return i < n && records[i].index() == index; };
    if (kind_is(index_of<snapshot_sizes>)) restore_sizes(std::get<snapshot_sizes>(records[i])), ++i;

    // Slots, by index.
    std::int64_t previous_slot = -1;
    for (; kind_is(index_of<snapshot_slot>); ++i) restore_slot(i, std::get<snapshot_slot>(records[i]), previous_slot);
    restore_leases(i);

    // Idle times, on idle and checking slots: each sets the next idle_seq (decision 5).
    for (std::uint32_t s = 0; s < capacity_; ++s)
        if (fields_of(slots_[s].state).idle_seq) scratch_.push_back(s);
    std::sort(scratch_.begin(), scratch_.end(),
              [this](std::uint32_t a, std::uint32_t b) { return slots_[a].idle_seq < slots_[b].idle_seq; });
    for (std::size_t k = 1; k < scratch_.size(); ++k) {
        const slot_record& earlier = slots_[scratch_[k - 1]];
        const slot_record& later = slots_[scratch_[k]];
        if (earlier.idle_seq == later.idle_seq)
            refuse(i, "two idle or checking slots have idle_seq " + std::to_string(later.idle_seq));
        if (earlier.idle_since > later.idle_since)
            refuse(i, slot_name(scratch_[k]) + ": idle times are set in idle_seq order");
    }
    scratch_.clear();

    // The idle order.
    const std::size_t idle_first = i;
    for (; kind_is(index_of<snapshot_idle>); ++i) {
        const std::uint32_t s = std::get<snapshot_idle>(records[i]).slot;
        if (s >= capacity_ || slots_[s].state != slot_state::idle)
            refuse(i, "idle slot=" + std::to_string(s) + ": not an idle slot");
        if (scratch_.size() == capacity_)
            refuse(i, "idle slot=" + std::to_string(s) + ": more idle records than slot_capacity");
        scratch_.push_back(s);
    }
    std::sort(scratch_.begin(), scratch_.end());
    if (std::adjacent_find(scratch_.begin(), scratch_.end()) != scratch_.end())
        refuse(idle_first, "an idle slot is listed twice");
    if (scratch_.size() != count(slot_state::idle))
        refuse(i, "the idle records list " + std::to_string(scratch_.size()) + " of " +
                      std::to_string(count(slot_state::idle)) + " idle slots");
    scratch_.clear();
    for (std::size_t k = idle_first; k < i; ++k) {
        const std::uint32_t s = std::get<snapshot_idle>(records[k]).slot;
        if (!idle_order_.empty() && slots_[idle_order_.tail].verified_at > slots_[s].verified_at)
            refuse(k, "idle slot=" + std::to_string(s) + ": the idle order is by verification, oldest first");
        if (!idle_order_.empty() && !by_idle_time_ && slots_[idle_order_.tail].idle_seq > slots_[s].idle_seq)
            refuse(k, "idle slot=" + std::to_string(s) + ": without checks the idle order is by idle_seq");
        idle_links_.push_back(idle_order_, s);
        restore_idle_bookkeeping(s);
    }

    // Handles, in rotation order, then the capped ones outside it; then waiters, in
    // arrival order; then who holds each lease.
    const std::size_t handles_first = i;
    for (; kind_is(index_of<snapshot_handle>); ++i) restore_handle(i, std::get<snapshot_handle>(records[i]));
    const waiter_record* last = nullptr;
    for (; kind_is(index_of<snapshot_waiter>); ++i) last = restore_waiter(i, std::get<snapshot_waiter>(records[i]), last);
    restore_lease_holders(i);
    // Each handle record, in order: the rotation's (waiters, below their cap) first.
    std::size_t k = handles_first;
    std::uint32_t next = rotation_.head;
    bool parked = false;
    std::uint64_t previous_parked = 0;
    for (std::uint32_t h = next; h != no_index; h = next, ++k) {
        next = rotation_links_.next(h);
        handle_record& handle = handles_[h];
        const std::string name = "handle id=" + std::to_string(handle.id);
        if (handle.cap != 0 && handle.leases > handle.cap)
            refuse(k, name + ": " + std::to_string(handle.leases) + " leases, above its max_leases=" +
                          std::to_string(handle.cap));
        if (in_rotation(handle)) {
            if (parked) refuse(k, name + ": waiters below its cap, listed after a handle outside the rotation");
            if (fifo_heads_) eligible_heads_.push(waiters_[handle.waiters.head].arrival, 0, h);
            continue;
        }
        if (handle.cap == 0) refuse(k, name + " has no waiter");
        if (handle.waiters.empty() && handle.leases == 0) refuse(k, name + ": a cap without waiters or leases");
        if (parked && handle.id <= previous_parked) refuse(k, name + ": handles outside the rotation go by id");
        if (handle.turn != 0) refuse(k, name + ": a turn outside the rotation");
        if (handle.waiters.empty() && handle.weight != 1) refuse(k, name + ": a weight without waiters");
        parked = true;
        previous_parked = handle.id;
        rotation_links_.remove(rotation_, h);
        stats_.waiters_behind_cap += handle.waiters.size;
    }

    // Counters and the histogram.
    int previous_counter = -1;
    for (; kind_is(index_of<snapshot_counter>); ++i) {
        const auto& r = std::get<snapshot_counter>(records[i]);
        const int c = static_cast<int>(r.name);
        if (!started_) refuse(i, "a counter before start");
        if (c >= counter_count) refuse(i, "unknown counter");
        if (c <= previous_counter) refuse(i, std::string("counter ") + to_string(r.name) + ": out of order or repeated");
        previous_counter = c;
        counter_of(stats_, r.name) = r.value;
    }
    std::int64_t previous_bucket = -1;
    std::uint64_t histogram_total = 0;
    for (; kind_is(index_of<snapshot_bucket>); ++i) {
        const auto& r = std::get<snapshot_bucket>(records[i]);
        if (r.index >= wait_histogram_buckets) refuse(i, "wait_bucket index=" + std::to_string(r.index) + ": above 64");
        if (static_cast<std::int64_t>(r.index) <= previous_bucket)
            refuse(i, "wait_bucket index=" + std::to_string(r.index) + ": out of order or repeated");
        previous_bucket = r.index;
        stats_.wait_histogram[r.index] = r.count;
        histogram_total += r.count;
    }
    if (histogram_total != stats_.grants_immediate + stats_.grants_after_wait)
        refuse(i, "the wait histogram counts " + std::to_string(histogram_total) + " grants, the counters " +
                      std::to_string(stats_.grants_immediate + stats_.grants_after_wait));
    if (i == n) refuse(n, "the snapshot ends without snapshot_end");
    if (!std::holds_alternative<snapshot_end>(records[i]))
        refuse(i, "record out of order: a snapshot lists snapshot, sizes, slot, idle, handle, waiter, counter, "
                  "wait_bucket, snapshot_end");
    if (i + 1 != n) refuse(i + 1, "a record after snapshot_end");
    check_restored(i);
}

void scheduler::restore_scalars(const snapshot_begin& b) {
    if (b.closed && !b.shutting_down) refuse(0, "closed without shutting_down");
    if (b.shutting_down && !b.started) refuse(0, "shutting_down before start");
    if (!b.started && (b.now != 0 || b.last_lease != 0 || b.highest_waiter != 0 || b.arrivals != 0 ||
                       b.spawn_failures_in_a_row != 0 || b.backoff_end != 0 || b.idle_seq != 0 ||
                       b.jitter_state != config_.jitter_seed))
        refuse(0, "before start every field is as constructed");
    if ((b.spawn_failures_in_a_row == 0) != (b.backoff_end == 0))
        refuse(0, "backoff_end is 0 exactly when spawn_failures_in_a_row is 0");
    if (b.last_lease == last_count) refuse(0, "last_lease at 2^64-1 (the next lease id would wrap)");
    if (b.arrivals == last_count) refuse(0, "arrivals at 2^64-1 (the next queued waiter would wrap it)");
    if (b.idle_seq == last_count) refuse(0, "idle_seq at 2^64-1 (the next idle slot would wrap it)");
    if (b.spawn_failures_in_a_row == last_count)
        refuse(0, "spawn_failures_in_a_row at 2^64-1 (the next failure would wrap it)");
    if (b.spawn_failures_in_a_row > 0) {  // the last failure's now, 0..now, + its delay
        const nanos delay = backoff_delay(b.spawn_failures_in_a_row);
        if (b.backoff_end < delay || b.backoff_end > saturating_add(b.now, delay))
            refuse(0, "backoff_end " + std::to_string(b.backoff_end) + " is not a failure's time (0..now) + " +
                          std::to_string(delay) + ", the delay of " + std::to_string(b.spawn_failures_in_a_row) +
                          " failures in a row");
    }
    started_ = b.started;
    shutting_down_ = b.shutting_down;
    closed_ = b.closed;
    now_ = b.now;
    last_lease_ = b.last_lease;
    highest_waiter_ = b.highest_waiter;
    arrivals_ = b.arrivals;
    spawn_failures_in_a_row_ = b.spawn_failures_in_a_row;
    backoff_end_ = b.backoff_end;
    idle_seq_ = b.idle_seq;
    jitter_state_ = b.jitter_state;
}

void scheduler::restore_slot(std::size_t i, const snapshot_slot& r, std::int64_t& previous) {
    const std::uint32_t s = r.index;
    const std::string name = slot_name(s);
    if (s >= capacity_) refuse(i, name + ": index at or above slot_capacity");
    if (static_cast<std::int64_t>(s) <= previous) refuse(i, name + ": out of order or repeated");
    previous = s;
    if (!started_) refuse(i, name + ": a slot is live before start");
    if (r.state == slot_state::empty || static_cast<int>(r.state) >= slot_state_count)
        refuse(i, name + ": an empty slot is not written");
    if (!(normalized(r) == r)) refuse(i, name + ": a field its state does not use is not its default");
    if (r.state == slot_state::checking && config_.check_after_idle == 0 && config_.keepalive_interval == 0)
        refuse(i, name + ": checking without check_after_idle or keepalive_interval");
    if (r.state == slot_state::resetting && !config_.reset_on_release) refuse(i, name + ": resetting without reset_on_release");
    if (r.keepalive_check && config_.keepalive_interval == 0) refuse(i, name + ": a keepalive check without keepalive_interval");
    // Only a stale slot is checked on checkout, and only check_after_idle makes one stale.
    if (r.state == slot_state::checking && !r.keepalive_check && config_.check_after_idle == 0)
        refuse(i, name + ": a check on checkout without check_after_idle");
    if (config_.max_lifetime == 0 && r.expires_at != never) refuse(i, name + ": expires_at without max_lifetime");
    // A lifetime starts at the slot's `spawned`, no later than its idle time (idle,
    // checking), its grant (leased) or now (resetting), and lasts at most max_lifetime.
    if (config_.max_lifetime > 0 && fields_of(r.state).expires_at) {
        const bool idle_since = fields_of(r.state).idle_since;
        const bool granted = fields_of(r.state).granted_at;
        const nanos latest_spawn = idle_since ? r.idle_since : granted ? r.granted_at : now_;
        if (r.expires_at > saturating_add(latest_spawn, config_.max_lifetime))
            refuse(i, name + ": expires_at after its " + (idle_since ? "idle time" : granted ? "grant" : "now") +
                          " + max_lifetime");
    }
    if (r.granted_at > now_ || r.verified_at > now_ || r.idle_since > now_) refuse(i, name + ": a time after now");
    if (fields_of(r.state).idle_seq && r.idle_seq >= idle_seq_) refuse(i, name + ": idle_seq not below the snapshot's");
    if (r.uses == last_count && config_.max_uses == 0)
        refuse(i, name + ": uses at 2^64-1 without max_uses (the next grant would wrap it)");
    const bool worn = config_.max_uses > 0 && r.uses >= config_.max_uses;
    switch (r.state) {
        case slot_state::idle:
            if (r.verified_at < r.idle_since) refuse(i, name + ": verified before its idle time");
            if (r.verified_at != r.idle_since && !by_idle_time_)
                refuse(i, name + ": verified after its idle time without check_after_idle or keepalive_interval");
            if (worn) refuse(i, name + ": idle with max_uses reached");
            if (reached(r.expires_at, now_)) refuse(i, name + ": idle past its lifetime");
            break;
        case slot_state::leased:
            if (r.lease == 0 || r.lease > last_lease_) refuse(i, name + ": lease not in 1..last_lease");
            if (r.uses == 0 || (config_.max_uses > 0 && r.uses > config_.max_uses))
                refuse(i, name + ": leased with uses outside 1..max_uses");
            if (r.leak_unreported && config_.leak_threshold == 0) refuse(i, name + ": an unreported lease without leak_threshold");
            if (r.leak_unreported && reached(saturating_add(r.granted_at, config_.leak_threshold), now_))
                refuse(i, name + ": a leak report due at or before now");
            // A grant leaves its lease unreported (leak_threshold > 0) until the report is due.
            if (!r.leak_unreported && config_.leak_threshold > 0 &&
                !reached(saturating_add(r.granted_at, config_.leak_threshold), now_))
                refuse(i, name + ": a lease reported before its leak was due");
            break;
        case slot_state::checking:
        case slot_state::resetting:
            if (worn) refuse(i, name + ": max_uses reached");
            break;
        default: break;
    }
    slots_[s] = {r.expires_at, r.verified_at, r.idle_since, {r.idle_seq}, r.granted_at, r.lease, r.uses,
                 slot_state::empty, r.leak_unreported, r.keepalive_check};
    if (r.state == slot_state::leased) slots_[s].holder = r.handle;
    empty_slots_.remove(s);
    --stats_.slots[static_cast<int>(slot_state::empty)];
    ++stats_.slots[static_cast<int>(r.state)];
    slots_[s].state = r.state;
    if (r.keepalive_check && ++keepalive_checks_ > config_.max_concurrent_checks)
        refuse(i, name + ": more keepalive checks than max_concurrent_checks");
    const auto spawning = count(slot_state::spawning);
    // (Spawns started before a shrink may outnumber the new max_slots: slot_capacity bounds them.)
    if (spawning > std::min(*config_.max_concurrent_spawns, capacity_))
        refuse(i, name + ": more spawns than max_concurrent_spawns");
}

// Lease ids are distinct; unreported leases are ordered by grant, which is lease order.
void scheduler::restore_leases(std::size_t i) {
    scratch_.clear();
    for (std::uint32_t s = 0; s < capacity_; ++s)
        if (slots_[s].state == slot_state::leased) scratch_.push_back(s);
    std::sort(scratch_.begin(), scratch_.end(),
              [this](std::uint32_t a, std::uint32_t b) { return slots_[a].lease < slots_[b].lease; });
    for (std::size_t k = 1; k < scratch_.size(); ++k)
        if (slots_[scratch_[k - 1]].lease == slots_[scratch_[k]].lease)
            refuse(i, "two leased slots hold lease " + std::to_string(slots_[scratch_[k]].lease));
    for (const std::uint32_t s : scratch_) {
        if (!slots_[s].leak_unreported) continue;
        if (!unreported_leases_.empty() && slots_[unreported_leases_.tail].granted_at > slots_[s].granted_at)
            refuse(i, slot_name(s) + ": leases are granted in lease order");
        leak_links_.push_back(unreported_leases_, s);
    }
    scratch_.clear();
}

void scheduler::restore_idle_bookkeeping(std::uint32_t s) noexcept {
    const slot_record& slot = slots_[s];
    if (config_.max_lifetime > 0) aged_idle_.push(slot.expires_at, s, s);
    if (by_idle_time_) idle_times_.push(slot.idle_seq, s, s);
    if (config_.check_after_idle > 0 && first_fresh_ == no_index) first_fresh_ = s;
}

void scheduler::restore_handle(std::size_t i, const snapshot_handle& r) {
    const std::string name = "handle id=" + std::to_string(r.id);
    if (!started_) refuse(i, name + ": a handle before start");
    if (handle_ids_.find(r.id) != no_index) refuse(i, name + ": repeated");
    if (free_handles_.empty()) refuse(i, name + ": more handles than max_waiters + slot_capacity");
    if (r.weight == 0 || r.weight > max_weight) refuse(i, name + ": weight outside 1..65535");
    if (r.turn >= r.weight || (config_.policy == fairness_policy::fifo && r.turn != 0))
        refuse(i, name + ": turn not below its weight (0 under fifo)");
    if (!rotation_.empty() && r.turn != 0) refuse(i, name + ": a turn in progress behind the front of the rotation");
    // Listed in the rotation for now: the lease counts decide (restore()).
    const std::uint32_t h = make_known(r.id, r.max_leases);
    handles_[h].weight = u32(r.weight);
    handles_[h].turn = u32(r.turn);
    rotation_links_.push_back(rotation_, h);
}

const scheduler::waiter_record* scheduler::restore_waiter(std::size_t i, const snapshot_waiter& r,
                                                          const waiter_record* previous) {
    const std::string name = "waiter id=" + std::to_string(r.id);
    if (shutting_down_) refuse(i, name + ": queued while shutting down");
    if (waiter_ids_.find(r.id) != no_index) refuse(i, name + ": repeated");
    if (r.id > highest_waiter_) refuse(i, name + ": above highest_waiter");
    const std::uint32_t h = handle_ids_.find(r.handle);
    if (h == no_index) refuse(i, name + ": handle " + std::to_string(r.handle) + " has no handle record");
    if (stats_.queued_waiters >= config_.max_waiters) refuse(i, name + ": more waiters than max_waiters");
    if (handles_[h].waiters.size >= *config_.max_waiters_per_handle)
        refuse(i, name + ": more waiters of one handle than max_waiters_per_handle");
    if (r.arrival >= arrivals_ || (previous != nullptr && r.arrival <= previous->arrival))
        refuse(i, name + ": arrival not increasing, or not below arrivals");
    if (r.arrived_at > now_ || (previous != nullptr && r.arrived_at < previous->arrived_at))
        refuse(i, name + ": arrived_at after now, or before the waiter queued before it");
    if (reached(r.deadline, now_)) refuse(i, name + ": a deadline at or before now");
    // Decision 1: the effective deadline is at most the acquire's now + acquire_timeout.
    if (config_.acquire_timeout > 0 && r.deadline > saturating_add(r.arrived_at, config_.acquire_timeout))
        refuse(i, name + ": a deadline after arrived_at + acquire_timeout");
    const std::uint32_t w = free_waiters_.back();
    free_waiters_.pop_back();
    waiters_[w] = {r.id, r.deadline, r.arrived_at, r.arrival, h};
    waiter_ids_.insert(r.id, w);
    arrival_links_.push_back(arrivals_order_, w);
    if (handles_[h].waiters.empty()) ++stats_.active_handles, stats_.active_weight += handles_[h].weight;
    handle_links_.push_back(handles_[h].waiters, w);
    if (r.deadline != never) deadlines_.push(r.deadline, r.arrival, w);
    ++stats_.queued_waiters;
    return &waiters_[w];
}

// Leases are counted once a cap can exist (a cap in the config or on a handle record);
// a lease of a handle without a record is one of an uncapped handle known by its leases.
void scheduler::restore_lease_holders(std::size_t end) {
    bool caps = config_.max_leases_per_handle > 0;
    for (std::uint32_t h = rotation_.head; h != no_index && !caps; h = rotation_links_.next(h))
        caps = handles_[h].cap != 0;
    if (!caps) return;
    if (!count_leases_from_the_slots()) refuse(end, "more handles than max_waiters + slot_capacity");
}

void scheduler::restore_sizes(const snapshot_sizes& r) {
    if (r.max_slots > capacity_ || r.min_slots > r.max_slots)
        refuse(1, "sizes max_slots=" + std::to_string(r.max_slots) + " min_slots=" + std::to_string(r.min_slots) +
                      ": not 0..slot_capacity and 0..max_slots");
    if (r.max_slots == config_.max_slots && r.min_slots == config_.min_slots)
        refuse(1, "sizes: the config's sizes are not written");
    if (!started_) refuse(1, "sizes: a resize before start");
    max_slots_ = r.max_slots;
    min_slots_ = r.min_slots;
    below_capacity_ = max_slots_ < capacity_;
    release_bookkeeping_ = counting_leases_ || below_capacity_;
}

// What holds after every step, and what the steps' shortcuts rely on.
void scheduler::check_restored(std::size_t end) {
    if (closed_ && count(slot_state::empty) != capacity_) refuse(end, "closed with a slot not empty");
    if (shutting_down_ && !idle_order_.empty()) refuse(end, "idle slots while shutting down");
    if (shutting_down_ && !closed_ && count(slot_state::empty) == capacity_)
        refuse(end, "shutting down with every slot empty, yet not closed");
    if (surplus() && !idle_order_.empty()) refuse(end, "an idle slot while more slots are live than max_slots");
    if (eligible_waiters() > 0) {  // invariant 6: only stale idle slots, each waiter covered
        for (std::uint32_t s = idle_order_.head; s != no_index; s = idle_links_.next(s))
            if (!stale(s) || uncovered_waiters() > 0) refuse(end, "an idle slot while a waiter is queued (invariant 6)");
    }
    if (const nanos due = earliest_time_driven_work(); reached(due, now_))
        refuse(end, "work is due at or before now (" + std::to_string(due) + ")");
    if (started_ && !shutting_down_ && reached(backoff_end_, now_) && spawn_budget() > 0)
        refuse(end, "spawn planning would start a spawn now");
    due_ = earliest_time_driven_work();
    spawn_inputs_changed_ = true;  // plan_spawns is a no-op now, or waits for the backoff
}

}  // namespace fairpool::core
