#include "fairpool/core/scheduler.hpp"

#include <algorithm>
#include <random>

namespace fairpool::core {

namespace {

using detail::no_index;

constexpr nanos saturating_add(nanos a, nanos b) noexcept { return a > never - b ? never : a + b; }

// A due time of 2^64-1 is "never": it does not come even at now = 2^64-1.
constexpr bool reached(nanos due, nanos now) noexcept { return due != never && due <= now; }

std::uint32_t u32(std::uint64_t v) noexcept { return static_cast<std::uint32_t>(v); }

// The slot life cycle (section 1): empty → spawning → idle ⇄ leased, and back to
// empty through retiring; a spawn that fails goes straight back to empty, and one that
// completes during shutdown retires at once. Health: idle → checking → idle or
// retiring; leased → resetting → idle or retiring.
constexpr unsigned bit(slot_state s) noexcept { return 1U << static_cast<unsigned>(s); }

constexpr unsigned legal_next[slot_state_count] = {
    /* empty    */ bit(slot_state::spawning),
    /* spawning */ bit(slot_state::idle) | bit(slot_state::empty) | bit(slot_state::retiring),
    /* idle      */ bit(slot_state::leased) | bit(slot_state::retiring) | bit(slot_state::checking),
    /* leased    */ bit(slot_state::idle) | bit(slot_state::retiring) | bit(slot_state::resetting),
    /* retiring  */ bit(slot_state::empty),
    /* checking  */ bit(slot_state::idle) | bit(slot_state::retiring),
    /* resetting */ bit(slot_state::idle) | bit(slot_state::retiring),
};

constexpr bool legal_transition(slot_state from, slot_state to) noexcept {
    return (legal_next[static_cast<unsigned>(from)] & bit(to)) != 0;
}
static_assert(legal_transition(slot_state::idle, slot_state::leased));
static_assert(!legal_transition(slot_state::leased, slot_state::empty));
static_assert(!legal_transition(slot_state::idle, slot_state::idle));
static_assert(!legal_transition(slot_state::checking, slot_state::leased));
static_assert(!legal_transition(slot_state::resetting, slot_state::leased));

__extension__ typedef unsigned __int128 u128;  // NOLINT(modernize-use-using): __extension__ needs typedef

// splitmix64 (decision 13): one step of the generator over `state`.
constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t random_seed() {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
}

// Free-list of table indices, highest index at the bottom so index 0 is used first.
detail::bounded_vector<std::uint32_t> all_free(std::uint32_t n) {
    detail::bounded_vector<std::uint32_t> free(n);
    for (std::uint32_t i = n; i > 0; --i) free.push_back(i - 1);
    return free;
}

}  // namespace

scheduler::scheduler(const config& c) : scheduler(c, random_seed()) {}

scheduler::scheduler(const config& c, std::uint64_t hash_seed)
    : config_(core::checked(c)),
      capacity_(*config_.slot_capacity),
      max_slots_(config_.max_slots),
      min_slots_(config_.min_slots),
      effects_(max_effects_per_step(config_)),
      slots_(capacity_),
      holders_(capacity_),
      idle_links_(u32(capacity_)),
      leak_links_(u32(capacity_)),
      aged_idle_(u32(capacity_)),
      idle_times_(u32(capacity_)),
      empty_slots_(u32(capacity_)),
      scratch_(capacity_),
      snapshot_scratch_(capacity_),
      waiters_(config_.max_waiters),
      free_waiters_(all_free(u32(config_.max_waiters))),
      arrival_links_(u32(config_.max_waiters)),
      handle_links_(u32(config_.max_waiters)),
      deadlines_(u32(config_.max_waiters)),
      waiter_ids_(u32(config_.max_waiters), hash_seed),
      handles_(config_.max_waiters + capacity_),
      free_handles_(all_free(u32(config_.max_waiters + capacity_))),
      rotation_links_(u32(config_.max_waiters + capacity_)),
      eligible_heads_(u32(config_.max_waiters + capacity_)),
      handle_ids_(u32(config_.max_waiters + capacity_), hash_seed * 0x9e3779b97f4a7c15ULL + 1) {
    // A resize retires the least recently used idle slot first: with checks the idle
    // order is by verification, so idle times need their own heap.
    by_idle_time_ = config_.check_after_idle > 0 || config_.keepalive_interval > 0;
    idle_bookkeeping_ = config_.max_lifetime > 0 || config_.idle_timeout > 0 || config_.check_after_idle > 0 ||
                        config_.keepalive_interval > 0;
    jitter_state_ = config_.jitter_seed;
    for (std::uint32_t s = 0; s < capacity_; ++s) empty_slots_.push(s, 0, s);
    stats_.slots[static_cast<int>(slot_state::empty)] = capacity_;
    below_capacity_ = max_slots_ < capacity_;
    release_bookkeeping_ = below_capacity_;
    if (config_.max_leases_per_handle > 0) start_counting_leases();
}

// The idle slot a grant takes (idle order), or no_index if every idle slot is stale.
// Defined first so that the steps inline it.
inline std::uint32_t scheduler::grantable_idle_slot() const noexcept {
    FAIRPOOL_ASSERT(!idle_order_.empty());
    if (config_.check_after_idle > 0) return first_fresh_idle_slot();
    return config_.idle_order == idle_order::lifo ? idle_order_.tail : idle_order_.head;
}

// ---------------------------------------------------------------------------------
// Step (section 5)

step_result scheduler::step(const event& e) {
    effects_.clear();
    if (const event_error error = validate(e); error != event_error::ok) return {error, {}};
    now_ = e.now;
    // A phase is entered only when it can do something: the gates live here, once (a
    // steady-state step skips the calls; the phases assert them).
    if (reached(due_, now_)) expire();
    apply(e);
    // Waiters first: a round trip's release (no waiter, the slot now idle) tests one word.
    if (!arrivals_order_.empty() && !idle_order_.empty()) hand_out();  // it skips waiters behind a cap
    if (spawn_inputs_changed_) plan_spawns();
    if (shutting_down_) close_if_done();
    FAIRPOOL_DEBUG_ASSERT(idle_order_.empty() || eligible_waiters() == 0 ||  // invariant 6
                          (grantable_idle_slot() == no_index && uncovered_waiters() <= 0));
    FAIRPOOL_DEBUG_ASSERT(idle_order_.empty() || !surplus());  // a surplus retires idle slots at once
    FAIRPOOL_DEBUG_ASSERT(stats_.queued_waiters == arrivals_order_.size);
    FAIRPOOL_DEBUG_ASSERT(stats_.queued_waiters <= config_.max_waiters);
    FAIRPOOL_DEBUG_ASSERT(count(slot_state::idle) == idle_order_.size);
    FAIRPOOL_DEBUG_ASSERT(!shutting_down_ || arrivals_order_.empty());
    return {event_error::ok, {effects_.data(), effects_.size()}};
}

event_error scheduler::validate(const event& e) const noexcept {
    if (e.kind == event_kind::start) {
        if (started_) return event_error::already_started;
    } else if (!started_) {
        return event_error::not_started;
    }
    if (e.now < now_) return event_error::time_went_backwards;
    switch (e.kind) {
        case event_kind::acquire:
            if (e.weight && (*e.weight == 0 || *e.weight > max_weight)) return event_error::bad_weight;
            // Callers take ids from a counter: an id above every id seen cannot be queued.
            if (e.waiter <= highest_waiter_ && waiter_ids_.find(e.waiter) != no_index)
                return event_error::duplicate_waiter;
            return event_error::ok;
        case event_kind::release:
            if (e.slot >= capacity_) return event_error::bad_slot;
            if (slots_[e.slot].state != slot_state::leased || slots_[e.slot].lease != e.lease)
                return event_error::stale_lease;
            return event_error::ok;
        case event_kind::spawned:
        case event_kind::spawn_failed:
            return validate_slot(e, slot_state::spawning, event_error::not_spawning);
        case event_kind::retired: return validate_slot(e, slot_state::retiring, event_error::not_retiring);
        case event_kind::died: return validate_slot(e, slot_state::idle, event_error::not_idle);
        case event_kind::checked: return validate_slot(e, slot_state::checking, event_error::not_checking);
        case event_kind::reset_done: return validate_slot(e, slot_state::resetting, event_error::not_resetting);
        case event_kind::resize:
            // max_slots 0 is a size (decision 16): the pool holds no slot, acquires wait.
            if (e.max_slots() > capacity_ || e.min_slots() > e.max_slots()) return event_error::bad_size;
            return event_error::ok;
        default: return event_error::ok;
    }
}

event_error scheduler::validate_slot(const event& e, slot_state needed, event_error otherwise) const noexcept {
    if (e.slot >= capacity_) return event_error::bad_slot;
    return slots_[e.slot].state == needed ? event_error::ok : otherwise;
}

// ---------------------------------------------------------------------------------
// Step 2: time-driven work

// Runs only once `now` reached due_, a lower bound of the earliest time any of this
// work can be due (raised to the exact earliest after each run, lowered whenever a
// deadline, a lease, an idle slot or a spawn makes something due sooner).
void scheduler::expire() {
    FAIRPOOL_DEBUG_ASSERT(reached(due_, now_));
    expire_waiters();
    report_leaks();
    retire_aged_idle();
    retire_idle_timeouts();
    start_keepalive_checks();
    due_ = earliest_time_driven_work();
}

nanos scheduler::earliest_time_driven_work() const noexcept {
    nanos earliest = never;
    if (!deadlines_.empty()) earliest = deadlines_.earliest().primary;
    if (config_.leak_threshold > 0 && !unreported_leases_.empty())
        earliest = std::min(earliest, saturating_add(slots_[unreported_leases_.head].granted_at, config_.leak_threshold));
    if (config_.max_lifetime > 0 && !aged_idle_.empty()) earliest = std::min(earliest, aged_idle_.top().primary);
    if (config_.idle_timeout > 0 && !idle_order_.empty() && live() > min_slots_)
        earliest = std::min(earliest, idle_timeout_due());
    if (config_.keepalive_interval > 0 && !idle_order_.empty() && keepalive_checks_ < config_.max_concurrent_checks)
        earliest = std::min(earliest, keepalive_due());
    return earliest;
}

nanos scheduler::idle_timeout_due() const noexcept {
    return saturating_add(slots_[oldest_idle()].idle_since, config_.idle_timeout);
}

// The idle order is by verification, so its front is the least recently verified slot.
nanos scheduler::keepalive_due() const noexcept {
    return saturating_add(slots_[idle_order_.head].verified_at, config_.keepalive_interval);
}

void scheduler::due_no_later_than(nanos t) noexcept { due_ = std::min(due_, t); }

void scheduler::expire_waiters() {
    // Bound: each pass removes one queued waiter (≤ max_waiters).
    while (!deadlines_.empty() && deadlines_.earliest().primary <= now_)
        reject_queued(deadlines_.earliest().item, reject_reason::timeout);
    FAIRPOOL_DEBUG_ASSERT(deadlines_.empty() || deadlines_.earliest().primary > now_);
}

void scheduler::report_leaks() {
    if (config_.leak_threshold == 0) return;
    scratch_.clear();
    // Bound: each pass removes one unreported lease (≤ max_slots).
    while (!unreported_leases_.empty()) {
        const std::uint32_t s = unreported_leases_.head;
        if (!reached(saturating_add(slots_[s].granted_at, config_.leak_threshold), now_)) break;
        FAIRPOOL_ASSERT(slots_[s].state == slot_state::leased && slots_[s].leak_unreported);
        leak_links_.remove(unreported_leases_, s);
        slots_[s].leak_unreported = false;
        scratch_.push_back(s);
    }
    std::sort(scratch_.begin(), scratch_.end());
    for (const std::uint32_t s : scratch_) {
        ++stats_.leaks_suspected;
        emit(effect::leak_suspected(s, slots_[s].lease));
    }
}

void scheduler::retire_aged_idle() {
    if (config_.max_lifetime == 0) return;
    scratch_.clear();
    // Bound: each pass takes one idle slot out of aged_idle_ (≤ max_slots).
    while (!aged_idle_.empty() && reached(aged_idle_.top().primary, now_))
        scratch_.push_back(aged_idle_.top().item), leave_idle(aged_idle_.top().item);
    retire_sorted_scratch(retire_reason::max_lifetime);
}

void scheduler::retire_idle_timeouts() {
    if (config_.idle_timeout == 0) return;
    // Bound: each pass retires one idle slot (≤ max_slots).
    while (!idle_order_.empty() && live() > min_slots_) {
        const std::uint32_t oldest = oldest_idle();
        if (!reached(saturating_add(slots_[oldest].idle_since, config_.idle_timeout), now_)) return;
        leave_idle(oldest);
        retire(oldest, retire_reason::idle);
    }
}

// Also runs in step 3 when a keepalive check ends and frees its place.
void scheduler::start_keepalive_checks() {
    if (config_.keepalive_interval == 0) return;
    // Bound: each pass takes one idle slot (≤ max_slots).
    while (keepalive_checks_ < config_.max_concurrent_checks && !idle_order_.empty() &&
           reached(keepalive_due(), now_))
        start_check(idle_order_.head, true);
}

// ---------------------------------------------------------------------------------
// Step 3: the event itself

void scheduler::apply(const event& e) {
    switch (e.kind) {
        case event_kind::start: started_ = true; return;
        case event_kind::tick: return;
        case event_kind::acquire: return acquire(e);
        case event_kind::cancel: return cancel(e.waiter);
        case event_kind::deregister: return deregister(e.handle);
        case event_kind::release: return release(e);
        case event_kind::spawned: return spawned(e.slot);
        case event_kind::spawn_failed: return spawn_failed(e.slot);
        case event_kind::retired: return become_empty(e.slot);
        case event_kind::died: return died(e.slot);
        case event_kind::checked: return checked(e.slot, e.check);
        case event_kind::reset_done: return reset_done(e.slot, e.reset);
        case event_kind::shutdown: return shutdown();
        case event_kind::resize: return resize(e.max_slots(), e.min_slots());
    }
}

void scheduler::acquire(const event& e) {
    ++stats_.acquires;
    highest_waiter_ = std::max(highest_waiter_, e.waiter);
    if (shutting_down_) {
        ++stats_.rejections[static_cast<int>(reject_reason::closed)];
        return emit(effect::reject(e.waiter, reject_reason::closed));
    }
    std::uint32_t h = no_index;
    if (!idle_order_.empty()) {
        // A fresh idle slot means no eligible waiter is queued (step 4): no barging possible.
        if (const std::uint32_t s = grantable_idle_slot(); s != no_index) {
            FAIRPOOL_ASSERT(eligible_waiters() == 0);
            // Without caps (none so far, none on this acquire) leases are not counted.
            if (!(counting_leases_ | e.has_max_leases)) {  // one test: the round trip's cost
                ++stats_.grants_immediate;
                leave_idle(s);
                return grant(e.waiter, s, now_, e.handle);
            }
            h = acquire_counted(e, s);
            if (h == no_index) return;  // granted
        }
    }
    const nanos deadline = effective_deadline(e);
    reject_reason why{};
    if (reached(deadline, now_)) {
        why = reject_reason::timeout;
    } else {
        if (!counting_leases_ && e.max_leases().value_or(0) > 0) start_counting_leases();
        if (h == no_index) h = handle_ids_.find(e.handle);
        const std::uint64_t of_handle = h == no_index ? 0 : handles_[h].waiters.size;
        if (stats_.queued_waiters < config_.max_waiters && of_handle < *config_.max_waiters_per_handle)
            return enqueue(e, deadline, h);
        why = reject_reason::saturated;
    }
    ++stats_.rejections[static_cast<int>(why)];
    emit(effect::reject(e.waiter, why));
}

// An acquire that finds a fresh idle slot while leases are counted: granted unless
// its handle is at its cap (decision 15). Returns the handle's index if it is not
// granted (no_index for an unknown handle), or no_index after the grant.
std::uint32_t scheduler::acquire_counted(const event& e, std::uint32_t idle_slot) {
    if (!counting_leases_ && e.max_leases().value_or(0) > 0) start_counting_leases();
    std::uint32_t h = counting_leases_ ? handle_ids_.find(e.handle) : no_index;
    if (h != no_index && !eligible(handles_[h])) return h;
    ++stats_.grants_immediate;
    leave_idle(idle_slot);
    grant(e.waiter, idle_slot, now_, e.handle);
    if (counting_leases_) {
        if (h == no_index) h = make_known(e.handle, cap_of(e));
        take_lease(h);
        holders_[idle_slot] = h;
    }
    return no_index;
}

nanos scheduler::effective_deadline(const event& e) const noexcept {
    nanos deadline = e.deadline.value_or(never);
    if (config_.acquire_timeout > 0) deadline = std::min(deadline, saturating_add(now_, config_.acquire_timeout));
    return deadline;
}

void scheduler::cancel(std::uint64_t waiter_id) {
    const std::uint32_t w = waiter_ids_.find(waiter_id);
    if (w != no_index) reject_queued(w, reject_reason::cancelled);
}

void scheduler::deregister(std::uint64_t handle_id) {
    const std::uint32_t h = handle_ids_.find(handle_id);
    if (h == no_index) return;
    // The handle record is freed with its last waiter: count first.
    for (std::uint32_t n = handles_[h].waiters.size; n > 0; --n)
        reject_queued(handles_[h].waiters.head, reject_reason::deregistered);
}

// Without caps and resizes the round trip takes the short way: no handle to count, no
// surplus to retire.
void scheduler::release(const event& e) {
    if (release_bookkeeping_) return release_with_bookkeeping(e);
    take_back<false>(e.slot, e.outcome);
}

void scheduler::release_with_bookkeeping(const event& e) {
    if (counting_leases_) return_lease(holders_[e.slot]);
    take_back<true>(e.slot, e.outcome);
}

template <bool may_be_surplus>
void scheduler::take_back(std::uint32_t s, release_outcome outcome) {
    end_lease(s);
    if (outcome == release_outcome::dirty) return retire(s, retire_reason::dirty);
    if (retire_if_worn<may_be_surplus>(s)) return;
    if (config_.reset_on_release) {
        set_state(s, slot_state::resetting);
        ++stats_.resets_started;
        return emit(effect::reset(s));
    }
    // A waiter that step 4 would grant this slot to: straight to it (hand_over).
    if (!arrivals_order_.empty() && idle_order_.empty() && !idle_bookkeeping_ && eligible_waiters() > 0)
        return hand_over(s);
    become_idle(s, idle_time::restart);
}

// A clean release with an eligible waiter queued, no idle slot, and no setting that
// watches idle slots (no idle bookkeeping, so no check_after_idle either): the slot
// would become the only idle slot, fresh, and step 4 would grant it to next_waiter() at
// once. (Idle slots and eligible waiters can meet in a step: a release that brings a
// handle back under its cap makes its waiters eligible beside the idle slots they could
// not take; then step 4 grants by the idle order, as always.) This does the same without the idle order in
// between: the slot's idle time restarts and its verification is now, as become_idle
// does, and the lease goes to the waiter as grant_queued gives it, the slot staying
// leased throughout. Same effects, same state, same snapshot: ~100 instructions fewer
// per contended release (two state changes and the idle order's push and removal).
void scheduler::hand_over(std::uint32_t s) {
    slot_record& slot = slots_[s];
    slot.verified_at = now_;
    slot.idle_since = now_;
    ++idle_seq_;  // become_idle's idle_seq for the slot: overwritten by the grant's holder
    grant_queued<from::leased>(next_waiter(), s);
}

// The rules of a clean return (release, reset_done ok), in contract order.
template <bool may_be_surplus>
bool scheduler::retire_if_worn(std::uint32_t s) {
    const slot_record& slot = slots_[s];
    if (shutting_down_) return retire(s, retire_reason::shutdown), true;
    if (may_be_surplus && surplus()) return retire(s, retire_reason::resize), true;
    if (config_.max_uses > 0 && slot.uses >= config_.max_uses) return retire(s, retire_reason::max_uses), true;
    if (reached(slot.expires_at, now_)) return retire(s, retire_reason::max_lifetime), true;
    return false;
}

void scheduler::spawned(std::uint32_t s) {
    spawn_failures_in_a_row_ = 0;
    backoff_end_ = 0;
    const nanos lifetime = draw_lifetime();  // every valid spawned draws (decision 13)
    if (shutting_down_) return retire(s, retire_reason::shutdown);
    if (surplus()) return retire(s, retire_reason::resize);
    slot_record& slot = slots_[s];
    slot.uses = 0;
    slot.expires_at = config_.max_lifetime > 0 ? saturating_add(now_, lifetime) : never;
    if (reached(slot.expires_at, now_)) return retire(s, retire_reason::max_lifetime);  // a lifetime of 0
    become_idle(s, idle_time::restart);
}

nanos scheduler::draw_lifetime() noexcept {
    const std::uint64_t jitter = config_.max_lifetime_jitter;
    if (jitter == 0) return config_.max_lifetime;
    const u128 x = splitmix64(jitter_state_);
    const auto reduced = static_cast<std::uint64_t>((x * (u128{jitter} + 1)) >> 64);
    FAIRPOOL_ASSERT(reduced <= jitter && jitter <= config_.max_lifetime);
    return config_.max_lifetime - reduced;
}

void scheduler::spawn_failed(std::uint32_t s) {
    FAIRPOOL_ASSERT(slots_[s].state == slot_state::spawning);
    ++stats_.spawn_failures;
    become_empty(s);
    ++spawn_failures_in_a_row_;
    backoff_end_ = saturating_add(now_, backoff_delay(spawn_failures_in_a_row_));
}

// Decision 6: the delay after `failures` spawn failures in a row (failures >= 1),
// spawn_backoff_initial doubled per failure after the first, at most spawn_backoff_max.
// (Snapshot restore checks a restored backoff_end against it too.)
nanos scheduler::backoff_delay(std::uint64_t failures) const noexcept {
    const std::uint64_t shift = failures - 1;
    const nanos initial = config_.spawn_backoff_initial;
    return shift >= 64 || initial > (never >> shift) ? config_.spawn_backoff_max
                                                     : std::min(initial << shift, config_.spawn_backoff_max);
}

// Step 2 may already have retired the slot (max_lifetime, idle_timeout): then the
// death changes nothing more.
void scheduler::died(std::uint32_t s) {
    if (slots_[s].state != slot_state::idle) return;
    leave_idle(s);
    retire(s, retire_reason::died);
}

void scheduler::checked(std::uint32_t s, check_outcome outcome) {
    slot_record& slot = slots_[s];
    const bool keepalive = slot.keepalive_check;
    slot.keepalive_check = false;
    if (keepalive) --keepalive_checks_;
    if (outcome == check_outcome::dead) {
        ++stats_.checks_failed;
        retire(s, retire_reason::died);
    } else {
        ++stats_.checks_passed;
        if (shutting_down_) retire(s, retire_reason::shutdown);
        else if (surplus()) retire(s, retire_reason::resize);
        else if (reached(slot.expires_at, now_)) retire(s, retire_reason::max_lifetime);
        else if (eligible_waiters() == 0 && config_.idle_timeout > 0 && live() > min_slots_ &&
                 reached(saturating_add(slot.idle_since, config_.idle_timeout), now_))
            retire(s, retire_reason::idle);  // step 2's rule, which could not see it while it was checking
        else become_idle(s, idle_time::keep);
    }
    if (keepalive) {  // its place is free: keepalive checks that are due start now
        start_keepalive_checks();
        if (!idle_order_.empty() && keepalive_checks_ < config_.max_concurrent_checks)
            due_no_later_than(keepalive_due());
    }
}

void scheduler::reset_done(std::uint32_t s, reset_outcome outcome) {
    if (outcome == reset_outcome::failed) {
        ++stats_.resets_failed;
        return retire(s, retire_reason::reset_failed);
    }
    if (retire_if_worn(s)) return;
    become_idle(s, idle_time::restart);
}

void scheduler::shutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    // Bounds: each pass removes one queued waiter (≤ max_waiters), one idle slot (≤ max_slots).
    while (!arrivals_order_.empty()) reject_queued(arrivals_order_.head, reject_reason::closed);
    scratch_.clear();
    while (!idle_order_.empty()) scratch_.push_back(idle_order_.head), leave_idle(idle_order_.head);
    retire_sorted_scratch(retire_reason::shutdown);
    FAIRPOOL_ASSERT(arrivals_order_.empty() && idle_order_.empty() && stats_.active_handles == 0 &&
                    stats_.active_weight == 0);
}

