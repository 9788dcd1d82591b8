// The reference model (docs/CONTRACT.md, sections 1-6, 9 and 11, health included:
// checks on checkout, keepalive, resets, lifetime jitter), written to be obviously
// correct: standard containers, linear scans, one function per rule.
#include "fairpool/model/reference_model.hpp"

#include "splitmix64.hpp"

#include <algorithm>
#include <set>

namespace fairpool::model {

using core::effect;
using core::event_error;
using core::event_kind;
using core::nanos;
using core::reject_reason;
using core::retire_reason;
using core::slot_state;

namespace {

// Section 2: time arithmetic saturates at 2^64-1, which means "never".
nanos saturating_add(nanos a, nanos b) { return a > core::never - b ? core::never : a + b; }

// A due time has come. A due time of 2^64-1 means "never" (section 2, decisions 1 and 7),
// so it never comes, not even at now = 2^64-1; this keeps ticks and next_deadline() agreeing.
bool reached(nanos due, nanos now) { return due != core::never && due <= now; }

// Decision 6: min(spawn_backoff_initial x 2^(failures-1), spawn_backoff_max); a shift
// that overflows gives spawn_backoff_max.
nanos backoff_delay(std::uint64_t failures, nanos initial, nanos max) {
    const std::uint64_t shift = failures - 1;  // failures >= 1
    if (shift >= 64 || initial > (core::never >> shift)) return max;
    return std::min(initial << shift, max);
}

bool names_a_slot(event_kind k) {
    return k == event_kind::release || k == event_kind::spawned || k == event_kind::spawn_failed ||
           k == event_kind::retired || k == event_kind::died || k == event_kind::checked ||
           k == event_kind::reset_done;
}

// The high 64 bits of the 128-bit product a x b, from 32-bit halves (portable C++).
std::uint64_t high_half_of_product(std::uint64_t a, std::uint64_t b) {
    constexpr std::uint64_t low32 = 0xffffffffu;
    const std::uint64_t a_lo = a & low32, a_hi = a >> 32, b_lo = b & low32, b_hi = b >> 32;
    const std::uint64_t lo_lo = a_lo * b_lo, lo_hi = a_lo * b_hi, hi_lo = a_hi * b_lo, hi_hi = a_hi * b_hi;
    const std::uint64_t middle = (lo_lo >> 32) + (lo_hi & low32) + (hi_lo & low32);
    return hi_hi + (lo_hi >> 32) + (hi_lo >> 32) + (middle >> 32);
}

// Decision 13: (x x (j + 1)) >> 64 with a 128-bit product. j + 1 may be 2^64, so it is
// x x j + x: the high half of x x j, plus the carry out of its low half + x.
std::uint64_t scaled_draw(std::uint64_t x, std::uint64_t j) {
    const std::uint64_t high = high_half_of_product(x, j);
    const std::uint64_t low = x * j;  // mod 2^64: the low half
    return high + (low + x < low ? 1 : 0);
}


}  // namespace

reference_model::reference_model(const core::config& config)
    : config_(core::checked(config)), jitter_state_(config_.jitter_seed), slots_(*config_.slot_capacity),
      max_slots_(config_.max_slots), min_slots_(config_.min_slots) {
    refresh_gauges();
}

// ---------------------------------------------------------------------------------------
// One step (section 5).

core::step_result reference_model::step(const core::event& e) {
    effects_.clear();
    // 1. Validate; an invalid event changes nothing (section 3, invariant 11).
    if (const event_error error = validate(e); error != event_error::ok) return {error, {}};
    last_now_ = e.now;
    if (e.kind == event_kind::acquire) highest_waiter_ = std::max(highest_waiter_, e.waiter);
    run_time_driven_work(e.now);  // 2.
    apply_event(e);               // 3.
    hand_out(e.now);              // 4.
    plan_spawns(e.now);           // 5.
    close_if_done();                // 6.
    forget_unknown_handles();
    refresh_gauges();                   // Section 9: gauges are current after every step.
    return {event_error::ok, effects_};
}

// ---------------------------------------------------------------------------------------
// Step 1. Section 3: start, then time, then fields, then state.

event_error reference_model::validate(const core::event& e) const {
    // Start.
    if (e.kind == event_kind::start) return started_ ? event_error::already_started : event_error::ok;
    if (!started_) return event_error::not_started;
    // Time: equal is fine.
    if (e.now < last_now_) return event_error::time_went_backwards;
    // Fields.
    if (names_a_slot(e.kind) && e.slot >= slots_.size()) return event_error::bad_slot;
    if (e.kind == event_kind::acquire && e.weight && (*e.weight == 0 || *e.weight > core::max_weight))
        return event_error::bad_weight;
    // State.
    switch (e.kind) {
        case event_kind::acquire:
            return is_queued(e.waiter) ? event_error::duplicate_waiter : event_error::ok;
        case event_kind::release: {
            const slot_record& s = slots_[e.slot];
            return s.state == slot_state::leased && s.lease == e.lease ? event_error::ok
                                                                        : event_error::stale_lease;
        }
        case event_kind::spawned:
        case event_kind::spawn_failed:
            return slots_[e.slot].state == slot_state::spawning ? event_error::ok : event_error::not_spawning;
        case event_kind::retired:
            return slots_[e.slot].state == slot_state::retiring ? event_error::ok : event_error::not_retiring;
        case event_kind::died:
            return slots_[e.slot].state == slot_state::idle ? event_error::ok : event_error::not_idle;
        case event_kind::checked:
            return slots_[e.slot].state == slot_state::checking ? event_error::ok : event_error::not_checking;
        case event_kind::reset_done:
            return slots_[e.slot].state == slot_state::resetting ? event_error::ok : event_error::not_resetting;
        case event_kind::resize:
            // Decision 16: 0 <= max_slots <= slot_capacity (max_slots 0: no slot held).
            return e.max_slots() <= slots_.size() && e.min_slots() <= e.max_slots()
                       ? event_error::ok
                       : event_error::bad_size;
        default:
            return event_error::ok;
    }
}

// ---------------------------------------------------------------------------------------
// Step 2. Time-driven work at `now`, in the order of section 5.

void reference_model::run_time_driven_work(nanos now) {
    reject_timed_out_waiters(now);
    report_leaks(now);
    retire_idle_past_lifetime(now);
    retire_idle_past_idle_timeout(now);
    start_due_keepalive_checks(now);
}

// Waiters whose deadline <= now are rejected `timeout`, by deadline, then arrival.
void reference_model::reject_timed_out_waiters(nanos now) {
    std::vector<waiter_record> due;  // in arrival order
    for (const waiter_record& w : waiters_)
        if (reached(w.deadline, now)) due.push_back(w);
    std::stable_sort(due.begin(), due.end(),
                     [](const waiter_record& a, const waiter_record& b) { return a.deadline < b.deadline; });
    for (const waiter_record& w : due) reject_queued(w.id, reject_reason::timeout);
}

// Leases held >= leak_threshold are reported, once each, by slot index.
void reference_model::report_leaks(nanos now) {
    if (config_.leak_threshold == 0) return;
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        slot_record& s = slots_[i];
        if (s.state != slot_state::leased || s.leak_reported) continue;
        if (!reached(saturating_add(s.granted_at, config_.leak_threshold), now)) continue;
        s.leak_reported = true;
        ++stats_.leaks_suspected;
        effects_.push_back(effect::leak_suspected(i, s.lease));
    }
}

