// The invariant checker (docs/CONTRACT.md section 6). See the header for its role.
//
// How a step is followed. The effects of one step come in the order of section 5:
//   step 2 (time-driven work): timeouts, leaks, max_lifetime retirements, idle retirements,
//   keepalive checks; step 3 (the event itself, then the keepalive checks a `checked`
//   frees a place for); step 4 (grants from the queue, checks on checkout); step 5
//   (spawns); step 6 (closed).
// A `check` effect is a keepalive check while one is owed in step 2, or right after a
// keepalive check's `checked` in step 3; otherwise it is a check on checkout (step 4).
// Each effect is given the stage it belongs to (phase_of); stages must not go back.
// The event is applied to the bookkeeping when step 3 begins (begin_event), i.e. after
// the time-driven effects that precede it, which is what lets a cancel lose against a
// timeout of the same step, or a leak be reported for the lease being released.
// What step 3 owed (a cancel's rejection, a dirty release's retirement, ...) is checked
// when it ends (end_event); what step 5 owed when it ends (end_spawns); the rest after
// the last effect.
#include "fairpool/model/invariant_checker.hpp"

#include <algorithm>
#include <concepts>
#include <utility>

#include "fairpool/trace/format.hpp"
#include "splitmix64.hpp"

namespace fairpool::model {

using core::effect;
using core::effect_kind;
using core::event;
using core::event_error;
using core::event_kind;
using core::nanos;
using core::never;
using core::reject_reason;
using core::retire_reason;
using core::slot_state;
using core::to_string;
using trace::format;       // effects as trace records, for messages
using trace::format_line;  // events as trace lines, for messages

namespace {

// Stages of section 5, in the order their effects come out.
constexpr int stage_timeouts = 20;       // step 2: waiters past their deadline
constexpr int stage_leaks = 21;          // step 2: leases held >= leak_threshold
constexpr int stage_lifetime = 22;       // step 2: idle slots past max_lifetime
constexpr int stage_idle = 23;           // step 2: idle slots idle >= idle_timeout
constexpr int stage_keepalive = 24;      // step 2: keepalive checks
constexpr int stage_event = 30;          // step 3: the event's rejections, an acquire's outcome
constexpr int stage_event_retires = 31;  // step 3: the event's retirements and reset
constexpr int stage_event_keepalive = 32;  // step 3: keepalive checks after a keepalive `checked`
constexpr int stage_handout = 40;        // step 4: grants to queued waiters, checks on checkout
constexpr int stage_spawns = 50;         // step 5
constexpr int stage_closed = 60;         // step 6
constexpr int stage_end = 70;            // after the last effect

const char* stage_name(int stage) {
    switch (stage) {
    case stage_timeouts: return "step 2 timeouts";
    case stage_leaks: return "step 2 leak reports";
    case stage_lifetime: return "step 2 max_lifetime retirements";
    case stage_idle: return "step 2 idle retirements";
    case stage_keepalive: return "step 2 keepalive checks";
    case stage_event: return "step 3 (the event)";
    case stage_event_retires: return "step 3 retirements";
    case stage_event_keepalive: return "step 3 keepalive checks";
    case stage_handout: return "step 4 grants and checks on checkout";
    case stage_spawns: return "step 5 spawns";
    case stage_closed: return "step 6 closed";
    default: return "?";
    }
}

void append(std::string& s, const std::string& part) { s += part; }
void append(std::string& s, const char* part) { s += part; }
template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
void append(std::string& s, T value) {
    s += std::to_string(value);
}

template <typename... Parts>
std::string cat(const Parts&... parts) {
    std::string s;
    (append(s, parts), ...);
    return s;
}

nanos saturating_add(nanos a, nanos b) { return a > never - b ? never : a + b; }

// Decision 11.9: a due time of 2^64-1 never comes, not even at now = 2^64-1 (deadlines,
// leak reports, max_lifetime, idle_timeout, the end of a backoff alike).
bool reached(nanos due, nanos now) { return due != never && due <= now; }
bool expired(nanos deadline, nanos now) { return reached(deadline, now); }
bool due_after(nanos from, nanos delay, nanos now) { return reached(saturating_add(from, delay), now); }

std::string time_text(nanos t) { return t == never ? std::string("never") : std::to_string(t); }

// Decision 13, with a compiler's 128-bit integer (the reference model does it from 32-bit
// halves: two ways to the same numbers).
__extension__ typedef unsigned __int128 u128;

std::uint64_t jitter_of(std::uint64_t x, std::uint64_t jitter) {
    return static_cast<std::uint64_t>((static_cast<u128>(x) * (static_cast<u128>(jitter) + 1)) >> 64);
}

// Names the first field where two stats differ; gauges too if asked.
std::optional<std::string> stats_difference(const core::stats& want, const core::stats& got, bool gauges) {
    // The common case, cheaply: no difference at all (names are built only for a breach).
    core::stats same = want;
    if (!gauges) {
        same.queued_waiters = got.queued_waiters, same.active_handles = got.active_handles, same.slots = got.slots;
        same.active_weight = got.active_weight;
        same.waiters_behind_cap = got.waiters_behind_cap, same.handles_at_cap = got.handles_at_cap;
    }
    if (same == got) return std::nullopt;
    auto field = [](const std::string& name, std::uint64_t w, std::uint64_t g) -> std::optional<std::string> {
        if (w == g) return std::nullopt;
        return cat("stats.", name, " is ", g, ", expected ", w);
    };
    std::optional<std::string> d;
    if ((d = field("acquires", want.acquires, got.acquires))) return d;
    if ((d = field("grants_immediate", want.grants_immediate, got.grants_immediate))) return d;
    if ((d = field("grants_after_wait", want.grants_after_wait, got.grants_after_wait))) return d;
    for (int r = 0; r < core::reject_reason_count; ++r)
        if ((d = field(cat("rejections[", to_string(static_cast<reject_reason>(r)), "]"), want.rejections[r],
                       got.rejections[r])))
            return d;
    if ((d = field("spawns", want.spawns, got.spawns))) return d;
    if ((d = field("spawn_failures", want.spawn_failures, got.spawn_failures))) return d;
    for (int r = 0; r < core::retire_reason_count; ++r)
        if ((d = field(cat("retirements[", to_string(static_cast<retire_reason>(r)), "]"), want.retirements[r],
                       got.retirements[r])))
            return d;
    if ((d = field("leaks_suspected", want.leaks_suspected, got.leaks_suspected))) return d;
    if ((d = field("checks_started", want.checks_started, got.checks_started))) return d;
    if ((d = field("checks_passed", want.checks_passed, got.checks_passed))) return d;
    if ((d = field("checks_failed", want.checks_failed, got.checks_failed))) return d;
    if ((d = field("resets_started", want.resets_started, got.resets_started))) return d;
    if ((d = field("resets_failed", want.resets_failed, got.resets_failed))) return d;
    if ((d = field("resizes", want.resizes, got.resizes))) return d;
    for (int b = 0; b < core::wait_histogram_buckets; ++b)
        if ((d = field(cat("wait_histogram[", b, "]"), want.wait_histogram[b], got.wait_histogram[b]))) return d;
    if (!gauges) return std::nullopt;
    if ((d = field("queued_waiters", want.queued_waiters, got.queued_waiters))) return d;
    if ((d = field("active_handles", want.active_handles, got.active_handles))) return d;
    if ((d = field("active_weight", want.active_weight, got.active_weight))) return d;
    if ((d = field("waiters_behind_cap", want.waiters_behind_cap, got.waiters_behind_cap))) return d;
    if ((d = field("handles_at_cap", want.handles_at_cap, got.handles_at_cap))) return d;
    for (int s = 0; s < core::slot_state_count; ++s)
        if ((d = field(cat("slots[", to_string(static_cast<slot_state>(s)), "]"), want.slots[s], got.slots[s])))
            return d;
    return std::nullopt;
}

}  // namespace

invariant_checker::invariant_checker(const core::config& config)
    : config_(core::checked(config)),
      max_slots_(config_.max_slots),
      min_slots_(config_.min_slots),
      slots_(*config_.slot_capacity),
      jitter_state_(config_.jitter_seed) {}

// ---------------------------------------------------------------------------------
// One step.

std::optional<std::string> invariant_checker::check_step(const event& e, event_error error,
                                                         std::span<const effect> effects,
                                                         const core::stats& after) {
    first_breach_.reset();
    step_ = step_state{};
    step_.e = &e;
    ++steps_;

    // Section 3: validation comes first, from the state before the step.
    const event_error expected = expected_error(e);
    if (error != expected)
        breach(cat("section 3: ", format_line(e), " returned ", to_string(error), ", expected ",
                   to_string(expected)));
    if (error != event_error::ok) {
        check_bad_event(error, effects, after);
        return first_breach_;
    }
    if (expected != event_error::ok) {
        // The scheduler accepted an event this checker holds invalid: it cannot follow.
        prev_ = after;
        have_prev_ = true;
        return first_breach_;
    }

    started_ = true;
    now_ = e.now;
    expected_counters_ = prev_;
    if (e.kind == event_kind::acquire) {
        ++expected_counters_.acquires;  // decision 11.2: every valid acquire
        step_.own_open = true;
        step_.own.id = e.waiter;
    }
    if (e.kind == event_kind::spawn_failed) ++expected_counters_.spawn_failures;
    // Decision 11.11: checks passed and failed, resets failed, at each valid result.
    if (e.kind == event_kind::checked)
        ++(e.check == core::check_outcome::alive ? expected_counters_.checks_passed : expected_counters_.checks_failed);
    if (e.kind == event_kind::reset_done && e.reset == core::reset_outcome::failed) ++expected_counters_.resets_failed;
    if (e.kind == event_kind::resize) ++expected_counters_.resizes;

    for (const effect& f : effects) {
        const int stage = phase_of(f);
        if (stage < step_.phase)
            breach(cat("section 5: ", format(f), " belongs to ", stage_name(stage), " but came after effects of ",
                       stage_name(step_.phase), " (the effects of a step come in the order of section 5)"));
        advance_to(stage);
        switch (f.kind) {
        case effect_kind::grant: on_grant(f); break;
        case effect_kind::reject: on_reject(f); break;
        case effect_kind::spawn: on_spawn(f); break;
        case effect_kind::retire: on_retire(f); break;
        case effect_kind::leak_suspected: on_leak(f); break;
        case effect_kind::check: on_check(f); break;
        case effect_kind::reset: on_reset(f); break;
        case effect_kind::closed: on_closed(); break;
        default: breach(cat("section 4: unknown effect kind ", static_cast<int>(f.kind))); break;
        }
    }
    advance_to(stage_end);
    forget_unknown_handles();

    check_closed_owed();
    check_no_idle_while_queued();
    check_no_idle_surplus();
    check_time_driven_work_done();
    check_counts(after);
    check_counters(after);
    prev_ = after;
    have_prev_ = true;
    return first_breach_;
}

void invariant_checker::breach(std::string message) {
    if (!first_breach_) first_breach_ = std::move(message);
}

// Section 3, in its order: start, time, fields, state.
event_error invariant_checker::expected_error(const event& e) const {
    if (!started_) return e.kind == event_kind::start ? event_error::ok : event_error::not_started;
    if (e.kind == event_kind::start) return event_error::already_started;
    if (e.now < now_) return event_error::time_went_backwards;
    switch (e.kind) {
    case event_kind::release:
    case event_kind::spawned:
    case event_kind::spawn_failed:
    case event_kind::retired:
    case event_kind::died:
    case event_kind::checked:
    case event_kind::reset_done:
        if (e.slot >= slots_.size()) return event_error::bad_slot;
        break;
    case event_kind::resize:
        if (e.max_slots() > slots_.size() || e.min_slots() > e.max_slots()) return event_error::bad_size;
        break;
    case event_kind::acquire:
        if (e.weight && (*e.weight == 0 || *e.weight > core::max_weight)) return event_error::bad_weight;
        break;
    default: break;
    }
    switch (e.kind) {
    case event_kind::acquire:
        if (queued_.contains(e.waiter)) return event_error::duplicate_waiter;
        break;
    case event_kind::release:
        if (slots_[e.slot].state != slot_state::leased || slots_[e.slot].lease != e.lease)
            return event_error::stale_lease;
        break;
    case event_kind::spawned:
    case event_kind::spawn_failed:
        if (slots_[e.slot].state != slot_state::spawning) return event_error::not_spawning;
        break;
    case event_kind::retired:
        if (slots_[e.slot].state != slot_state::retiring) return event_error::not_retiring;
        break;
    case event_kind::died:
        if (slots_[e.slot].state != slot_state::idle) return event_error::not_idle;
        break;
    case event_kind::checked:
        if (slots_[e.slot].state != slot_state::checking) return event_error::not_checking;
        break;
    case event_kind::reset_done:
        if (slots_[e.slot].state != slot_state::resetting) return event_error::not_resetting;
        break;
    default: break;
    }
    return event_error::ok;
}

// Invariant 11: a bad event never changes state: it emits nothing and the stats stay.
void invariant_checker::check_bad_event(event_error error, std::span<const effect> effects,
                                        const core::stats& after) {
    const event& e = *step_.e;
    if (!effects.empty())
        breach(cat("invariant 11: ", format_line(e), " returned ", to_string(error), " but emitted ",
                   effects.size(), " effect(s), the first ", format(effects[0])));
    if (have_prev_) {
        if (auto d = stats_difference(prev_, after, true))
            breach(cat("invariant 11: ", format_line(e), " returned ", to_string(error),
                       " but changed the stats: ", *d));
    } else {
        // Before any step the counters are zero; the gauges are taken as they are.
        if (auto d = stats_difference(core::stats{}, after, false))
            breach(cat("invariant 11: ", format_line(e), " returned ", to_string(error),
                       " but changed the stats: ", *d));
        prev_ = after;
        have_prev_ = true;
    }
}

// The stage of section 5 an effect belongs to, given the bookkeeping so far.
int invariant_checker::phase_of(const effect& f) const {
    const bool own = step_.own_open && f.waiter == step_.own.id;
    switch (f.kind) {
    case effect_kind::grant: return own ? stage_event : stage_handout;
    case effect_kind::reject:
        if (own) return stage_event;
        return f.rejected == reject_reason::timeout ? stage_timeouts : stage_event;
    case effect_kind::leak_suspected: return stage_leaks;
    case effect_kind::retire:
        // A checking slot retired idle is a `checked alive` (step 3); an idle one is step 2.
        // In a resize step, an idle retirement that step 2 no longer owes comes after the
        // event (decision 16: the new min_slots).
        if (f.retired == retire_reason::idle &&
            !(f.slot < slots_.size() && slots_[f.slot].state == slot_state::checking)) {
            if (step_.e->kind == event_kind::resize &&
                (step_.phase >= stage_event || !idle_timeout_due(min_slots_)))
                return stage_event_retires;
            return stage_idle;
        }
        // A leased slot retired max_lifetime is being released (step 3); an idle one is step 2.
        if (f.retired == retire_reason::max_lifetime && f.slot < slots_.size() &&
            slots_[f.slot].state == slot_state::idle)
            return stage_lifetime;
        return stage_event_retires;
    case effect_kind::reset: return stage_event_retires;
    case effect_kind::check:
        // Step 2's keepalive checks come first while one is owed; after a keepalive
        // check's `checked`, step 3 starts those now due (on_check moves on to step 4 if
        // none is owed after the event); else a check on checkout.
        if (step_.phase < stage_event && keepalive_owed()) return stage_keepalive;
        if (step_.e->kind == event_kind::checked && step_.phase <= stage_event_keepalive &&
            (step_.phase >= stage_event ? step_.keepalive_ended : slots_[step_.e->slot].keepalive))
            return stage_event_keepalive;
        return stage_handout;
    case effect_kind::spawn: return stage_spawns;
    case effect_kind::closed: return stage_closed;
    }
    return stage_end;
}

void invariant_checker::advance_to(int stage) {
    if (stage <= step_.phase) return;
    if (step_.phase < stage_event && stage >= stage_event) begin_event();
    if (step_.phase < stage_handout && stage >= stage_handout) end_event();
    if (step_.phase < stage_spawns && stage >= stage_spawns) plan_spawns();
    if (step_.phase < stage_closed && stage >= stage_closed) end_spawns();
    step_.phase = stage;
}

// Step 3 begins: the event changes the bookkeeping (section 3 and section 5).
void invariant_checker::begin_event() {
    const event& e = *step_.e;
    switch (e.kind) {
    case event_kind::start:
    case event_kind::tick:
    case event_kind::deregister: break;  // end_event checks what deregister owed

    case event_kind::acquire: {
        // Decision 11.1: the effective deadline.
        nanos deadline = e.deadline.value_or(never);
        if (config_.acquire_timeout > 0) deadline = std::min(deadline, saturating_add(e.now, config_.acquire_timeout));
        step_.own = waiter_info{e.waiter, e.handle, ++arrivals_, e.now, deadline};
        // Decision 15: the acquire that makes its handle known sets its cap.
        known_.try_emplace(e.handle, known_info{e.max_leases().value_or(config_.max_leases_per_handle), 0});
        completed_.erase(e.waiter);  // ids must never be reused; if one is, follow the new request
        // Section 5, "acquire order of checks", on the state after step 2.
        const auto h = handles_.find(e.handle);
        const std::size_t of_handle = h == handles_.end() ? 0 : h->second.waiters.size();
        // Only a fresh idle slot grants at once (section 5, "No barging").
        step_.idle_at_acquire = 0;
        for (const slot_info& s : slots_)
            if (s.state == slot_state::idle && is_fresh(s)) ++step_.idle_at_acquire;
        if (shutting_down_)
            step_.expected = acquire_outcome::closed;
        else if (step_.idle_at_acquire > 0 && !at_cap(e.handle))
            step_.expected = acquire_outcome::grant;
        else if (expired(deadline, e.now))
            step_.expected = acquire_outcome::timeout;
        else if (queued_.size() >= config_.max_waiters || of_handle >= *config_.max_waiters_per_handle)
            step_.expected = acquire_outcome::saturated;
        else
            step_.expected = acquire_outcome::queue;
        break;
    }

    case event_kind::cancel:
        // Queued now (after step 2's timeouts) -> rejected cancelled; else nothing.
        if (queued_.contains(e.waiter)) step_.cancel_target = e.waiter;
        break;

    case event_kind::release: {
        lease_back(e.slot);  // decision 15: the lease is back to its handle first, clean or dirty
        slot_info& s = slots_[e.slot];
        s.lease = 0;  // the lease ends; the slot stays "leased" until it is retired, reset or idle
        // Section 5, "Release": dirty retires; clean is judged by judge_clean_return.
        if (e.outcome == core::release_outcome::dirty) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::dirty, step_.retire_why = "released dirty";
        } else {
            judge_clean_return(e.slot, config_.reset_on_release, "released");
        }
        break;
    }

    case event_kind::spawned: {
        slot_info& s = slots_[e.slot];
        s.fresh = true, s.uses = 0;
        draw_lifetime(s);  // decision 13: every valid spawned draws
        spawn_failures_in_a_row_ = 0, backoff_end_ = 0;  // decision 11.6
        if (shutting_down_) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::shutdown;
            step_.retire_why = "spawned while shutting down";
        } else if (surplus()) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::resize;
            step_.retire_why = cat("spawned with ", live_slots(), " slot(s) live above max_slots ", max_slots_);
        } else if (past_lifetime(s)) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::max_lifetime;
            step_.retire_why = "spawned with a drawn lifetime of 0";
        } else {
            make_idle(e.slot);
        }
        break;
    }

    case event_kind::checked: {
        // Section 5, "Checked": dead retires (died); alive retires if shutting down or at
        // the end of its lifetime, else the slot is idle again with its idle time kept.
        slot_info& s = slots_[e.slot];
        step_.keepalive_ended = s.keepalive;
        s.keepalive = false;
        if (e.check == core::check_outcome::dead) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::died;
            step_.retire_why = "found dead by its check";
        } else if (shutting_down_) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::shutdown;
            step_.retire_why = "checked alive while shutting down";
        } else if (surplus()) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::resize;
            step_.retire_why = cat("checked alive with ", live_slots(), " slot(s) live above max_slots ", max_slots_);
        } else if (past_lifetime(s)) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::max_lifetime;
            step_.retire_why = cat("checked alive at ", e.now, " (its lifetime ended at ", time_text(s.expires_at), ")");
        } else if (eligible_waiters() == 0 && config_.idle_timeout > 0 && live_slots() > min_slots_ &&
                   due_after(s.idle_since, config_.idle_timeout, e.now)) {
            // Step 2's idle_timeout rule, which could not see the slot while it was checking.
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::idle;
            step_.retire_why = cat("checked alive, idle since ", s.idle_since, " (idle_timeout ", config_.idle_timeout,
                                   ") with no eligible waiter queued and ", live_slots(),
                                   " slot(s) live (min_slots ", min_slots_, ")");
        } else {
            make_idle_after_check(e.slot);
        }
        break;
    }

    case event_kind::reset_done:
        // Section 5, "Reset done": failed retires (reset_failed); ok is a clean return again.
        if (e.reset == core::reset_outcome::failed) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::reset_failed;
            step_.retire_why = "failed its reset";
        } else {
            judge_clean_return(e.slot, false, "reset");
        }
        break;

    case event_kind::spawn_failed: {
        slots_[e.slot].state = slot_state::empty;
        // Decision 11.6: backoff = min(initial * 2^(failures-1), max), saturating.
        const std::uint64_t shift = ++spawn_failures_in_a_row_ - 1;
        nanos delay = config_.spawn_backoff_max;
        if (shift < 64 && config_.spawn_backoff_initial <= (never >> shift))
            delay = std::min(config_.spawn_backoff_initial << shift, config_.spawn_backoff_max);
        backoff_end_ = saturating_add(e.now, delay);
        break;
    }

    case event_kind::retired: slots_[e.slot].state = slot_state::empty; break;

    case event_kind::died:
        // The slot was idle when validated; step 2 may have retired it already (max_lifetime
        // or idle_timeout), and then died does nothing more (decision 11.10).
        if (slots_[e.slot].state == slot_state::idle) {
            step_.retire_slot = e.slot, step_.retire_reason = retire_reason::died;
            step_.retire_why = "found dead";
        }
        break;

    case event_kind::shutdown:
        if (!shutting_down_) shutting_down_ = true, step_.shutdown_began = true;  // idempotent
        break;
    case event_kind::resize:
        // Decision 16: the new sizes from step 3 on; the retirements it owes are checked
        // as they come (on_retire) and when step 3 ends (end_event).
        max_slots_ = e.max_slots(), min_slots_ = e.min_slots();
        break;
    }
}