// Section 5: the new sizes hold from this step on. Surplus idle slots retire now, least
// recently used first; surplus slots in use retire as they come back (retire_if_worn,
// spawned, checked); spawn planning fills up to the new size.
void scheduler::resize(std::uint64_t max_slots, std::uint64_t min_slots) {
    ++stats_.resizes;
    max_slots_ = max_slots;
    min_slots_ = min_slots;
    below_capacity_ = max_slots_ < capacity_;
    release_bookkeeping_ = counting_leases_ || below_capacity_;
    // Bound: each pass retires one idle slot (≤ slot_capacity).
    while (surplus() && !idle_order_.empty()) {
        const std::uint32_t oldest = oldest_idle();
        leave_idle(oldest);
        retire(oldest, retire_reason::resize);
    }
    spawn_inputs_changed_ = true;
    // A lower min_slots can make idle timeouts that step 2 left alone due now: they
    // retire in this step (decision 16), as step 2 would have, so no due work is
    // ever left behind now.
    retire_idle_timeouts();
    if (config_.idle_timeout > 0 && !idle_order_.empty() && live() > min_slots_)
        due_no_later_than(idle_timeout_due());
}

// ---------------------------------------------------------------------------------
// Steps 4 to 6

void scheduler::hand_out() {
    // Bound: each pass grants or checks one idle slot (≤ max_slots).
    while (!idle_order_.empty() && eligible_waiters() > 0) {
        if (const std::uint32_t s = grantable_idle_slot(); s != no_index) {
            grant_queued(next_waiter(), s);
        } else if (uncovered_waiters() > 0) {  // only stale slots: check the likeliest alive
            start_check(idle_order_.tail, false);
        } else {
            return;
        }
    }
}