// Idle slots whose resource reached its lifetime (decision 13) are retired, by slot index.
void reference_model::retire_idle_past_lifetime(nanos now) {
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        const slot_record& s = slots_[i];
        if (s.state == slot_state::idle && past_lifetime(s, now)) retire(i, retire_reason::max_lifetime);
    }
}

// Decision 5: while the idle slot with the oldest idle time has idle time + idle_timeout
// <= now and more than min_slots slots are live, retire it (`idle`). The idle time, not
// the verification order: a passed check does not make a slot younger (invariant 13).
void reference_model::retire_idle_past_idle_timeout(nanos now) {
    if (config_.idle_timeout == 0) return;
    while (live_slots() > min_slots_) {
        const std::optional<std::uint32_t> oldest = oldest_by_idle_time();
        if (!oldest || !reached(saturating_add(slots_[*oldest].idle_since, config_.idle_timeout), now)) return;
        retire(*oldest, retire_reason::idle);
    }
}

// Keepalive: while fewer than max_concurrent_checks keepalive checks are in flight and
// the least recently verified idle slot is unverified for keepalive_interval, check it.
// Also run in step 3 when a keepalive check ends (section 5, "Checked").
void reference_model::start_due_keepalive_checks(nanos now) {
    if (config_.keepalive_interval == 0) return;
    while (keepalive_checks_in_flight() < config_.max_concurrent_checks && keepalive_due(now))
        start_check(idle_order_.front(), /*keepalive=*/true);
}

// ---------------------------------------------------------------------------------------
// Step 3. The event itself (section 3).

void reference_model::apply_event(const core::event& e) {
    switch (e.kind) {
        case event_kind::start: started_ = true; return;  // prewarming is step 5's work
        case event_kind::acquire: on_acquire(e); return;
        case event_kind::cancel: on_cancel(e); return;
        case event_kind::deregister: on_deregister(e); return;
        case event_kind::release: on_release(e); return;
        case event_kind::spawned: on_spawned(e); return;
        case event_kind::spawn_failed: on_spawn_failed(e); return;
        case event_kind::retired: on_retired(e); return;
        case event_kind::died: on_died(e); return;
        case event_kind::checked: on_checked(e); return;
        case event_kind::reset_done: on_reset_done(e); return;
        case event_kind::tick: return;  // the event itself does nothing
        case event_kind::shutdown: on_shutdown(); return;
        case event_kind::resize: on_resize(e); return;
    }
}