// Step 3 ends: check that the event did what it owed.
void invariant_checker::end_event() {
    const event& e = *step_.e;
    switch (e.kind) {
    case event_kind::acquire:
        // Invariant 1: an acquire is completed in its step or queued.
        if (step_.own_open) {
            if (step_.expected == acquire_outcome::closed)
                breach(cat("invariant 9: acquire of waiter ", e.waiter, " after shutdown was queued, expected reject closed"));
            else if (step_.expected == acquire_outcome::grant)
                breach(cat("invariant 6: acquire of waiter ", e.waiter, " was queued while ", step_.idle_at_acquire,
                           " fresh slot(s) were idle"));
            else if (step_.expected == acquire_outcome::timeout)
                breach(cat("section 5: try-acquire of waiter ", e.waiter, " (effective deadline ",
                           time_text(step_.own.deadline), " <= now ", e.now, ") was queued, expected reject timeout"));
            else if (step_.expected == acquire_outcome::saturated)
                breach(cat("invariant 3: acquire of waiter ", e.waiter, " of handle ", e.handle,
                           " was queued beyond max_waiters (", config_.max_waiters, ") or max_waiters_per_handle (",
                           *config_.max_waiters_per_handle, "), expected reject saturated"));
            queue_own_waiter();
        }
        break;
    case event_kind::cancel:
        // Invariant 8: a cancel of a queued waiter rejects it cancelled in that step.
        if (step_.cancel_target && !step_.cancel_done)
            breach(cat("invariant 8: cancel of queued waiter ", *step_.cancel_target,
                       " did not reject it cancelled in its step"));
        break;
    case event_kind::deregister:
        if (const auto h = handles_.find(e.handle); h != handles_.end())
            breach(cat("invariant 8: deregister of handle ", e.handle, " left its waiter ",
                       h->second.waiters.begin()->second, " queued (it must be rejected deregistered)"));
        break;
    case event_kind::shutdown:
        if (step_.shutdown_began) {
            if (!by_arrival_.empty())
                breach(cat("invariant 9: shutdown left waiter ", by_arrival_.begin()->second,
                           " queued (queued waiters are rejected closed)"));
            for (std::uint32_t i = 0; i < slots_.size(); ++i)
                if (slots_[i].state == slot_state::idle) {
                    breach(cat("section 5: shutdown left slot ", i, " idle (idle slots retire shutdown)"));
                    break;
                }
        }
        break;
    default: break;
    }
    if (step_.retire_slot && !step_.retire_done) {
        const std::uint32_t i = *step_.retire_slot;
        const bool dirty = step_.retire_reason == retire_reason::dirty;
        const bool dead = step_.retire_reason == retire_reason::died;
        breach(cat(dirty ? "invariant 7: " : dead && e.kind == event_kind::checked ? "invariant 12: " : "section 5: ",
                   "slot ", i, " ", step_.retire_why, " was not retired (expected ",
                   format(effect::retire(i, step_.retire_reason)), ")"));
        // Follow the scheduler: the slot presumably stayed idle. A dirty or dead resource
        // must still never be granted (invariants 7 and 12), so it is not fresh.
        make_idle(i);
        slots_[i].fresh = !dirty && !dead && step_.retire_reason != retire_reason::reset_failed;
    }
    if (step_.reset_slot && !step_.reset_done) {
        const std::uint32_t i = *step_.reset_slot;
        breach(cat("section 5: slot ", i, " released clean with reset_on_release was not reset (expected ",
                   format(effect::reset(i)), ")"));
        slots_[i].state = slot_state::resetting;  // follow the scheduler as best we can
    }
}