std::int64_t scheduler::uncovered_waiters() const noexcept {
    return static_cast<std::int64_t>(eligible_waiters()) - static_cast<std::int64_t>(count(slot_state::checking)) -
           static_cast<std::int64_t>(count(slot_state::spawning));
}

// The earliest eligible waiter under fifo: the arrival order's front, unless some
// handle is at its cap; then the eligible handles' first waiters, by arrival.
std::uint32_t scheduler::next_waiter() const noexcept {
    if (config_.policy == fairness_policy::fifo) {
        if (stats_.waiters_behind_cap == 0) return arrivals_order_.head;
        FAIRPOOL_ASSERT(fifo_heads_ && !eligible_heads_.empty());
        return handles_[eligible_heads_.top().item].waiters.head;
    }
    FAIRPOOL_ASSERT(!rotation_.empty());
    return handles_[rotation_.head].waiters.head;
}

// Runs only when an input that can raise the spawn budget changed since the last run
// (spawn_inputs_changed_); inside a backoff it stays pending until the backoff ends.
// After a run the budget is ≤ 0, and it stays so until such an input changes.
void scheduler::plan_spawns() {
    FAIRPOOL_DEBUG_ASSERT(spawn_inputs_changed_);
    if (shutting_down_ || !reached(backoff_end_, now_)) return;
    // Bound: spawn_budget() ≤ empty slots ≤ max_slots.
    for (std::int64_t n = spawn_budget(); n > 0; --n) {
        const std::uint32_t s = empty_slots_.pop();
        FAIRPOOL_ASSERT(slots_[s].state == slot_state::empty);
        set_state(s, slot_state::spawning);
        ++stats_.spawns;
        emit(effect::spawn(s));
    }
    // A spawn makes one more slot live, yet never lets an idle slot reach its
    // idle_timeout sooner: with an idle slot nobody waits (step 4), so spawns only
    // restore min_slots, and `live` does not rise above it (due_ stays a lower bound).
    spawn_inputs_changed_ = false;
}