// Section 5, "Acquire order of checks": shutting down -> closed; fresh idle slot ->
// grant; deadline <= now -> timeout; max_waiters or max_waiters_per_handle reached ->
// saturated; else queue. Only a fresh slot grants at once: a stale one needs a check,
// which a queued waiter waits for (and a try-acquire does not: it is rejected timeout).
void reference_model::on_acquire(const core::event& e) {
    ++stats_.acquires;  // decision 2: every valid acquire
    if (shutting_down_) {
        emit_reject(e.waiter, reject_reason::closed);
        return;
    }
    // Decision 15: the cap comes from the acquire that makes the handle known.
    forget_unknown_handles();  // step 2 may have made it unknown
    const std::uint64_t cap = e.max_leases().value_or(config_.max_leases_per_handle);
    if (const std::optional<std::uint32_t> slot = fresh_slot_to_grant(e.now); slot && is_eligible(e.handle)) {
        make_known(e.handle, cap);
        grant(e.waiter, *slot, e.now, e.now, /*immediate=*/true);
        slots_[*slot].holder = e.handle;
        return;
    }
    // Decision 1: the effective deadline is the earlier of the given one and
    // now + acquire_timeout (when acquire_timeout > 0, saturating).
    nanos deadline = e.deadline.value_or(core::never);
    if (config_.acquire_timeout > 0) deadline = std::min(deadline, saturating_add(e.now, config_.acquire_timeout));
    if (reached(deadline, e.now)) {
        emit_reject(e.waiter, reject_reason::timeout);
        return;
    }
    if (waiters_.size() >= config_.max_waiters || queued_of(e.handle) >= *config_.max_waiters_per_handle) {
        emit_reject(e.waiter, reject_reason::saturated);
        return;
    }
    make_known(e.handle, cap);
    enqueue(waiter_record{e.waiter, e.handle, deadline, e.now, arrivals_++}, e.weight.value_or(1));
}

// Queued -> rejected `cancelled`; unknown or already completed -> nothing.
void reference_model::on_cancel(const core::event& e) {
    if (is_queued(e.waiter)) reject_queued(e.waiter, reject_reason::cancelled);
}

// The handle's queued waiters are rejected `deregistered` in FIFO order. Idempotent.
void reference_model::on_deregister(const core::event& e) {
    std::vector<std::uint64_t> ids;  // arrival order
    for (const waiter_record& w : waiters_)
        if (w.handle == e.handle) ids.push_back(w.id);
    for (std::uint64_t id : ids) reject_queued(id, reject_reason::deregistered);
}

// Section 5, "Release": dirty -> retire (dirty); clean -> see release_clean.
void reference_model::on_release(const core::event& e) {
    const std::uint64_t holder = slots_[e.slot].holder;
    const bool was_eligible = is_eligible(holder);
    if (e.outcome == core::release_outcome::dirty)
        retire(e.slot, retire_reason::dirty);
    else
        release_clean(e.slot, e.now, /*after_reset=*/false);
    // The lease is back (the slot is no longer leased): below its cap, the handle
    // rejoins the rotation at the back.
    if (!was_eligible) rejoin_rotation_if_below_cap(holder);
}

// A clean release, and again a `reset_done ok` (section 5, "Release" and "Reset done"):
// the first reason that holds (shutdown, max_uses, max_lifetime) retires the slot;
// otherwise, with reset_on_release and not yet reset, it goes to resetting; otherwise it
// becomes idle, verified now.
void reference_model::release_clean(std::uint32_t slot, nanos now, bool after_reset) {
    const slot_record& s = slots_[slot];
    if (shutting_down_)
        retire(slot, retire_reason::shutdown);
    else if (surplus())
        retire(slot, retire_reason::resize);
    else if (config_.max_uses > 0 && s.uses >= config_.max_uses)
        retire(slot, retire_reason::max_uses);
    else if (past_lifetime(s, now))
        retire(slot, retire_reason::max_lifetime);
    else if (config_.reset_on_release && !after_reset)
        start_reset(slot);
    else
        become_idle(slot, now);
}

// Section 5, "Spawned": idle (age counts from now), or retire (shutdown) if shutting
// down, or (max_lifetime) if its drawn lifetime is 0 (a due time of 2^64-1 never comes,
// decision 9); either way the failure count and any backoff are cleared (decision 6).
void reference_model::on_spawned(const core::event& e) {
    slot_record& s = slots_[e.slot];
    const nanos lifetime = draw_lifetime();  // every valid spawned draws (decision 13)
    s.expires_at = config_.max_lifetime > 0 ? saturating_add(e.now, lifetime) : core::never;
    s.uses = 0;
    failures_ = 0;
    backoff_end_.reset();
    if (shutting_down_)
        retire(e.slot, retire_reason::shutdown);
    else if (surplus())
        retire(e.slot, retire_reason::resize);
    else if (past_lifetime(s, e.now))
        retire(e.slot, retire_reason::max_lifetime);
    else
        become_idle(e.slot, e.now);
}