// ---------------------------------------------------------------------------------
// Effects.

void invariant_checker::on_grant(const effect& f) {
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    const bool own = step_.own_open && f.waiter == step_.own.id;
    std::optional<waiter_info> w;
    if (const waiter_info* p = find_live(f.waiter)) w = *p;
    check_waiter_live(f);  // invariants 1 and 8
    // Invariant 9: after shutdown nobody is granted (the queue was rejected, later acquires are closed).
    if (shutting_down_) breach(cat("invariant 9: ", format(f), " after shutdown"));
    check_slot_grantable(f);  // invariants 2 and 7, idle order
    // Invariant 2: lease ids are 1, 2, 3, ... in grant order.
    if (f.lease != last_lease_ + 1)
        breach(cat("invariant 2: ", format(f), ": lease ids increase 1, 2, 3, ... in grant order, expected lease ",
                   last_lease_ + 1));

    if (w) {
        // Decision 15: a handle at its cap is not granted.
        if (at_cap(w->handle))
            breach(cat("decision 15: ", format(f), ": handle ", w->handle, " already holds its cap of ",
                       known_.at(w->handle).cap, " lease(s)"));
        if (own) {
            // Invariant 6, no barging: granted at once only if no eligible waiter was queued before it.
            if (const std::uint64_t n = eligible_waiters(); n > 0)
                breach(cat("invariant 6: ", format(f), " granted a new acquire at once although ", n,
                           " eligible waiter(s) were queued before it (barging), the oldest ",
                           *oldest_eligible_waiter()));
            step_.own_open = false;
            ++known_[w->handle].leases;
            ++expected_counters_.grants_immediate;
        } else {
            // Section 5 step 2 comes first: a waiter past its deadline has been rejected.
            if (expired(w->deadline, now_))
                breach(cat("section 5: ", format(f), " at now ", now_, ": the waiter's deadline ",
                           time_text(w->deadline), " has passed, it must have been rejected timeout"));
            check_fifo(*w);
            if (config_.policy == core::fairness_policy::round_robin) check_round_robin(*w);
            ++known_[w->handle].leases;  // before its waiter leaves: the handle stays known
            remove_queued(w->id);
            ++expected_counters_.grants_after_wait;
        }
        ++expected_counters_.wait_histogram[core::wait_bucket(now_ - w->acquired_at)];
        completed_[w->id] = terminal{true, reject_reason::saturated, steps_};
    }

    slot_info& s = slots_[f.slot];
    s.state = slot_state::leased;
    s.holder = w ? w->handle : 0;
    s.lease = f.lease, s.lease_waiter = f.waiter, s.granted_at = now_, s.leak_reported = false;
    ++s.uses;
    last_lease_ = std::max(last_lease_, f.lease);
}