std::int64_t scheduler::spawn_budget() const noexcept {
    const auto waiting = static_cast<std::int64_t>(eligible_waiters());
    const auto spawning = static_cast<std::int64_t>(count(slot_state::spawning));
    const auto checking = static_cast<std::int64_t>(count(slot_state::checking));
    const auto wanted = std::max(waiting - spawning - checking, static_cast<std::int64_t>(min_slots_) -
                                                                   static_cast<std::int64_t>(live()));
    const auto concurrency = static_cast<std::int64_t>(std::min(*config_.max_concurrent_spawns, max_slots_));
    // A retiring resource still counts against max_slots: the backend still sees it.
    const auto room = static_cast<std::int64_t>(max_slots_) - static_cast<std::int64_t>(occupied());
    const std::int64_t budget = std::min({wanted, room, concurrency - spawning});
    FAIRPOOL_ASSERT(budget <= static_cast<std::int64_t>(count(slot_state::empty)));
    return budget;
}

void scheduler::close_if_done() {
    FAIRPOOL_DEBUG_ASSERT(shutting_down_);
    if (closed_ || count(slot_state::empty) != capacity_) return;
    FAIRPOOL_ASSERT(arrivals_order_.empty());
    FAIRPOOL_ASSERT(stats_.queued_waiters == 0 && stats_.active_handles == 0 && stats_.active_weight == 0);
    closed_ = true;
    emit(effect::closed());
}