// Section 5, "Spawn failed": slot empty; no spawn starts before
// now + min(initial x 2^(failures-1), max) (decision 6).
void reference_model::on_spawn_failed(const core::event& e) {
    slots_[e.slot] = slot_record{};  // empty
    ++stats_.spawn_failures;         // decision 2: at each valid spawn_failed
    ++failures_;
    backoff_end_ = saturating_add(
        e.now, backoff_delay(failures_, config_.spawn_backoff_initial, config_.spawn_backoff_max));
}

// The resource of a retiring slot is destroyed; the slot becomes empty.
void reference_model::on_retired(const core::event& e) { slots_[e.slot] = slot_record{}; }

// An idle slot's resource was found dead; it is retired (`died`). The slot was idle when
// the event was validated (step 1); if step 2 of this same step already retired it
// (max_lifetime or idle_timeout), it is retiring already and nothing more happens.
// Decision 14: the same holds for a slot that step 2 moved to checking (keepalive).
void reference_model::on_died(const core::event& e) {
    if (slots_[e.slot].state == slot_state::idle) retire(e.slot, retire_reason::died);
}

// Section 5, "Checked". alive: retire (shutdown) if shutting down, (max_lifetime) if the
// resource reached its lifetime, (idle) by step 2's idle_timeout rule, which could not
// see the slot while it was checking; otherwise idle again, verified now, its idle time
// kept. dead: retire (died), whatever else holds (section 5, "Shutdown"). A keepalive
// check that ends frees its place: keepalive checks now due start at once, in step 3.
void reference_model::on_checked(const core::event& e) {
    slot_record& s = slots_[e.slot];
    const bool keepalive = s.keepalive;
    s.keepalive = false;
    if (e.check == core::check_outcome::dead) {
        ++stats_.checks_failed;
        retire(e.slot, retire_reason::died);
    } else {
        ++stats_.checks_passed;
        if (shutting_down_)
            retire(e.slot, retire_reason::shutdown);
        else if (surplus())
            retire(e.slot, retire_reason::resize);
        else if (past_lifetime(s, e.now))
            retire(e.slot, retire_reason::max_lifetime);
        else if (past_idle_timeout_unwaited(s, e.now))
            retire(e.slot, retire_reason::idle);
        else
            become_idle_after_check(e.slot, e.now);
    }
    if (keepalive) start_due_keepalive_checks(e.now);
}

// Section 5, "Reset done". ok: the rules of a clean release again (release_clean);
// failed: retire (reset_failed), also while shutting down (section 5, "Shutdown").
void reference_model::on_reset_done(const core::event& e) {
    if (e.reset == core::reset_outcome::failed) {
        ++stats_.resets_failed;
        retire(e.slot, retire_reason::reset_failed);
    } else {
        release_clean(e.slot, e.now, /*after_reset=*/true);
    }
}

// Section 5, "Shutdown": all queued waiters rejected `closed` (arrival order), then idle
// slots retire (`shutdown`, by slot index). Idempotent (decision 8). Checking and
// resetting slots retire when their result arrives (on_checked, on_reset_done).
void reference_model::on_shutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    std::vector<std::uint64_t> ids;  // arrival order
    for (const waiter_record& w : waiters_) ids.push_back(w.id);
    for (std::uint64_t id : ids) reject_queued(id, reject_reason::closed);
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].state == slot_state::idle) retire(i, retire_reason::shutdown);
}

// Section 3, `resize`: the new sizes hold at once; surplus idle slots retire now, least
// recently used (oldest idle time) first; the others as they come back.
void reference_model::on_resize(const core::event& e) {
    ++stats_.resizes;
    max_slots_ = e.max_slots();
    min_slots_ = e.min_slots();
    while (surplus()) {
        const std::optional<std::uint32_t> oldest = oldest_by_idle_time();
        if (!oldest) break;
        retire(*oldest, retire_reason::resize);
    }
    retire_idle_past_idle_timeout(e.now);  // decision 16: a lower min_slots, step 2's rule again
}

// ---------------------------------------------------------------------------------------
// Step 4. While a slot is idle and a waiter is queued: grant a fresh idle slot if there
// is one; otherwise, while the queued waiters outnumber the checks and spawns in flight
// (W - C - P > 0), check the most recently verified idle slot (a check on checkout; the
// waiter keeps its place and its turn, an `alive` hands it the slot); otherwise stop.