void invariant_checker::on_reject(const effect& f) {
    ++expected_counters_.rejections[static_cast<std::size_t>(f.rejected)];
    const waiter_info* p = find_live(f.waiter);
    if (!check_waiter_live(f)) return;  // invariants 1 and 8
    const waiter_info w = *p;
    const bool own = step_.own_open && f.waiter == step_.own.id;
    const event& e = *step_.e;

    // The acquire's own outcome: section 5, "acquire order of checks".
    auto check_own = [&](acquire_outcome got) {
        if (step_.expected == got) return;
        const char* expected = "";
        switch (step_.expected) {
        case acquire_outcome::grant: expected = "a grant (a fresh slot was idle)"; break;
        case acquire_outcome::closed: expected = "reject closed (shutting down)"; break;
        case acquire_outcome::timeout: expected = "reject timeout (deadline <= now)"; break;
        case acquire_outcome::saturated: expected = "reject saturated"; break;
        case acquire_outcome::queue: expected = "to be queued"; break;
        }
        breach(cat(step_.expected == acquire_outcome::closed ? "invariant 9: " : "section 5 (acquire order of checks): ",
                   format(f), " for ", format_line(e), ": expected ", expected, " (", queued_.size(),
                   " queued, effective deadline ", time_text(w.deadline), ")"));
    };

    switch (f.rejected) {
    case reject_reason::saturated:
        if (!own)
            breach(cat("invariant 3: ", format(f), ": only a new acquire can be rejected saturated"));
        else
            check_own(acquire_outcome::saturated);
        break;
    case reject_reason::timeout:
        if (own) {
            check_own(acquire_outcome::timeout);
        } else if (!expired(w.deadline, now_)) {
            breach(cat("section 5 step 2: ", format(f), " at now ", now_, " but its effective deadline is ",
                       time_text(w.deadline)));
        } else if (const auto& first = *by_deadline_.begin(); std::get<2>(first) != w.id) {
            breach(cat("section 5 step 2: timeouts go by deadline, then arrival: ", format(f), " (deadline ",
                       time_text(w.deadline), ") came before waiter ", std::get<2>(first), " (deadline ",
                       time_text(std::get<0>(first)), ")"));
        }
        break;
    case reject_reason::cancelled:
        if (own || e.kind != event_kind::cancel || e.waiter != w.id)
            breach(cat("invariant 8: ", format(f), " without a cancel of that waiter (event ", format_line(e), ")"));
        else
            step_.cancel_done = true;
        break;
    case reject_reason::deregistered:
        if (own || e.kind != event_kind::deregister || e.handle != w.handle) {
            breach(cat("section 3: ", format(f), " (handle ", w.handle, ") without a deregister of its handle (event ",
                       format_line(e), ")"));
        } else if (const std::uint64_t oldest = handles_.at(w.handle).waiters.begin()->second; oldest != w.id) {
            breach(cat("section 3: deregister rejects a handle's waiters in FIFO order: ", format(f),
                       " came before older waiter ", oldest));
        }
        break;
    case reject_reason::closed:
        if (own) {
            check_own(acquire_outcome::closed);
        } else if (!step_.shutdown_began) {
            breach(cat("invariant 9: ", format(f), ": a queued waiter is rejected closed only by the shutdown event (event ",
                       format_line(e), ")"));
        } else if (const std::uint64_t oldest = by_arrival_.begin()->second; oldest != w.id) {
            breach(cat("section 5: shutdown rejects queued waiters in arrival order: ", format(f),
                       " came before older waiter ", oldest));
        }
        break;
    }

    if (own)
        step_.own_open = false;
    else
        remove_queued(w.id);
    completed_[w.id] = terminal{false, f.rejected, steps_};
}

void invariant_checker::on_spawn(const effect& f) {
    ++expected_counters_.spawns;
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    slot_info& s = slots_[f.slot];
    // Section 5 step 5: spawns go to the lowest-numbered empty slots, never while
    // shutting down or inside a backoff, and as many as the formula says.
    if (s.state != slot_state::empty) {
        breach(cat("section 5 step 5: ", format(f), ": the slot is ", to_string(s.state), ", not empty"));
    } else if (shutting_down_) {
        breach(cat("section 5 step 5: ", format(f), " while shutting down"));
    } else if (!reached(backoff_end_, now_)) {
        breach(cat("section 5 step 5: ", format(f), " at now ", now_, " inside the spawn backoff (it ends at ",
                   time_text(backoff_end_), ")"));
    } else {
        for (std::uint32_t i = 0; i < f.slot; ++i)
            if (slots_[i].state == slot_state::empty) {
                breach(cat("section 5 step 5: ", format(f), " although lower slot ", i, " is empty"));
                break;
            }
    }
    if (++step_.spawns_seen > step_.spawns_expected)
        breach(cat("section 5 step 5: ", format(f), " is one spawn too many: spawn planning (", step_.spawn_plan,
                   ") starts ", step_.spawns_expected));
    s.state = slot_state::spawning;
}

void invariant_checker::on_retire(const effect& f) {
    ++expected_counters_.retirements[static_cast<std::size_t>(f.retired)];
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    const std::uint32_t slot = f.slot;
    slot_info& s = slots_[slot];
    const event& e = *step_.e;

    if (f.retired == retire_reason::resize && e.kind == event_kind::resize && step_.phase >= stage_event &&
        s.state == slot_state::idle) {
        // Decision 16: surplus idle slots retire in the resize step, least recently used first.
        const std::optional<std::uint32_t> oldest = oldest_idle();
        if (!surplus())
            breach(cat("decision 16: ", format(f), " with ", live_slots(), " slot(s) live, max_slots ", max_slots_,
                       " (no surplus)"));
        else if (*oldest != slot)
            breach(cat("decision 16: ", format(f), ": surplus idle slots retire least recently used first, slot ",
                       *oldest, " is idle longer"));
    } else if (f.retired == retire_reason::idle && s.state != slot_state::checking) {
        // Step 2: idle slots idle >= idle_timeout retire, oldest idle first, while more
        // than min_slots slots are live.
        // Invariant 13: by idle time, which a passed check does not move.
        const std::optional<std::uint32_t> oldest = oldest_idle();
        if (s.state != slot_state::idle)
            breach(cat("section 5 step 2: ", format(f), ": the slot is ", to_string(s.state), ", not idle"));
        else if (config_.idle_timeout == 0)
            breach(cat("section 5 step 2: ", format(f), " but idle_timeout is 0 (disabled)"));
        else if (!due_after(s.idle_since, config_.idle_timeout, now_))
            breach(cat("invariant 13: ", format(f), " at now ", now_, ": idle since ", s.idle_since,
                       " (its last release, spawn or reset), less than idle_timeout ", config_.idle_timeout));
        else if (*oldest != slot)
            breach(cat("section 5 step 2: ", format(f), ": idle slots retire oldest idle first, slot ", *oldest,
                       " is idle longer"));
        else if (live_slots() <= min_slots_)
            breach(cat("section 5 step 2: ", format(f), " with only ", live_slots(), " slot(s) live (min_slots ",
                       min_slots_, ")"));
        else if (step_.phase >= stage_event && surplus())
            breach(cat("decision 16: ", format(f), " before the surplus idle slots retired resize (", live_slots(),
                       " slot(s) live, max_slots ", max_slots_, ")"));
    } else if (f.retired == retire_reason::max_lifetime && s.state == slot_state::idle) {
        // Step 2: idle slots past max_lifetime retire, by slot index.
        if (config_.max_lifetime == 0) {
            breach(cat("section 5 step 2: ", format(f), " but max_lifetime is 0 (disabled)"));
        } else if (!past_lifetime(s)) {
            breach(cat("section 5 step 2: ", format(f), " at now ", now_, ": its lifetime ends at ",
                       time_text(s.expires_at), " (max_lifetime ", config_.max_lifetime, ")"));
        } else {
            for (std::uint32_t i = 0; i < slot; ++i)
                if (slots_[i].state == slot_state::idle && past_lifetime(slots_[i])) {
                    breach(cat("section 5 step 2: ", format(f), " came before lower slot ", i,
                               " (max_lifetime retirements go by slot index)"));
                    break;
                }
        }
    } else if (step_.retire_slot == slot && !step_.retire_done) {
        // Step 3: what a release, a spawned while shutting down, or a died owed.
        step_.retire_done = true;
        if (f.retired != step_.retire_reason)
            breach(cat(step_.retire_reason == retire_reason::dirty ? "invariant 7: " : "section 5: ", "slot ", slot, " ",
                       step_.retire_why, " must retire ", to_string(step_.retire_reason), ", got ", format(f)));
    } else if (step_.shutdown_began && f.retired == retire_reason::shutdown && s.state == slot_state::idle) {
        // Step 3 of shutdown: idle slots retire, by slot index.
        for (std::uint32_t i = 0; i < slot; ++i)
            if (slots_[i].state == slot_state::idle) {
                breach(cat("section 5: ", format(f), " came before lower idle slot ", i,
                           " (shutdown retires idle slots by slot index)"));
                break;
            }
    } else {
        breach(cat("section 5: ", format(f), " is owed by nothing: the slot is ", to_string(s.state),
                   s.state == slot_state::leased && s.lease ? cat(" (lease ", s.lease, ")") : std::string(),
                   " and the event is ", format_line(e)));
    }
    s.state = slot_state::retiring;
    s.fresh = false;  // invariants 7 and 12: no grant before a new spawn ... spawned
    s.lease = 0;
    s.keepalive = false;
}