// ---------------------------------------------------------------------------------
// Waiters and handles

void scheduler::enqueue(const event& e, nanos deadline, std::uint32_t h) {
    FAIRPOOL_DEBUG_ASSERT(h == handle_ids_.find(e.handle));
    if (h == no_index) h = make_known(e.handle, cap_of(e));
    handle_record& handle = handles_[h];
    if (handle.waiters.empty()) {  // the handle becomes active: it joins the rotation at the back
        handle.weight = u32(e.weight.value_or(1));
        handle.turn = 0;
        ++stats_.active_handles;
        stats_.active_weight += handle.weight;
    }
    FAIRPOOL_ASSERT(!free_waiters_.empty());
    FAIRPOOL_ASSERT(stats_.queued_waiters < config_.max_waiters);
    FAIRPOOL_ASSERT(handles_[h].waiters.size < *config_.max_waiters_per_handle);
    FAIRPOOL_DEBUG_ASSERT(waiter_ids_.find(e.waiter) == no_index);  // validate: not a duplicate
    const std::uint32_t w = free_waiters_.back();
    free_waiters_.pop_back();
    waiters_[w] = {e.waiter, deadline, now_, arrivals_++, h};
    waiter_ids_.insert(e.waiter, w);
    arrival_links_.push_back(arrivals_order_, w);
    handle_links_.push_back(handle.waiters, w);
    if (!eligible(handle)) ++stats_.waiters_behind_cap;
    else if (handle.waiters.size == 1) join_rotation(h);
    // One more waiter may want a spawn, unless every slot the pool may have is occupied
    // (no room: the budget stays ≤ 0; a slot becoming empty or a resize sets the flag).
    if (occupied() < max_slots_) spawn_inputs_changed_ = true;
    if (deadline != never) deadlines_.push(deadline, waiters_[w].arrival, w), due_no_later_than(deadline);
    ++stats_.queued_waiters;
}