void reference_model::hand_out(nanos now) {
    while (!idle_order_.empty() && eligible_waiters() > 0) {
        if (const std::optional<std::uint32_t> slot = fresh_slot_to_grant(now)) {
            grant_next_waiter(*slot, now);
            continue;
        }
        const auto w = static_cast<std::int64_t>(eligible_waiters());
        const auto c = static_cast<std::int64_t>(count_slots(slot_state::checking));
        const auto p = static_cast<std::int64_t>(count_slots(slot_state::spawning));
        if (w - c - p <= 0) return;
        start_check(idle_order_.back(), /*keepalive=*/false);
    }
}

// Grants `slot` to the next waiter (section 5, "Who is granted next").
void reference_model::grant_next_waiter(std::uint32_t slot, nanos now) {
    const std::uint64_t id = next_waiter_to_grant();
    const waiter_record w = take_waiter(id);
    grant(w.id, slot, w.acquired_at, now, /*immediate=*/false);
    slots_[slot].holder = w.handle;
    leave_rotation_if_at_cap(w.handle);
    // Round robin: count the grant in the front handle's turn (decision 3); when the
    // turn is used up, the handle moves to the back if it still has waiters. (A handle
    // left without waiters, or at its cap, has already left the rotation.)
    if (config_.policy == core::fairness_policy::round_robin && in_rotation(w.handle)) {
        turn_record& t = turns_.at(w.handle);
        if (++t.turn >= t.weight) {
            rotation_.pop_front();
            rotation_.push_back(w.handle);
            t.turn = 0;
        }
    }
}

// Section 5, "Who is granted next". fifo: the oldest queued waiter. round_robin: the
// front handle's oldest waiter (FIFO inside a handle).
std::uint64_t reference_model::next_waiter_to_grant() {
    if (config_.policy == core::fairness_policy::fifo) {  // the earliest eligible waiter
        for (const waiter_record& w : waiters_)
            if (is_eligible(w.handle)) return w.id;
    }
    const std::uint64_t front = rotation_.front();
    for (const waiter_record& w : waiters_)
        if (w.handle == front) return w.id;
    return waiters_.front().id;  // unreachable: a handle in the rotation has a queued waiter
}

// ---------------------------------------------------------------------------------------
// Step 5. Spawn planning.

void reference_model::plan_spawns(nanos now) {
    if (shutting_down_ || in_backoff(now)) return;
    std::int64_t n = spawns_wanted();
    // On the lowest-numbered empty slots, in increasing slot order.
    for (std::uint32_t i = 0; i < slots_.size() && n > 0; ++i) {
        if (slots_[i].state != slot_state::empty) continue;
        spawn(i);
        --n;
    }
}

// min(max(W - P - C, min_slots - live), empty slots, max_concurrent_spawns - P), signed:
// every check in flight (C) counts as a slot coming for a waiter, as a spawn does.
// max_concurrent_spawns is a u64 that may exceed 2^63; it is capped at max_slots first,
// which changes nothing: P + empty <= max_slots, so max_slots - P >= empty already.
std::int64_t reference_model::spawns_wanted() const {
    const auto w = static_cast<std::int64_t>(eligible_waiters());
    const auto p = static_cast<std::int64_t>(count_slots(slot_state::spawning));
    const auto c = static_cast<std::int64_t>(count_slots(slot_state::checking));
    const auto live = static_cast<std::int64_t>(live_slots());
    // Empty slots within max_slots: a retiring resource still counts against it.
    const auto room = static_cast<std::int64_t>(max_slots_) -
                      static_cast<std::int64_t>(slots_.size() - count_slots(slot_state::empty));
    const auto min_slots = static_cast<std::int64_t>(min_slots_);
    const auto concurrent = static_cast<std::int64_t>(std::min(*config_.max_concurrent_spawns, max_slots_));
    return std::min({std::max(w - p - c, min_slots - live), room, concurrent - p});
}

// Inside a backoff: now < its end (an end of 2^64-1 never comes).
bool reference_model::in_backoff(nanos now) const { return backoff_end_ && !reached(*backoff_end_, now); }

// ---------------------------------------------------------------------------------------
// Step 6. If shutting down and every slot is empty and nobody waits: closed, once.

void reference_model::close_if_done() {
    if (!shutting_down_ || closed_emitted_) return;
    if (!waiters_.empty() || count_slots(slot_state::empty) != slots_.size()) return;
    closed_emitted_ = true;
    effects_.push_back(effect::closed());
}

// ---------------------------------------------------------------------------------------
// Section 4: next_deadline(), exactly as listed there and in decision 7.