// A check: a keepalive check (step 2, or step 3 after a keepalive check ended) or a
// check on checkout (step 4); phase_of said which stage it belongs to.
void invariant_checker::on_check(const effect& f) {
    ++expected_counters_.checks_started;  // decision 11.11
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    // In step 3, a check is a keepalive check only while one is owed after the event.
    if (step_.phase == stage_event_keepalive && !keepalive_owed()) advance_to(stage_handout);
    slot_info& s = slots_[f.slot];
    const bool keepalive = step_.phase < stage_handout;
    if (s.state != slot_state::idle)
        breach(cat("section 5: ", format(f), ": the slot is ", to_string(s.state), ", not idle"));
    else if (shutting_down_)
        breach(cat("section 5: ", format(f), " while shutting down (no slot is idle then)"));
    else if (keepalive)
        check_keepalive(f);
    else
        check_on_checkout(f);
    s.state = slot_state::checking;
    s.keepalive = keepalive;
}

// Section 5 step 2 (and "Checked"): keepalive checks the least recently verified idle
// slot, once it is unverified for keepalive_interval, while fewer than
// max_concurrent_checks keepalive checks are in flight; after step 2's retirements.
void invariant_checker::check_keepalive(const effect& f) {
    const slot_info& s = slots_[f.slot];
    const std::optional<std::uint32_t> first = least_recently_verified_idle();
    if (config_.keepalive_interval == 0)
        breach(cat("section 5 step 2: ", format(f), " is a keepalive check but keepalive_interval is 0 (disabled)"));
    else if (keepalive_checks_in_flight() >= config_.max_concurrent_checks)
        breach(cat("section 5 step 2: ", format(f), ": ", keepalive_checks_in_flight(),
                   " keepalive check(s) already in flight (max_concurrent_checks ", config_.max_concurrent_checks,
                   ")"));
    else if (first != f.slot)
        breach(cat("section 5: ", format(f), ": keepalive checks the least recently verified idle slot, slot ", *first,
                   " (verified at ", slots_[*first].verified, ", this one at ", s.verified, ")"));
    else if (!due_after(s.verified, config_.keepalive_interval, now_))
        breach(cat("section 5 step 2: ", format(f), " at now ", now_, ": verified at ", s.verified,
                   ", less than keepalive_interval ", config_.keepalive_interval, " ago"));
    else if (step_.phase < stage_event) {  // in step 3 (a keepalive check ended), the Checked rule decides
        if (const std::optional<std::string> owed = step2_retirement_owed())
            breach(cat("section 5 step 2: ", format(f), " came before ", *owed));
    }
}

// Section 5 step 4: with a waiter queued and no fresh idle slot, while the queued
// waiters outnumber the checks and spawns in flight, the most recently verified idle
// slot is checked.
void invariant_checker::check_on_checkout(const effect& f) {
    const std::uint64_t w = eligible_waiters();  // decision 15
    const std::uint64_t c = count(slot_state::checking);
    const std::uint64_t p = count(slot_state::spawning);
    std::optional<std::uint32_t> newest;
    std::optional<std::uint32_t> fresh;
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].state != slot_state::idle) continue;
        if (!newest || slots_[i].verify_seq > slots_[*newest].verify_seq) newest = i;
        if (is_fresh(slots_[i])) fresh = i;
    }
    if (config_.check_after_idle == 0)
        breach(cat("section 5 step 4: ", format(f), " is a check on checkout but check_after_idle is 0 (disabled)"));
    else if (w == 0)
        breach(cat("section 5 step 4: ", format(f), " is a check on checkout but no eligible waiter is queued"));
    else if (fresh)
        breach(cat("section 5 step 4: ", format(f), " while slot ", *fresh, " is idle and fresh (it must be granted)"));
    else if (w <= c + p)
        breach(cat("section 5 step 4: ", format(f), ": ", w, " queued eligible waiter(s) are covered by ", c,
                   " check(s) and ", p, " spawn(s) in flight (W - C - P > 0 is needed)"));
    else if (newest != f.slot)
        breach(cat("section 5: ", format(f), ": a check on checkout takes the most recently verified idle slot, slot ",
                   *newest));
}

// Section 5, "Release": a clean release with reset_on_release, none of the retire reasons
// holding, is reset.
void invariant_checker::on_reset(const effect& f) {
    ++expected_counters_.resets_started;  // decision 11.11
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    if (step_.reset_slot != f.slot || step_.reset_done) {
        breach(cat("section 5: ", format(f), " is owed by nothing: the slot is ", to_string(slots_[f.slot].state),
                   ", the event is ", format_line(*step_.e)));
    }
    step_.reset_done = true;
    slots_[f.slot].state = slot_state::resetting;
    slots_[f.slot].lease = 0;
}

void invariant_checker::on_leak(const effect& f) {
    ++expected_counters_.leaks_suspected;
    if (f.slot >= slots_.size()) {
        breach(cat("section 4: ", format(f), " names slot ", f.slot, " but slot_capacity is ", slots_.size()));
        return;
    }
    slot_info& s = slots_[f.slot];
    // Step 2: leases held >= leak_threshold are reported once each, by slot index.
    if (s.state != slot_state::leased || s.lease == 0 || s.lease != f.lease) {
        breach(cat("section 4: ", format(f), " names no live lease: slot ", f.slot, " is ", to_string(s.state),
                   s.state == slot_state::leased && s.lease ? cat(" under lease ", s.lease) : std::string()));
    } else if (config_.leak_threshold == 0) {
        breach(cat("section 5 step 2: ", format(f), " but leak_threshold is 0 (disabled)"));
    } else if (!due_after(s.granted_at, config_.leak_threshold, now_)) {
        breach(cat("section 5 step 2: ", format(f), " at now ", now_, ": granted at ", s.granted_at,
                   ", held less than leak_threshold ", config_.leak_threshold));
    } else if (s.leak_reported) {
        breach(cat("section 5 step 2: ", format(f), ": a lease is reported once"));
    } else {
        for (std::uint32_t i = 0; i < f.slot; ++i) {
            const slot_info& o = slots_[i];
            if (o.state == slot_state::leased && o.lease != 0 && !o.leak_reported &&
                due_after(o.granted_at, config_.leak_threshold, now_)) {
                breach(cat("section 5 step 2: ", format(f), " came before lease ", o.lease, " of lower slot ", i,
                           " (leaks are reported by slot index)"));
                break;
            }
        }
    }
    s.leak_reported = true;
}

// Invariant 9: closed exactly once, after shutdown, when every slot is empty and nobody waits.
void invariant_checker::on_closed() {
    if (!shutting_down_) {
        breach("invariant 9: closed emitted without a shutdown");
    } else if (closed_emitted_) {
        breach("invariant 9: closed emitted a second time");
    } else {
        for (std::uint32_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].state != slot_state::empty) {
                breach(cat("invariant 9: closed emitted while slot ", i, " is ", to_string(slots_[i].state)));
                break;
            }
        if (!by_arrival_.empty())
            breach(cat("invariant 9: closed emitted while waiter ", by_arrival_.begin()->second, " is queued"));
    }
    closed_emitted_ = true;
}