template <scheduler::from slot_was>
void scheduler::grant_queued(std::uint32_t w, std::uint32_t s) {
    const waiter_record waiter = waiters_[w];
    handle_record& handle = handles_[waiter.handle];
    FAIRPOOL_ASSERT(handle.waiters.head == w);  // FIFO inside a handle
    FAIRPOOL_ASSERT(eligible(handle));
    // Counted first: a handle that reaches its cap leaves the rotation with this waiter
    // still queued, and stays known with its new lease when this was its last waiter.
    if (counting_leases_) take_lease(waiter.handle);
    const std::uint64_t handle_id = handle.id;  // the record may be freed with its last waiter
    const bool handle_stays_active = handle.waiters.size > 1 && eligible(handle);
    remove_waiter(w);
    if (handle_stays_active && config_.policy == fairness_policy::round_robin) {
        FAIRPOOL_ASSERT(rotation_.head == waiter.handle);
        if (++handle.turn >= handle.weight) {  // turn over: to the back of the rotation
            handle.turn = 0;
            rotation_links_.remove(rotation_, waiter.handle);
            rotation_links_.push_back(rotation_, waiter.handle);
        }
    }
    ++stats_.grants_after_wait;
    if constexpr (slot_was == from::idle) leave_idle(s);
    grant<slot_was>(waiter.id, s, waiter.arrived_at, handle_id);
    if (counting_leases_) holders_[s] = waiter.handle;
}

void scheduler::reject_queued(std::uint32_t w, reject_reason why) {
    const std::uint64_t id = waiters_[w].id;
    remove_waiter(w);
    ++stats_.rejections[static_cast<int>(why)];
    emit(effect::reject(id, why));
}

void scheduler::remove_waiter(std::uint32_t w) noexcept {
    FAIRPOOL_ASSERT(w < config_.max_waiters && stats_.queued_waiters > 0);
    const waiter_record& waiter = waiters_[w];
    FAIRPOOL_DEBUG_ASSERT(waiter_ids_.find(waiter.id) == w);
    const std::uint32_t h = waiter.handle;
    handle_record& handle = handles_[h];
    const bool behind_cap = !eligible(handle);
    const bool was_first = handle.waiters.head == w;
    arrival_links_.remove(arrivals_order_, w);
    handle_links_.remove(handle.waiters, w);
    if (waiter.deadline != never) {
        deadlines_.remove(w);
        // The last deadline gone: the lower bound becomes exact again, so a pool whose
        // queue emptied says surely_no_deadline() (the adapter disarms its timer).
        if (deadlines_.empty()) due_ = earliest_time_driven_work();
    }
    waiter_ids_.erase(waiter.id);
    if (behind_cap) --stats_.waiters_behind_cap;
    if (handle.waiters.empty()) {  // the handle leaves the rotation; weight and turn are forgotten
        if (!behind_cap) leave_rotation(h);
        --stats_.active_handles;
        stats_.active_weight -= handle.weight;
        forget_if_unknown(h);
    } else if (was_first && !behind_cap && fifo_heads_) {  // its first waiter arrived later
        eligible_heads_.remove(h);
        eligible_heads_.push(waiters_[handle.waiters.head].arrival, 0, h);
    }
    free_waiters_.push_back(w);
    --stats_.queued_waiters;
}