std::optional<nanos> reference_model::next_deadline() const {
    std::optional<nanos> earliest;
    auto consider = [&](nanos t) {
        if (t == core::never) return;  // decision 7: saturated to 2^64-1 is "never"
        if (!earliest || t < *earliest) earliest = t;
    };
    if (!started_) return earliest;
    // Queued waiters' deadlines.
    for (const waiter_record& w : waiters_) consider(w.deadline);
    // Unreported leases' grant time + leak_threshold.
    if (config_.leak_threshold > 0)
        for (const slot_record& s : slots_)
            if (s.state == slot_state::leased && !s.leak_reported)
                consider(saturating_add(s.granted_at, config_.leak_threshold));
    // Idle slots' birth + lifetime (decision 13).
    if (config_.max_lifetime > 0)
        for (const slot_record& s : slots_)
            if (s.state == slot_state::idle) consider(s.expires_at);
    // The oldest idle slot's (by idle time) idle time + idle_timeout, if more than
    // min_slots are live.
    if (const std::optional<std::uint32_t> oldest = oldest_by_idle_time();
        config_.idle_timeout > 0 && oldest && live_slots() > min_slots_)
        consider(saturating_add(slots_[*oldest].idle_since, config_.idle_timeout));
    // The least recently verified idle slot's verification + keepalive_interval, if fewer
    // than max_concurrent_checks keepalive checks are in flight.
    if (config_.keepalive_interval > 0 && !idle_order_.empty() &&
        keepalive_checks_in_flight() < config_.max_concurrent_checks)
        consider(saturating_add(slots_[idle_order_.front()].verified, config_.keepalive_interval));
    // The backoff's end: only when not shutting down, after the last event's now, and
    // spawn planning with the current counts would start at least one spawn.
    if (!shutting_down_ && backoff_end_ && *backoff_end_ > last_now_ && spawns_wanted() >= 1)
        consider(*backoff_end_);
    return earliest;
}

// ---------------------------------------------------------------------------------------
// Waiters and the round-robin rotation.

bool reference_model::is_queued(std::uint64_t waiter) const {
    return std::any_of(waiters_.begin(), waiters_.end(), [&](const waiter_record& w) { return w.id == waiter; });
}

std::uint64_t reference_model::queued_of(std::uint64_t handle) const {
    return static_cast<std::uint64_t>(
        std::count_if(waiters_.begin(), waiters_.end(), [&](const waiter_record& w) { return w.handle == handle; }));
}

bool reference_model::in_rotation(std::uint64_t handle) const {
    return std::find(rotation_.begin(), rotation_.end(), handle) != rotation_.end();
}

// Queue a waiter. Its handle joins the rotation at the back, with this acquire's weight,
// when this is its first queued waiter; otherwise the weight is ignored (section 3).
// Kept under both policies (decision 4); only round_robin reads it.
void reference_model::enqueue(const waiter_record& w, std::uint64_t weight) {
    if (queued_of(w.handle) == 0) {
        if (is_eligible(w.handle)) rotation_.push_back(w.handle);  // at its cap it joins when a lease is back
        turns_[w.handle] = turn_record{weight, 0};  // a fresh turn when it reaches the front
    }
    waiters_.push_back(w);
}

// Remove a queued waiter; its handle leaves the rotation if it has no waiter left.
reference_model::waiter_record reference_model::take_waiter(std::uint64_t waiter) {
    const auto it =
        std::find_if(waiters_.begin(), waiters_.end(), [&](const waiter_record& w) { return w.id == waiter; });
    const waiter_record w = *it;
    waiters_.erase(it);
    leave_rotation_if_inactive(w.handle);
    return w;
}

// Decision 3: a handle with no queued waiter leaves the rotation; its weight and turn are
// forgotten. If it was the front handle, the next handle starts a fresh turn.
void reference_model::leave_rotation_if_inactive(std::uint64_t handle) {
    if (queued_of(handle) != 0) return;
    turns_.erase(handle);
    if (in_rotation(handle)) rotation_.erase(std::find(rotation_.begin(), rotation_.end(), handle));
}

// ---------------------------------------------------------------------------------------
// Lease caps (decision 15): a handle is known while it has queued waiters or leases; its
// cap is that of the acquire that made it known. At its cap it is out of the rotation.

std::uint64_t reference_model::leases_of(std::uint64_t handle) const {
    return static_cast<std::uint64_t>(std::count_if(slots_.begin(), slots_.end(), [&](const slot_record& s) {
        return s.state == slot_state::leased && s.holder == handle;
    }));
}

bool reference_model::is_known(std::uint64_t handle) const { return queued_of(handle) > 0 || leases_of(handle) > 0; }

bool reference_model::is_eligible(std::uint64_t handle) const {
    const auto it = caps_.find(handle);
    return it == caps_.end() || it->second == 0 || leases_of(handle) < it->second;
}

std::uint64_t reference_model::eligible_waiters() const {
    return static_cast<std::uint64_t>(
        std::count_if(waiters_.begin(), waiters_.end(), [&](const waiter_record& w) { return is_eligible(w.handle); }));
}

void reference_model::forget_unknown_handles() {
    for (auto it = caps_.begin(); it != caps_.end();) it = is_known(it->first) ? std::next(it) : caps_.erase(it);
}