// Step 5 begins: how many spawns the planning starts, from the state after step 4.
void invariant_checker::plan_spawns() {
    if (shutting_down_) {
        step_.spawns_expected = 0, step_.spawn_plan = "shutting down";
        return;
    }
    if (!reached(backoff_end_, now_)) {
        step_.spawns_expected = 0, step_.spawn_plan = cat("inside the backoff until ", time_text(backoff_end_));
        return;
    }
    // min(max(W - P - C, min_slots - live), max_slots - (live + retiring),
    //     min(max_concurrent_spawns, max_slots) - P), none below 1; W the eligible waiters
    // (decision 15), the sizes those in force (decision 16).
    const auto w = static_cast<std::int64_t>(eligible_waiters());
    const auto p = static_cast<std::int64_t>(count(slot_state::spawning));
    const auto c = static_cast<std::int64_t>(count(slot_state::checking));
    const auto live = static_cast<std::int64_t>(live_slots());
    const auto retiring = static_cast<std::int64_t>(count(slot_state::retiring));
    const auto room = static_cast<std::int64_t>(max_slots_) - (live + retiring);
    const auto min_slots = static_cast<std::int64_t>(min_slots_);
    const auto concurrent = static_cast<std::int64_t>(std::min<std::uint64_t>(*config_.max_concurrent_spawns, max_slots_));
    step_.spawns_expected =
        std::max<std::int64_t>(0, std::min({std::max(w - p - c, min_slots - live), room, concurrent - p}));
    step_.spawn_plan = cat("W=", w, " eligible queued, P=", p, " spawning, C=", c, " checking, ", live, " live, ",
                           retiring, " retiring, max_slots ", max_slots_, ", min_slots ", min_slots,
                           ", max_concurrent_spawns ", *config_.max_concurrent_spawns);
}

void invariant_checker::end_spawns() {
    if (step_.spawns_seen < step_.spawns_expected)
        breach(cat("section 5 step 5: spawn planning (", step_.spawn_plan, ") starts ", step_.spawns_expected,
                   " spawn(s), got ", step_.spawns_seen));
}

// ---------------------------------------------------------------------------------
// Invariant checks.

// Invariants 1 and 8: an effect names a live waiter, and a waiter gets exactly one
// terminal effect: nothing after it (so cancelled, deregistered, timed-out, closed and
// saturated waiters are never granted).
bool invariant_checker::check_waiter_live(const effect& f) {
    if (find_live(f.waiter)) return true;
    const auto c = completed_.find(f.waiter);
    if (c == completed_.end()) {
        breach(cat("invariant 1: ", format(f), " names waiter ", f.waiter, ", which is not live (never admitted)"));
    } else {
        const terminal& t = c->second;
        const std::string was = t.granted ? std::string("granted") : cat("rejected ", to_string(t.reason));
        breach(cat(f.kind == effect_kind::grant && !t.granted ? "invariant 8: " : "invariant 1: ", format(f),
                   ": waiter ", f.waiter, " was already ", was, " (step ", t.step,
                   "); an acquire gets exactly one terminal effect"));
    }
    return false;
}

// Invariant 2: a grant names an idle slot, so a slot never has two live leases.
// Invariant 7: a slot released dirty or retired is granted only after a new spawn ... spawned.
void invariant_checker::check_slot_grantable(const effect& f) {
    const slot_info& s = slots_[f.slot];
    if (s.state == slot_state::leased && s.lease != 0) {
        breach(cat("invariant 2: ", format(f), ": slot ", f.slot, " already has live lease ", s.lease, " (waiter ",
                   s.lease_waiter, ")"));
    } else if (!s.fresh) {
        breach(cat("invariant 7: ", format(f), ": slot ", f.slot, " (", to_string(s.state),
                   ") has not been through spawn ... spawned since it was last retired or released dirty"));
    } else if (s.state == slot_state::checking || s.state == slot_state::resetting) {
        breach(cat("invariant 12: ", format(f), ": slot ", f.slot, " is ", to_string(s.state)));
    } else if (s.state != slot_state::idle) {
        breach(cat("invariant 2: ", format(f), ": slot ", f.slot, " is ", to_string(s.state), ", not idle"));
    } else if (!is_fresh(s)) {
        breach(cat("invariant 12: ", format(f), " at now ", now_, ": slot ", f.slot, " is stale (verified at ",
                   s.verified, ", check_after_idle ", config_.check_after_idle, "): it must be checked first"));
    } else {
        check_idle_order(f.slot);
    }
}

// Section 5, "Idle order": among the fresh idle slots, lifo takes the one verified last,
// fifo the one verified first.
void invariant_checker::check_idle_order(std::uint32_t slot) {
    const bool lifo = config_.idle_order == core::idle_order::lifo;
    std::optional<std::uint32_t> best;
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].state != slot_state::idle || !is_fresh(slots_[i])) continue;
        if (!best ||
            (lifo ? slots_[i].verify_seq > slots_[*best].verify_seq : slots_[i].verify_seq < slots_[*best].verify_seq))
            best = i;
    }
    if (best && *best != slot)
        breach(cat("section 5: idle_order ", to_string(config_.idle_order), ": a grant took slot ", slot,
                   " but fresh slot ", *best, " became idle (was verified) ", lifo ? "later" : "earlier"));
}

// Invariant 4. Inside a handle: a grant from the queue goes to the handle's oldest
// queued waiter (both policies take a handle's oldest waiter; this implies that a
// handle's granted waiters are granted in arrival order). With policy fifo: it goes to
// the oldest queued waiter of all.
void invariant_checker::check_fifo(const waiter_info& w) {
    const std::uint64_t oldest_of_handle = handles_.at(w.handle).waiters.begin()->second;
    if (oldest_of_handle != w.id)
        breach(cat("invariant 4: waiter ", w.id, " of handle ", w.handle, " granted before older waiter ",
                   oldest_of_handle, " of the same handle"));
    const std::optional<std::uint64_t> first = oldest_eligible_waiter();
    if (config_.policy == core::fairness_policy::fifo && first) {  // none: the grant was to a handle at its cap
        const waiter_info& oldest = queued_.at(*first);
        if (oldest.id != w.id)
            breach(cat("invariant 4: policy fifo: waiter ", w.id, " (handle ", w.handle,
                       ") granted before older eligible waiter ", oldest.id, " (handle ", oldest.handle, ")"));
    }
}

// Invariant 5, round robin.
//
// The contract leaves open *when* a handle that finishes its turn moves to the back:
// at once ("eager") or at the next grant ("lazy"). It matters only for a handle that
// joins in between: eager puts it behind the finished handle, lazy ahead of it. Both
// are accepted. What is checked runs over the sequence of *queue grants* (grants to
// waiters that were queued; an immediate grant happens only when nobody is queued,
// i.e. with an empty rotation, and is ignored here).
//   - A handle's *activation* lasts while it has queued waiters; its weight is that of
//     the acquire that began it (decision 11.3: weight and turn are forgotten when it
//     has none left).
//   - A *run* of handle h is a maximal stretch of consecutive queue grants to h within
//     one activation. A run begins with a fresh turn (h just reached the front) and is
//     cut only when another handle is granted.
//   - h *entered the back* of the rotation when it became active (a point), or, after
//     a run that was cut while it stayed active, somewhere between its last grant
//     (eager) and the grant that cut the run (lazy): the interval [entry_lo, entry_hi].
// Rules:
//   5a (turn size) When h is granted, for every other active handle g: the grants to h
//      in its current run made after g became active number at most weight(h). (g is
//      behind h: h may finish the turn in progress, or take one fresh turn if it was
//      alone at the front when g joined, then g's turn comes before h's next.)
//   5b (everyone in between) When h begins a run that is not its first in this
//      activation, every other active handle g that was already active at h's previous
//      grant has been granted since that grant.
//   5c (the front is never skipped mid-turn) When a queue grant goes to another handle
//      than p, the handle of the previous queue grant, while p is still in the same
//      activation, p's run is a whole number of turns: a multiple of weight(p).
//   5d (the front is never skipped between turns) When h begins a run, no other active
//      handle g entered the back surely before h did (g's entry_hi <= h's entry_lo): g
//      would be ahead of h in the rotation, and has not been granted since.
void invariant_checker::check_round_robin(const waiter_info& w) {
    const std::uint64_t h = w.handle;
    handle_info& hi = handles_.at(h);
    const std::uint64_t index = rr_grants_ + 1;  // this grant's index among queue grants
    const std::uint64_t stamp = ++rr_clock_;

    // 5c, and where the cut handle entered the back.
    if (rr_last_handle_ && *rr_last_handle_ != h && rr_grants_ > 0) {
        const auto p = handles_.find(*rr_last_handle_);
        // A handle at its cap has left the rotation (decision 15): its run may end anywhere.
        if (p != handles_.end() && p->second.last_grant == rr_grants_ && !at_cap(p->first)) {
            handle_info& pi = p->second;
            const std::uint64_t run = rr_grants_ - pi.run_start + 1;
            if (run % pi.weight != 0)
                breach(cat("invariant 5: handle ", p->first, " lost the front after ", run % pi.weight,
                           " grant(s) of its turn of ", pi.weight, " while it still had ", pi.waiters.size(),
                           " queued waiter(s): waiter ", w.id, " of handle ", h, " was granted instead"));
            pi.entry_lo = pi.last_grant_stamp, pi.entry_hi = stamp;
        }
    }

    const bool new_run = hi.last_grant == 0 || hi.last_grant != rr_grants_;
    if (new_run) {
        // 5b
        if (hi.last_grant != 0)
            for (const auto& [g, gi] : handles_)
                if (g != h && !at_cap(g) && gi.activated_at < hi.last_grant && gi.last_grant < hi.last_grant) {
                    breach(cat("invariant 5: handle ", h, " got a new turn (waiter ", w.id, ") while handle ", g,
                               ", waiting since before its previous turn ended, has not had its turn"));
                    break;
                }
        // 5d
        for (const auto& [g, gi] : handles_)
            if (g != h && !at_cap(g) && gi.entry_hi <= hi.entry_lo) {
                breach(cat("invariant 5: handle ", h, " began a turn (waiter ", w.id, ") while handle ", g,
                           " was ahead of it in the rotation (", gi.last_grant ? "moved to the back" : "joined",
                           " earlier) and still waiting for its turn"));
                break;
            }
        hi.run_start = index;
    }

    // 5a
    for (const auto& [g, gi] : handles_) {
        if (g == h || at_cap(g)) continue;
        const std::uint64_t from = std::max(hi.run_start, gi.activated_at + 1);
        const std::uint64_t grants = index - from + 1;
        if (grants > hi.weight) {
            breach(cat("invariant 5: handle ", h, " granted ", grants, " times in a row (waiter ", w.id, ", weight ",
                       hi.weight, ") while handle ", g, " waited for its turn"));
            break;
        }
    }

    hi.last_grant = index, hi.last_grant_stamp = stamp;
    rr_grants_ = index;
    rr_last_handle_ = h;
}