// ---------------------------------------------------------------------------------
// Lease caps (decision 15)

// From the first acquire that can set a cap on: every lease's handle is counted from
// here on. Counts before follow from the leased slots, each of which names its handle.
// Runs once in a scheduler's life: O(slots + handles × log handles).
void scheduler::start_counting_leases() {
    FAIRPOOL_ASSERT(!counting_leases_);
    const bool counted = count_leases_from_the_slots();  // no cap yet: nothing changes eligibility
    FAIRPOOL_ASSERT(counted);  // a leased slot's handle always has room for a record
    if (fifo_heads_)
        for (std::uint32_t h = rotation_.head; h != no_index; h = rotation_links_.next(h))
            eligible_heads_.push(waiters_[handles_[h].waiters.head].arrival, 0, h);
}

bool scheduler::count_leases_from_the_slots() {
    counting_leases_ = true;
    release_bookkeeping_ = true;
    fifo_heads_ = config_.policy == fairness_policy::fifo;
    for (std::uint32_t s = 0; s < capacity_; ++s) {
        const slot_record& slot = slots_[s];
        if (slot.state != slot_state::leased) continue;
        std::uint32_t h = handle_ids_.find(slot.holder);
        if (h == no_index) {
            if (free_handles_.empty()) return false;
            h = make_known(slot.holder, 0);
        }
        holders_[s] = h;
        if (++handles_[h].leases == handles_[h].cap) ++stats_.handles_at_cap;
    }
    return true;
}

std::uint32_t scheduler::make_known(std::uint64_t id, std::uint64_t cap) {
    FAIRPOOL_ASSERT(!free_handles_.empty());
    const std::uint32_t h = free_handles_.back();
    free_handles_.pop_back();
    handles_[h] = {id, cap, 1, 0, 0, {}};
    handle_ids_.insert(id, h);
    return h;
}

// A handle with neither waiters nor leases is forgotten, its cap with it.
void scheduler::forget_if_unknown(std::uint32_t h) noexcept {
    handle_record& handle = handles_[h];
    if (!handle.waiters.empty()) return;
    if (handle.leases > 0) {
        handle.weight = 1, handle.turn = 0;
        return;
    }
    handle_ids_.erase(handle.id);
    free_handles_.push_back(h);
}

void scheduler::join_rotation(std::uint32_t h) noexcept {
    handles_[h].turn = 0;
    rotation_links_.push_back(rotation_, h);
    if (fifo_heads_) eligible_heads_.push(waiters_[handles_[h].waiters.head].arrival, 0, h);
}

void scheduler::leave_rotation(std::uint32_t h) noexcept {
    rotation_links_.remove(rotation_, h);
    handles_[h].turn = 0;
    if (fifo_heads_) eligible_heads_.remove(h);
}

// A grant to a counted handle; at its cap it leaves the rotation, waiters and all.
void scheduler::take_lease(std::uint32_t h) noexcept {
    handle_record& handle = handles_[h];
    FAIRPOOL_ASSERT(eligible(handle));
    ++handle.leases;
    if (eligible(handle)) return;
    ++stats_.handles_at_cap;
    if (handle.waiters.empty()) return;
    leave_rotation(h);
    stats_.waiters_behind_cap += handle.waiters.size;
}

// A lease back (clean or dirty): below its cap again, the handle rejoins the rotation
// at the back with a fresh turn.
void scheduler::return_lease(std::uint32_t h) noexcept {
    handle_record& handle = handles_[h];
    FAIRPOOL_ASSERT(handle.leases > 0);
    const bool was_at_cap = !eligible(handle);
    --handle.leases;
    if (was_at_cap) {
        --stats_.handles_at_cap;
        if (!handle.waiters.empty()) {
            stats_.waiters_behind_cap -= handle.waiters.size;
            join_rotation(h);
            spawn_inputs_changed_ = true;  // its waiters may want spawns now
        }
    }
    forget_if_unknown(h);
}

// ---------------------------------------------------------------------------------
// Slots

void scheduler::set_state(std::uint32_t s, slot_state next) noexcept {
    FAIRPOOL_ASSERT(s < capacity_);
    FAIRPOOL_ASSERT(legal_transition(slots_[s].state, next));
    FAIRPOOL_ASSERT(count(slots_[s].state) > 0);
    // Fewer spawning, fewer live or more empty slots can raise the spawn budget. (A slot
    // leaving checking cannot: it retires, or it is idle and fresh, and step 4 grants it
    // if anyone waits, so W - P - C does not grow.)
    if (slots_[s].state == slot_state::spawning || next == slot_state::empty || next == slot_state::retiring)
        spawn_inputs_changed_ = true;
    --stats_.slots[static_cast<int>(slots_[s].state)];
    ++stats_.slots[static_cast<int>(next)];
    slots_[s].state = next;
}

// With check_after_idle: fresh slots are the back of the idle order (it is by
// verification), and first_fresh_ moves forward past the slots that went stale since
// (decision 12); it is a cache that changes no output, hence mutable.
std::uint32_t scheduler::first_fresh_idle_slot() const noexcept {
    // Bound: passes each idle slot at most once per idle period.
    while (first_fresh_ != no_index && stale(first_fresh_)) first_fresh_ = idle_links_.next(first_fresh_);
    if (first_fresh_ == no_index) return no_index;
    return config_.idle_order == idle_order::lifo ? idle_order_.tail : first_fresh_;
}