void reference_model::make_known(std::uint64_t handle, std::uint64_t cap) {
    if (!is_known(handle)) caps_[handle] = cap;
}

// After a grant: at its cap, the handle leaves the rotation with its waiters (its turn
// is forgotten; the next handle starts a fresh one).
void reference_model::leave_rotation_if_at_cap(std::uint64_t handle) {
    if (is_eligible(handle) || !in_rotation(handle)) return;
    rotation_.erase(std::find(rotation_.begin(), rotation_.end(), handle));
    turns_.at(handle).turn = 0;
}

// After a lease came back: a handle with waiters that is below its cap again joins the
// rotation at the back, with a fresh turn.
void reference_model::rejoin_rotation_if_below_cap(std::uint64_t handle) {
    if (!is_eligible(handle) || queued_of(handle) == 0 || in_rotation(handle)) return;
    rotation_.push_back(handle);
    turns_.at(handle).turn = 0;
}

// More slots are live than max_slots (after a resize shrank it).
bool reference_model::surplus() const { return live_slots() > max_slots_; }

void reference_model::reject_queued(std::uint64_t waiter, reject_reason why) {
    take_waiter(waiter);
    emit_reject(waiter, why);
}

// ---------------------------------------------------------------------------------------
// Slots.

std::uint64_t reference_model::count_slots(slot_state s) const {
    return static_cast<std::uint64_t>(
        std::count_if(slots_.begin(), slots_.end(), [&](const slot_record& r) { return r.state == s; }));
}

// Section 1: live = spawning + idle + leased + checking + resetting.
std::uint64_t reference_model::live_slots() const {
    return count_slots(slot_state::spawning) + count_slots(slot_state::idle) + count_slots(slot_state::leased) +
           count_slots(slot_state::checking) + count_slots(slot_state::resetting);
}

// Section 1: an idle slot is stale when verified + check_after_idle <= now (only with
// check_after_idle > 0; a due time of 2^64-1 never comes), fresh otherwise.
bool reference_model::is_fresh(std::uint32_t slot, nanos now) const {
    return config_.check_after_idle == 0 ||
           !reached(saturating_add(slots_[slot].verified, config_.check_after_idle), now);
}

// Section 5, "Idle order": lifo grants the newest fresh slot (by verification), fifo
// the oldest fresh one; none if every idle slot is stale.
std::optional<std::uint32_t> reference_model::fresh_slot_to_grant(nanos now) const {
    if (config_.idle_order == core::idle_order::lifo) {
        for (auto it = idle_order_.rbegin(); it != idle_order_.rend(); ++it)
            if (is_fresh(*it, now)) return *it;
    } else {
        for (const std::uint32_t slot : idle_order_)
            if (is_fresh(slot, now)) return slot;
    }
    return std::nullopt;
}

// Decision 5: the idle slot with the oldest idle time; ties: the one whose idle time was
// set first (the lower idle_seq).
std::optional<std::uint32_t> reference_model::oldest_by_idle_time() const {
    std::optional<std::uint32_t> oldest;
    for (const std::uint32_t slot : idle_order_) {
        const slot_record& s = slots_[slot];
        if (!oldest || s.idle_since < slots_[*oldest].idle_since ||
            (s.idle_since == slots_[*oldest].idle_since && s.idle_seq < slots_[*oldest].idle_seq))
            oldest = slot;
    }
    return oldest;
}

// Decision 13: max_lifetime rules use expires_at, birth + the resource's own lifetime.
bool reference_model::past_lifetime(const slot_record& s, nanos now) const {
    return config_.max_lifetime > 0 && reached(s.expires_at, now);
}

// Section 5, "Checked": no eligible waiter is queued, idle time + idle_timeout <= now
// (idle_timeout > 0) and more than min_slots slots are live (the slot being checked
// among them).
bool reference_model::past_idle_timeout_unwaited(const slot_record& s, nanos now) const {
    return eligible_waiters() == 0 && config_.idle_timeout > 0 && live_slots() > min_slots_ &&
           reached(saturating_add(s.idle_since, config_.idle_timeout), now);
}

std::uint64_t reference_model::keepalive_checks_in_flight() const {
    return static_cast<std::uint64_t>(std::count_if(slots_.begin(), slots_.end(), [](const slot_record& r) {
        return r.state == slot_state::checking && r.keepalive;
    }));
}

// The least recently verified idle slot has verified + keepalive_interval <= now.
bool reference_model::keepalive_due(nanos now) const {
    return !idle_order_.empty() &&
           reached(saturating_add(slots_[idle_order_.front()].verified, config_.keepalive_interval), now);
}