// Invariant 6: after every step, no fresh idle slot while a waiter is queued, and a stale
// one only while checking + spawning >= queued waiters.
void invariant_checker::check_no_idle_while_queued() {
    const std::uint64_t eligible = eligible_waiters();  // decision 15: waiters behind a cap do not count
    if (eligible == 0) return;
    const std::uint64_t covered = count(slot_state::checking) + count(slot_state::spawning);
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].state != slot_state::idle) continue;
        if (is_fresh(slots_[i])) {
            breach(cat("invariant 6: slot ", i, " idle and fresh while ", eligible, " eligible waiter(s) queued"));
            return;
        }
        if (covered < eligible) {
            breach(cat("invariant 6: slot ", i, " idle (stale) while ", eligible, " eligible waiter(s) queued and only ",
                       covered, " checking + spawning"));
            return;
        }
    }
}

// Decision 16: after every step, no slot idle while more slots are live than max_slots
// (a resize retires the idle surplus at once; any other return retires resize).
void invariant_checker::check_no_idle_surplus() {
    if (!surplus()) return;
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].state == slot_state::idle) {
            breach(cat("decision 16: slot ", i, " idle with ", live_slots(), " slot(s) live above max_slots ",
                       max_slots_, " (expected ", format(effect::retire(i, retire_reason::resize)), ")"));
            return;
        }
}

// Section 5 step 2 did all its work: after the step nothing it covers is left.
// (Step 3 and step 5 cannot bring any of it back: an idle slot made in this step has
// idle time now, is verified now and is younger than its lifetime (a lifetime drawn as 0
// retires at `spawned`), except after a `checked alive`, which keeps the idle time but
// applies step 2's idle_timeout rule itself, or hands the slot to a queued waiter in step
// 4; and step 5 raises the live count only up to min_slots or while waiters are not
// covered, i.e. while no slot is idle.)
void invariant_checker::check_time_driven_work_done() {
    if (!by_deadline_.empty()) {
        const auto& [deadline, arrival, id] = *by_deadline_.begin();
        if (expired(deadline, now_))
            breach(cat("section 5 step 2: waiter ", id, " still queued at now ", now_, " past its deadline ",
                       time_text(deadline), " (it must be rejected timeout)"));
    }
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        const slot_info& s = slots_[i];
        if (config_.leak_threshold > 0 && s.state == slot_state::leased && s.lease != 0 && !s.leak_reported &&
            due_after(s.granted_at, config_.leak_threshold, now_))
            breach(cat("section 5 step 2: lease ", s.lease, " on slot ", i, " held since ", s.granted_at,
                       " (leak_threshold ", config_.leak_threshold, ") was not reported leak_suspected"));
        if (s.state == slot_state::idle && past_lifetime(s))
            breach(cat("section 5 step 2: slot ", i, " idle, past its lifetime (it ended at ", time_text(s.expires_at), ")",
                       " but not retired"));
    }
    if (idle_timeout_due(min_slots_)) {
        const std::uint32_t oldest = *oldest_idle();
        breach(cat("section 5 step 2: slot ", oldest, " idle since ", slots_[oldest].idle_since, " (idle_timeout ",
                   config_.idle_timeout, ") not retired although ", live_slots(), " slot(s) are live (min_slots ",
                   min_slots_, ")"));
    }
    if (keepalive_owed()) {
        const std::uint32_t first = *least_recently_verified_idle();
        breach(cat("section 5 step 2: slot ", first, " idle, verified at ", slots_[first].verified,
                   " (keepalive_interval ", config_.keepalive_interval, "), not checked although ",
                   keepalive_checks_in_flight(), " keepalive check(s) are in flight (max_concurrent_checks ",
                   config_.max_concurrent_checks, ")"));
    }
}

// Section 5 step 6 and invariant 9: shutting down, every slot empty, nobody waiting -> closed.
void invariant_checker::check_closed_owed() {
    if (shutting_down_ && !closed_emitted_ && by_arrival_.empty() && count(slot_state::empty) == slots_.size())
        breach("invariant 9: shutting down, every slot empty and nobody queued, but closed was not emitted");
}

// Invariant 3: the gauges agree with the bookkeeping and stay within the limits.
void invariant_checker::check_counts(const core::stats& after) {
    std::uint64_t total = 0;
    for (const std::uint64_t n : after.slots) total += n;
    if (total != slots_.size())
        breach(cat("invariant 3: stats.slots (empty+spawning+idle+leased+retiring+checking+resetting) sum to ", total,
                   ", slot_capacity is ", slots_.size()));
    for (int i = 0; i < core::slot_state_count; ++i) {
        const auto st = static_cast<slot_state>(i);
        if (after.slots[i] != count(st)) {
            std::string which;
            for (std::uint32_t j = 0; j < slots_.size() && which.size() < 60; ++j)
                if (slots_[j].state == st) which += cat(which.empty() ? " (" : ", ", j);
            if (!which.empty()) which += ")";
            breach(cat("invariant 3: stats.slots[", to_string(st), "] is ", after.slots[i], " but ", count(st),
                       " slot(s) are ", to_string(st), which));
        }
    }
    if (after.queued_waiters > config_.max_waiters)
        breach(cat("invariant 3: stats.queued_waiters is ", after.queued_waiters, ", above max_waiters ",
                   config_.max_waiters));
    if (after.queued_waiters != queued_.size())
        breach(cat("invariant 3: stats.queued_waiters is ", after.queued_waiters, " but ", queued_.size(),
                   " waiter(s) are queued"));
    std::uint64_t behind_cap = 0;
    std::uint64_t at_cap_now = 0;
    for (const auto& [id, k] : known_) at_cap_now += at_cap(id) ? 1 : 0;
    for (const auto& [id, h] : handles_) behind_cap += at_cap(id) ? h.waiters.size() : 0;
    if (after.waiters_behind_cap != behind_cap)
        breach(cat("invariant 3: stats.waiters_behind_cap is ", after.waiters_behind_cap, " but ", behind_cap,
                   " queued waiter(s) are of handles at their cap"));
    if (after.handles_at_cap != at_cap_now)
        breach(cat("invariant 3: stats.handles_at_cap is ", after.handles_at_cap, " but ", at_cap_now,
                   " handle(s) hold their cap of leases"));
    if (after.active_handles != handles_.size())
        breach(cat("invariant 3: stats.active_handles is ", after.active_handles, " but ", handles_.size(),
                   " handle(s) have queued waiters"));
    std::uint64_t weight = 0;
    for (const auto& [id, h] : handles_) weight += h.weight;
    if (after.active_weight != weight)
        breach(cat("invariant 3: stats.active_weight is ", after.active_weight, " but the ", handles_.size(),
                   " active handle(s) weigh ", weight));
}

// Section 9 and decision 11.2: the counters moved by exactly what the step emitted.
void invariant_checker::check_counters(const core::stats& after) {
    if (auto d = stats_difference(expected_counters_, after, false)) breach(cat("section 9: ", *d));
}

// ---------------------------------------------------------------------------------
// Bookkeeping.

void invariant_checker::queue_own_waiter() {
    const event& e = *step_.e;
    const waiter_info w = step_.own;
    step_.own_open = false;
    queued_[w.id] = w;
    by_arrival_[w.arrival] = w.id;
    by_deadline_.emplace(w.deadline, w.arrival, w.id);
    auto [it, joined] = handles_.try_emplace(w.handle);
    handle_info& h = it->second;
    if (joined) {
        // The acquire that makes the handle active sets its weight (section 3).
        h.weight = e.weight.value_or(1);
        h.activated_at = rr_grants_;
        h.entry_lo = h.entry_hi = ++rr_clock_;  // joins at the back
    }
    h.waiters.emplace(w.arrival, w.id);
    // Invariant 3: queued <= max_waiters, per handle <= max_waiters_per_handle.
    if (h.waiters.size() > *config_.max_waiters_per_handle)
        breach(cat("invariant 3: handle ", w.handle, " has ", h.waiters.size(),
                   " queued waiters, above max_waiters_per_handle ", *config_.max_waiters_per_handle));
    if (queued_.size() > config_.max_waiters)
        breach(cat("invariant 3: ", queued_.size(), " queued waiters, above max_waiters ", config_.max_waiters));
}