bool scheduler::stale(std::uint32_t s) const noexcept {
    return config_.check_after_idle > 0 && reached(saturating_add(slots_[s].verified_at, config_.check_after_idle), now_);
}

void scheduler::start_check(std::uint32_t s, bool keepalive) {
    leave_idle(s);
    set_state(s, slot_state::checking);
    slots_[s].keepalive_check = keepalive;
    if (keepalive) ++keepalive_checks_;
    ++stats_.checks_started;
    emit(effect::check(s));
}

template <scheduler::from slot_was>
void scheduler::grant(std::uint64_t waiter_id, std::uint32_t s, nanos arrived_at, std::uint64_t handle_id) {
    FAIRPOOL_DEBUG_ASSERT(waiter_ids_.find(waiter_id) == no_index);  // no longer queued
    FAIRPOOL_ASSERT(now_ >= arrived_at);
    FAIRPOOL_DEBUG_ASSERT(!stale(s));  // invariant 12: a slot granted is fresh
    slot_record& slot = slots_[s];
    if constexpr (slot_was == from::idle) set_state(s, slot_state::leased);
    else FAIRPOOL_ASSERT(slot.state == slot_state::leased && !slot.leak_unreported);
    slot.lease = ++last_lease_;
    slot.granted_at = now_;
    slot.holder = handle_id;
    ++slot.uses;
    slot.leak_unreported = config_.leak_threshold > 0;
    if (slot.leak_unreported) {
        leak_links_.push_back(unreported_leases_, s);
        due_no_later_than(saturating_add(now_, config_.leak_threshold));
    }
    const int bucket = wait_bucket(now_ - arrived_at);
    ++stats_.wait_histogram[bucket];
    wait_buckets_touched_ |= std::uint64_t{1} << std::min(bucket, 63);
    emit(effect::grant(waiter_id, s, slot.lease));
}

// Every slot becomes idle verified now, so the idle order is by verification.
void scheduler::become_idle(std::uint32_t s, idle_time t) noexcept {
    set_state(s, slot_state::idle);
    slot_record& slot = slots_[s];
    slot.verified_at = now_;
    if (t == idle_time::restart) slot.idle_since = now_, slot.idle_seq = idle_seq_++;
    idle_links_.push_back(idle_order_, s);
    if (idle_bookkeeping_) track_idle(s);
}

// What a slot's becoming idle means to the settings that watch idle slots.
void scheduler::track_idle(std::uint32_t s) noexcept {
    slot_record& slot = slots_[s];
    if (config_.check_after_idle > 0 && first_fresh_ == no_index) first_fresh_ = s;
    if (config_.max_lifetime > 0) {
        aged_idle_.push(slot.expires_at, s, s);
        due_no_later_than(slot.expires_at);
    }
    if (by_idle_time_) idle_times_.push(slot.idle_seq, s, s);
    if (config_.idle_timeout > 0) due_no_later_than(idle_timeout_due());
    if (config_.keepalive_interval > 0) due_no_later_than(saturating_add(now_, config_.keepalive_interval));
}

// Takes an idle slot out of the idle order; its state is changed by the caller.
void scheduler::leave_idle(std::uint32_t s) noexcept {
    FAIRPOOL_ASSERT(slots_[s].state == slot_state::idle);
    if (idle_bookkeeping_) {
        if (s == first_fresh_) first_fresh_ = idle_links_.next(s);
        if (aged_idle_.contains(s)) aged_idle_.remove(s);
        if (by_idle_time_) idle_times_.remove(s);
    }
    idle_links_.remove(idle_order_, s);
}

// The idle slot with the oldest idle time (decision 5). Without checks the idle order
// is also by idle time.
std::uint32_t scheduler::oldest_idle() const noexcept {
    return by_idle_time_ ? idle_times_.top().item : idle_order_.head;
}

void scheduler::end_lease(std::uint32_t s) noexcept {
    FAIRPOOL_ASSERT(slots_[s].state == slot_state::leased);
    if (slots_[s].leak_unreported) leak_links_.remove(unreported_leases_, s);
    slots_[s].leak_unreported = false;
}

void scheduler::retire(std::uint32_t s, retire_reason why) {
    set_state(s, slot_state::retiring);
    ++stats_.retirements[static_cast<int>(why)];
    emit(effect::retire(s, why));
}

void scheduler::become_empty(std::uint32_t s) noexcept {
    set_state(s, slot_state::empty);
    empty_slots_.push(s, 0, s);
}

void scheduler::retire_sorted_scratch(retire_reason why) {
    std::sort(scratch_.begin(), scratch_.end());
    for (const std::uint32_t s : scratch_) retire(s, why);
}

void scheduler::emit(const effect& f) noexcept {
    FAIRPOOL_ASSERT(effects_.size() < effects_.capacity());  // max_effects_per_step holds
    effects_.push_back(f);
}

// ---------------------------------------------------------------------------------
// next_deadline (section 4)

std::optional<nanos> scheduler::next_deadline() const noexcept {
    // The steady state of a pool without deadlines, lifetimes or backoff: due_ is a lower
    // bound of the time-driven work, so `never` means there is none.
    if (due_ == never && backoff_end_ <= now_) {
        FAIRPOOL_DEBUG_ASSERT(earliest_time_driven_work() == never);
        return std::nullopt;
    }
    if (!started_) return std::nullopt;
    nanos earliest = earliest_time_driven_work();
    if (!shutting_down_ && backoff_end_ > now_ && spawn_budget() >= 1) earliest = std::min(earliest, backoff_end_);
    if (earliest == never) return std::nullopt;
    FAIRPOOL_ASSERT(earliest > now_);  // a time that would do no work now is never returned
    return earliest;
}

}  // namespace fairpool::core