// Decision 13: with max_lifetime_jitter J > 0, lifetime = max_lifetime - ((x (J + 1)) >> 64)
// for the next splitmix64 draw x; with J = 0 nothing is drawn.
nanos reference_model::draw_lifetime() {
    const std::uint64_t jitter = config_.max_lifetime_jitter;
    if (jitter == 0) return config_.max_lifetime;
    const std::uint64_t x = detail::splitmix64(jitter_state_);
    return config_.max_lifetime - scaled_draw(x, jitter);
}

// The slot becomes idle after a `spawned`, a clean release kept or a `reset_done ok`:
// verified now, idle time now (decision 5), at the back of the idle order.
void reference_model::become_idle(std::uint32_t slot, nanos now) {
    slot_record& s = slots_[slot];
    s.state = slot_state::idle;
    s.idle_since = now;
    s.idle_seq = idle_seq_++;
    s.verified = now;
    idle_order_.push_back(slot);
}

// After a `checked alive`: verified now, at the back of the idle order, but its idle
// time unchanged (a check is no use: idle_timeout keeps counting).
void reference_model::become_idle_after_check(std::uint32_t slot, nanos now) {
    slot_record& s = slots_[slot];
    s.state = slot_state::idle;
    s.verified = now;
    idle_order_.push_back(slot);
}

void reference_model::leave_idle(std::uint32_t slot) {
    idle_order_.erase(std::find(idle_order_.begin(), idle_order_.end(), slot));
}

// A grant names an idle slot; lease ids 1, 2, 3, ... in grant order; uses count grants
// since spawned. Decision 2: immediate or after waiting; histogram of now - acquire now.
void reference_model::grant(std::uint64_t waiter, std::uint32_t slot, nanos acquired_at, nanos now, bool immediate) {
    leave_idle(slot);
    slot_record& s = slots_[slot];
    s.state = slot_state::leased;
    s.uses += 1;
    s.lease = next_lease_++;
    s.granted_at = now;
    s.leak_reported = false;
    if (immediate)
        ++stats_.grants_immediate;
    else
        ++stats_.grants_after_wait;
    ++stats_.wait_histogram[static_cast<std::size_t>(core::wait_bucket(now - acquired_at))];
    effects_.push_back(effect::grant(waiter, slot, s.lease));
}

// An idle slot goes to checking with the effect `check` (section 5, steps 2 and 4).
void reference_model::start_check(std::uint32_t slot, bool keepalive) {
    leave_idle(slot);
    slots_[slot].state = slot_state::checking;
    slots_[slot].keepalive = keepalive;
    ++stats_.checks_started;  // decision 11
    effects_.push_back(effect::check(slot));
}

// A released slot goes to resetting with the effect `reset` (section 5, "Release").
void reference_model::start_reset(std::uint32_t slot) {
    slots_[slot].state = slot_state::resetting;
    ++stats_.resets_started;  // decision 11
    effects_.push_back(effect::reset(slot));
}

void reference_model::retire(std::uint32_t slot, retire_reason why) {
    if (slots_[slot].state == slot_state::idle) leave_idle(slot);
    slots_[slot].state = slot_state::retiring;
    slots_[slot].keepalive = false;
    ++stats_.retirements[static_cast<std::size_t>(why)];
    effects_.push_back(effect::retire(slot, why));
}

void reference_model::spawn(std::uint32_t slot) {
    slots_[slot] = slot_record{};
    slots_[slot].state = slot_state::spawning;
    ++stats_.spawns;
    effects_.push_back(effect::spawn(slot));
}

// ---------------------------------------------------------------------------------------
// Counters and gauges (section 9, decision 2).

void reference_model::emit_reject(std::uint64_t waiter, reject_reason why) {
    ++stats_.rejections[static_cast<std::size_t>(why)];
    effects_.push_back(effect::reject(waiter, why));
}

void reference_model::refresh_gauges() {
    stats_.queued_waiters = waiters_.size();
    std::set<std::uint64_t> handles;
    for (const waiter_record& w : waiters_) handles.insert(w.handle);
    stats_.active_handles = handles.size();
    stats_.active_weight = 0;  // each active handle's weight, from the acquire that made it active
    for (const std::uint64_t h : handles) stats_.active_weight += turns_.at(h).weight;
    stats_.waiters_behind_cap = waiters_.size() - eligible_waiters();
    stats_.handles_at_cap = 0;
    for (const auto& [handle, cap] : caps_)
        if (cap > 0 && leases_of(handle) >= cap) ++stats_.handles_at_cap;
    for (int s = 0; s < core::slot_state_count; ++s)
        stats_.slots[static_cast<std::size_t>(s)] = count_slots(static_cast<slot_state>(s));
}

// ---------------------------------------------------------------------------------------
// Accessors.

const core::stats& reference_model::counters() const { return stats_; }

// Throws std::out_of_range for index >= max_slots.
slot_state reference_model::slot(std::uint32_t index) const { return slots_.at(index).state; }

const core::config& reference_model::configuration() const { return config_; }

}  // namespace fairpool::model