void invariant_checker::remove_queued(std::uint64_t waiter) {
    const auto it = queued_.find(waiter);
    if (it == queued_.end()) return;
    const waiter_info& w = it->second;
    by_arrival_.erase(w.arrival);
    by_deadline_.erase({w.deadline, w.arrival, w.id});
    const auto h = handles_.find(w.handle);
    h->second.waiters.erase(w.arrival);
    if (h->second.waiters.empty()) {
        handles_.erase(h);  // decision 11.3: weight and turn forgotten
        // Decision 15: with no lease out either, the handle is forgotten with its cap at
        // once (an acquire later in this step makes it known afresh).
        if (const auto k = known_.find(w.handle); k != known_.end() && k->second.leases == 0) known_.erase(k);
    }
    queued_.erase(it);
}

// Idle after a spawned, a clean release kept or a reset_done ok: idle time and
// verification now.
void invariant_checker::make_idle(std::uint32_t slot) {
    slot_info& s = slots_[slot];
    s.state = slot_state::idle;
    s.lease = 0;
    s.idle_seq = ++idle_seq_;
    s.idle_since = now_;
    s.verify_seq = ++verify_seq_;
    s.verified = now_;
}

// Idle after a checked alive: verified now, the idle time kept (decision 5).
void invariant_checker::make_idle_after_check(std::uint32_t slot) {
    slot_info& s = slots_[slot];
    s.state = slot_state::idle;
    s.verify_seq = ++verify_seq_;
    s.verified = now_;
}

// A clean release or a reset_done ok (section 5, "Release", "Reset done"): the first of
// shutdown, max_uses, max_lifetime that holds retires; else a reset if allowed; else idle.
void invariant_checker::judge_clean_return(std::uint32_t slot, bool reset_allowed, const char* what) {
    const slot_info& s = slots_[slot];
    std::optional<retire_reason> why;
    std::string detail;
    if (shutting_down_) {
        why = retire_reason::shutdown, detail = cat(what, " while shutting down");
    } else if (surplus()) {
        why = retire_reason::resize;
        detail = cat(what, " with ", live_slots(), " slot(s) live above max_slots ", max_slots_, " (decision 16)");
    } else if (config_.max_uses > 0 && s.uses >= config_.max_uses) {
        why = retire_reason::max_uses;
        detail = cat(what, " after ", s.uses, " grant(s) (max_uses ", config_.max_uses, ")");
    } else if (past_lifetime(s)) {
        why = retire_reason::max_lifetime;
        detail = cat(what, " at ", now_, " (its lifetime ended at ", time_text(s.expires_at), ", max_lifetime ",
                     config_.max_lifetime, ")");
    }
    if (why)
        step_.retire_slot = slot, step_.retire_reason = *why, step_.retire_why = detail;
    else if (reset_allowed)
        step_.reset_slot = slot;
    else
        make_idle(slot);
}

// Decision 13: lifetime = max_lifetime - ((x (J + 1)) >> 64), x the next splitmix64 draw.
void invariant_checker::draw_lifetime(slot_info& s) {
    nanos lifetime = config_.max_lifetime;
    if (config_.max_lifetime_jitter > 0)
        lifetime -= jitter_of(detail::splitmix64(jitter_state_), config_.max_lifetime_jitter);
    s.expires_at = config_.max_lifetime > 0 ? saturating_add(now_, lifetime) : never;
}

// Section 1: stale when verified + check_after_idle <= now (with check_after_idle > 0).
bool invariant_checker::is_fresh(const slot_info& s) const {
    return config_.check_after_idle == 0 || !due_after(s.verified, config_.check_after_idle, now_);
}

bool invariant_checker::past_lifetime(const slot_info& s) const {
    return config_.max_lifetime > 0 && reached(s.expires_at, now_);
}

// Decision 5: the idle slot with the oldest idle time, ties: whose idle time was set first.
std::optional<std::uint32_t> invariant_checker::oldest_idle() const {
    std::optional<std::uint32_t> oldest;
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        const slot_info& s = slots_[i];
        if (s.state != slot_state::idle) continue;
        const slot_info& o = oldest ? slots_[*oldest] : s;
        if (!oldest || std::pair(s.idle_since, s.idle_seq) < std::pair(o.idle_since, o.idle_seq)) oldest = i;
    }
    return oldest;
}

std::optional<std::uint32_t> invariant_checker::least_recently_verified_idle() const {
    std::optional<std::uint32_t> first;
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].state == slot_state::idle && (!first || slots_[i].verify_seq < slots_[*first].verify_seq))
            first = i;
    return first;
}

std::uint64_t invariant_checker::keepalive_checks_in_flight() const {
    return static_cast<std::uint64_t>(std::count_if(slots_.begin(), slots_.end(), [](const slot_info& s) {
        return s.state == slot_state::checking && s.keepalive;
    }));
}

// Section 5 step 2: a keepalive check is owed now.
bool invariant_checker::keepalive_owed() const {
    if (config_.keepalive_interval == 0 || keepalive_checks_in_flight() >= config_.max_concurrent_checks) return false;
    const std::optional<std::uint32_t> first = least_recently_verified_idle();
    return first && due_after(slots_[*first].verified, config_.keepalive_interval, now_);
}

// Step 2's retirements come before its keepalive checks: one still owed, described.
std::optional<std::string> invariant_checker::step2_retirement_owed() const {
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].state == slot_state::idle && past_lifetime(slots_[i]))
            return cat("the retirement of idle slot ", i, " past its lifetime");
    const std::optional<std::uint32_t> oldest = oldest_idle();
    if (idle_timeout_due(min_slots_))
        return cat("the idle retirement of slot ", *oldest, " (idle since ", slots_[*oldest].idle_since, ")");
    return std::nullopt;
}

std::uint64_t invariant_checker::count(slot_state st) const {
    return static_cast<std::uint64_t>(
        std::count_if(slots_.begin(), slots_.end(), [st](const slot_info& s) { return s.state == st; }));
}

// Section 1: live = spawning + idle + leased + checking + resetting.
std::uint64_t invariant_checker::live_slots() const {
    return count(slot_state::spawning) + count(slot_state::idle) + count(slot_state::leased) +
           count(slot_state::checking) + count(slot_state::resetting);
}

// Step 2's idle_timeout rule with the given min_slots: the oldest idle slot is due.
bool invariant_checker::idle_timeout_due(std::uint64_t min_slots) const {
    const std::optional<std::uint32_t> oldest = oldest_idle();
    return oldest && config_.idle_timeout > 0 && live_slots() > min_slots &&
           due_after(slots_[*oldest].idle_since, config_.idle_timeout, now_);
}

// Decision 15: a known handle whose leases out reached its cap (0: no cap).
bool invariant_checker::at_cap(std::uint64_t handle) const {
    const auto k = known_.find(handle);
    return k != known_.end() && k->second.cap > 0 && k->second.leases >= k->second.cap;
}

std::uint64_t invariant_checker::eligible_waiters() const {
    std::uint64_t n = 0;
    for (const auto& [id, h] : handles_)
        if (!at_cap(id)) n += h.waiters.size();
    return n;
}

// The earliest queued waiter of an eligible handle (fifo's next, decision 15).
std::optional<std::uint64_t> invariant_checker::oldest_eligible_waiter() const {
    std::optional<std::pair<std::uint64_t, std::uint64_t>> best;  // (arrival, id)
    for (const auto& [id, h] : handles_)
        if (!at_cap(id) && (!best || h.waiters.begin()->first < best->first)) best = *h.waiters.begin();
    if (!best) return std::nullopt;
    return best->second;
}

// A release: the lease is back to its handle (decision 15); one at its cap rejoins.
void invariant_checker::lease_back(std::uint32_t slot) {
    const std::uint64_t handle = slots_[slot].holder;
    const auto k = known_.find(handle);
    if (k == known_.end() || k->second.leases == 0) {
        breach(cat("decision 15: the lease on slot ", slot, " was granted to handle ", handle,
                   ", which holds no lease"));
        return;
    }
    const bool was_at_cap = at_cap(handle);
    --k->second.leases;
    if (!handles_.contains(handle)) {
        if (k->second.leases == 0) known_.erase(k);  // forgotten with its cap
    } else if (was_at_cap) {
        rejoin(handle);
    }
}

// Round robin: a handle that leaves its cap rejoins at the back with a fresh turn, as
// if it became active now (check_round_robin's bookkeeping).
void invariant_checker::rejoin(std::uint64_t handle) {
    handle_info& h = handles_.at(handle);
    h.activated_at = rr_grants_;
    h.last_grant = 0, h.run_start = 0, h.last_grant_stamp = 0;
    h.entry_lo = h.entry_hi = ++rr_clock_;
}

// Decision 15: a handle with no waiter and no lease is forgotten, with its cap.
void invariant_checker::forget_unknown_handles() {
    std::erase_if(known_, [&](const auto& k) { return k.second.leases == 0 && !handles_.contains(k.first); });
}

const invariant_checker::waiter_info* invariant_checker::find_live(std::uint64_t waiter) const {
    if (step_.own_open && step_.phase >= stage_event && waiter == step_.own.id) return &step_.own;
    const auto it = queued_.find(waiter);
    return it == queued_.end() ? nullptr : &it->second;
}

}  // namespace fairpool::model
