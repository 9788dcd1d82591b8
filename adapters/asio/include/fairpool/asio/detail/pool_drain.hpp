#pragma once
// What the pool's actor does with the commands a drain takes (pool_state.hpp holds the
// state and the commands; actor.hpp the protocol that runs a drain):
//
//   serve   a drain takes the pending kinds' commands, at most its budget
//   feed    one core step; record it (a copy into the flight recorder's ring, if on);
//           publish the counters before a completion is posted; perform the effects:
//           completions posted to the handlers' executors, the resource hooks
//           (resources.hpp) and on_leak_suspected posted to the pool's executor. A
//           drain runs no user code at all.
//   after   publish the counters, arm the deadline timer (deadline_timer.hpp), report
//           a close (closing.hpp)
//
// Every function here runs only inside a drain, holding the actor. (Member functions
// of pool_state, defined out of its class; `inline` as they were inside it, but for the
// four declared [[gnu::noinline]].)
#include "fairpool/asio/detail/pool_state.hpp"

namespace fairpool::detail {

// Serves the kinds taken, in this order, with at most `budget` commands (decremented);
// returns the kinds left to serve (0 when all were).
template <class Resource, class Clock, class WaitTraits>
std::uint32_t pool_state<Resource, Clock, WaitTraits>::serve(std::uint32_t kinds, std::uint32_t& budget) {
    namespace kind = command_kind;
    if ((kinds & kind::start) != 0) feed(core::event::start(drain_now_));
    if ((kinds & kind::tick) != 0) on_timer_expired();
    std::uint32_t left = 0;
    if ((kinds & kind::slot_event) != 0) {
        slot_command c;
        while (budget > 0 && mailbox_.slot_events.pop(c)) --budget, feed_slot(c);
        if (budget == 0) left |= kind::slot_event;
    }
    if ((kinds & kind::acquire) != 0) {
        acquire_command c;
        while (budget > 0 && mailbox_.acquires.pop(c)) --budget, take_acquire(c);
        if (budget == 0) left |= kind::acquire;
    }
    // A cancel or deregistration is sent after the acquires it concerns were pushed:
    // take those first (all of them, past the budget: at most the queue's
    // capacity), or the scheduler would not know the waiter yet. Every drain that
    // takes their kind serves them all, past the budget too: the queues' bound
    // (mailbox.hpp: 2(L + 1)) holds only if no cancel or deregistration outlives
    // the drain after it (acquires completed meanwhile may send new ones).
    if ((kinds & kind::cancel) != 0) {
        std::uint64_t waiter = 0;
        while (mailbox_.cancels.pop(waiter))
            spend(budget), take_all_acquires(), feed(core::event::cancel(drain_now_, waiter)), admission_.cancel_served();
    }
    if ((kinds & kind::deregister) != 0) {
        std::uint64_t handle = 0;
        while (mailbox_.deregisters.pop(handle))
            spend(budget), take_all_acquires(), feed(core::event::deregister(drain_now_, handle)),
                admission_.deregistration_served();
    }
    // A resize or a shutdown comes after the slot events and acquires pushed before
    // it: if the budget left some, they are taken first, all of them (at most their
    // queues' capacities; deferring the resize or the shutdown instead would let
    // commands that keep coming put it off).
    if (left != 0 && ((kinds & kind::resize) != 0 || ((kinds & kind::shutdown) != 0 && !shutdown_fed_)))
        take_all_slot_events(), take_all_acquires(), left = 0;
    // A resize accepted before the shutdown whose announcement is still to come is taken
    // by the drain that feeds the shutdown, ahead of it (mailbox.hpp: resize_request).
    const bool shutdown_now = (kinds & kind::shutdown) != 0 && !shutdown_fed_;
    std::uint64_t max_slots = 0;
    std::uint64_t min_slots = 0;
    if (((kinds & kind::resize) != 0 || shutdown_now) && mailbox_.resize.take(max_slots, min_slots))
        feed(core::event::resize(drain_now_, max_slots, min_slots));
    if (shutdown_now) {
        shutdown_fed_ = true;
        feed(core::event::shutdown(drain_now_));
    }
    return left;
}

template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::spend(std::uint32_t& budget) noexcept {
    if (budget > 0) --budget;
}

template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::take_all_slot_events() {
    mailbox_.slot_events.consume_all([this](const slot_command& c) { feed_slot(c); });
}

template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::take_all_acquires() {
    mailbox_.acquires.consume_all([this](const acquire_command& c) { take_acquire(c); });
}

// The acquire's operation waits beside the table while its own step runs: a step
// that completes it at once (an immediate grant, a rejection) takes it from there,
// and only a queued waiter's goes into the table. Returns the waiter's id if the
// scheduler queued it, else 0. `refs`: for one fed directly (it holds no reference
// yet), the caller's, which it takes copies of only if it is queued.
template <class Resource, class Clock, class WaitTraits>
inline std::uint64_t pool_state<Resource, Clock, WaitTraits>::take_acquire(const acquire_command& c, caller_refs refs) {
    FAIRPOOL_DEBUG_ASSERT((refs.self != nullptr) == !c.operation->holds_pool());
    // Fed directly and not counted yet: admitted here, where no other acquire can be
    // counted meanwhile (the actor counts at most one beyond the limit: mailbox.hpp).
    if (!c.operation->counted() && admission_.full()) {
        refuse_busy(c.operation);
        return 0;
    }
    const std::uint64_t waiter = c.waiter != 0 ? c.waiter : (actor_waiter_ += 2);
    core::event e = core::event::acquire(drain_now_, waiter, c.handle);
    if (c.deadline != core::never) e.deadline = c.deadline;
    if (c.weight != 0) e.weight = c.weight;
    if (c.capped) e.set_max_leases(c.max_leases);
    if (handle_block* b = c.operation->block()) b->acquired();
    c.operation->arrived_at(drain_now_);
    arriving_ = {waiter, c.operation, refs.block};
    feed(e);
    if (arriving_.operation == nullptr) return 0;  // completed in its own step
    if (!arriving_.operation->counted()) count_queued(arriving_.operation, refs);
    arriving_.operation->keep_work();
    operations_.insert(arriving_.waiter, std::exchange(arriving_.operation, nullptr));
    return waiter;
}

// An acquire fed directly and queued by the scheduler now counts as outstanding (its
// handle's deregistration must reach the waiter); its delivery counts it back. It
// outlives its initiating function: it holds its handle's block from now on (the handle
// may go first). It takes no reference to this state: a queued waiter is completed only
// by a drain, which runs while its caller (or a posted drain) holds one, and gets one
// then (the slot's lease token at its grant, a new reference at its rejection: perform,
// complete_rejected); or it is destroyed unrun when the execution context shuts down,
// while the registry holds one (abandon_pending). That spares an increment and a
// decrement of the state's reference count, a line every thread writes, per queued
// acquire.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::count_queued(acquire_operation* op, caller_refs refs) noexcept {
    admission_.count(op->block());
    if (op->block()) op->hold_block(*refs.block);
    op->set_counted();
}

template <class Resource, class Clock, class WaitTraits>
inline acquire_operation* pool_state<Resource, Clock, WaitTraits>::take_operation(std::uint64_t waiter) noexcept {
    if (arriving_.operation != nullptr && arriving_.waiter == waiter)
        return std::exchange(arriving_.operation, nullptr);
    return operations_.take(waiter);
}

template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::feed_slot(const slot_command& c) {
    if (c.kind == core::event_kind::release) return feed_release(c.slot, c.lease, c.outcome);
    feed(slot_event(c));
}

// A release first counts its lease back to its handle's block, which the actor held
// for the lease (perform) and keeps for the slot's next lease.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::feed_release(std::uint32_t slot, std::uint64_t lease,
                                                                  core::release_outcome outcome) {
    keeping_.lease_returned(slot);
    feed(core::event::release(drain_now_, slot, lease, outcome));
}

// A slot event other than a release.
template <class Resource, class Clock, class WaitTraits>
inline core::event pool_state<Resource, Clock, WaitTraits>::slot_event(const slot_command& c) const noexcept {
    switch (c.kind) {
        case core::event_kind::checked:
            return core::event::checked(drain_now_, c.slot, c.passed ? core::check_outcome::alive
                                                                    : core::check_outcome::dead);
        case core::event_kind::reset_done:
            return core::event::reset_done(drain_now_, c.slot, c.passed ? core::reset_outcome::ok
                                                                       : core::reset_outcome::failed);
        default: return core::event::of_slot(c.kind, drain_now_, c.slot);
    }
}

// One core step (inside drain_or_die: what can throw here is fatal).
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::feed(const core::event& e) {
    if (recorder_) recorder_->before_step(core_);
    const core::step_result r = core_.step(e);
    if (recorder_) recorder_->after_step(e, r);
    FAIRPOOL_ASSERT(r.ok());  // the actor only sends valid events
    commands_fed_.store(commands_fed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    counters_unpublished_ = true;
    // Only an event other than an acquire or a release, or an effect other than a
    // grant, moves the rare counters (docs/CONTRACT.md section 9; stats_board).
    if (e.kind != core::event_kind::acquire && e.kind != core::event_kind::release) rare_counters_moved_ = true;
    bool completes_an_acquire = false;
    for (const core::effect& f : r.effects) {
        completes_an_acquire |= f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject;
        rare_counters_moved_ |= f.kind != core::effect_kind::grant;
    }
    // The core's transition is complete: only now does anything act on its effects.
    // A step that completes an acquire publishes the counters first, so that its
    // handler (possibly on another thread at once) never reads counters that lag
    // its own outcome.
    if (completes_an_acquire) publish_counters();
    for (const core::effect& f : r.effects) perform(f);
}

// At the end of each drain, or earlier for a step that completes an acquire; never
// twice for the same counters.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::publish_counters() noexcept {
    const core::stats& s = core_.counters();
    stats_.publish(s, std::exchange(rare_counters_moved_, false), core_.take_touched_wait_buckets());
    counters_unpublished_ = false;
    // The demand's high-water mark (pool_stats::demand_peak). In the steady state a load
    // of the peak and a compare with an upper bound of the demand, leased + spawning +
    // queued: 5 instructions (a load, three subtractions from memory, a branch), twice
    // per round trip. The waiters behind a cap, which the demand leaves out, are
    // subtracted only when that bound passes the peak (note_demand): the exact demand
    // here cost 2 to 10 instructions more per round trip (bench/round_trip_instructions.py),
    // more than the round trip's budget for this. So a pool whose waiters stay behind a
    // cap pays a call more per publish. Signed: the gauges and the peak are far below 2^63.
    using core::slot_state;
    const auto slack = static_cast<std::int64_t>(demand_peak_.load(std::memory_order_relaxed)) -
                       static_cast<std::int64_t>(s.slots[static_cast<std::size_t>(slot_state::leased)]) -
                       static_cast<std::int64_t>(s.slots[static_cast<std::size_t>(slot_state::spawning)]) -
                       static_cast<std::int64_t>(s.queued_waiters);
    if (slack < 0) [[unlikely]]
        note_demand();
}

// The bound passed the peak: the demand itself, raised into the peak if it passes it too
// (out of line, so that the check above keeps nothing in registers for it).
template <class Resource, class Clock, class WaitTraits>
void pool_state<Resource, Clock, WaitTraits>::note_demand() noexcept {
    if (const std::uint64_t demand = demand_of(core_.counters()); demand > demand_peak_.load(std::memory_order_relaxed))
        raise_demand_peak(demand);
}

// A fetch-max: the actor and a taker (take_demand_peak) may both be here.
template <class Resource, class Clock, class WaitTraits>
void pool_state<Resource, Clock, WaitTraits>::raise_demand_peak(std::uint64_t demand) noexcept {
    std::uint64_t peak = demand_peak_.load(std::memory_order_relaxed);
    while (demand > peak && !demand_peak_.compare_exchange_weak(peak, demand, std::memory_order_relaxed)) {
    }
}

// A grant counts in its handle's block, which the actor then keeps for the lease
// (slot_keeping.hpp); the operation gets the slot's lease token unless it holds a
// reference of its own.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::perform(const core::effect& f) {
    if (f.kind == core::effect_kind::grant) {
        acquire_operation* op = take_operation(f.waiter);
        if (handle_block* b = op->block()) {
            b->granted(drain_now_ - op->arrived());
            keeping_.keep_block(f.slot, *op, arriving_.block);
        }
        if (!op->holds_pool()) op->hold_pool(keeping_.take_token(f.slot, *this));
        return op->complete({}, f.slot, f.lease);
    }
    perform_other(f);
}

template <class Resource, class Clock, class WaitTraits>
void pool_state<Resource, Clock, WaitTraits>::perform_other(const core::effect& f) {
    switch (f.kind) {
        case core::effect_kind::grant: break;
        case core::effect_kind::reject: {
            acquire_operation* op = take_operation(f.waiter);
            if (handle_block* b = op->block()) b->rejected(f.rejected);
            complete_rejected(op, rejection(f.rejected));
            break;
        }
        case core::effect_kind::spawn:
            start_outside_actor(this->shared_from_this(), f.slot, &create_resource<pool_state>);
            break;
        case core::effect_kind::retire:
            start_outside_actor(this->shared_from_this(), f.slot, &destroy_resource<pool_state>);
            break;
        case core::effect_kind::check:
            start_outside_actor(this->shared_from_this(), f.slot, &check_resource<pool_state>);
            break;
        case core::effect_kind::reset:
            start_outside_actor(this->shared_from_this(), f.slot, &reset_resource<pool_state>);
            break;
        case core::effect_kind::leak_suspected:
            if (options_.on_leak_suspected)
                post_to_executor([self = this->shared_from_this(), slot = f.slot, lease = f.lease] {
                    self->options_.on_leak_suspected(slot, lease);
                });
            break;
        case core::effect_kind::closed: closed_ = true; break;
    }
}

// A rejected operation holds a reference to this state from now on, as a granted
// one holds its lease token: its delivery may come after everything else let go.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::complete_rejected(acquire_operation* op,
                                                                       const boost::system::error_code& ec) {
    if (!op->holds_pool()) op->hold_pool(this->shared_from_this());
    op->complete(ec, 0, 0);
}

template <class Resource, class Clock, class WaitTraits>
inline boost::system::error_code pool_state<Resource, Clock, WaitTraits>::rejection(core::reject_reason r) noexcept {
    switch (r) {
        case core::reject_reason::saturated: return make_error_code(error::saturated);
        case core::reject_reason::timeout: return make_error_code(error::timeout);
        case core::reject_reason::cancelled: return boost::asio::error::operation_aborted;
        case core::reject_reason::deregistered: return make_error_code(error::deregistered);
        case core::reject_reason::closed: return make_error_code(error::closed);
    }
    return make_error_code(error::closed);
}

// After the commands a drain served: the stats, the one timer, the close waiters.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::after_serving() {
    if (counters_unpublished_) publish_counters();
    if (const auto deadline = timer_.change(core_, closed_)) [[unlikely]]
        rearm_timer(*deadline);
    if (closed_ && !close_reported_) report_closed();
}

template <class Resource, class Clock, class WaitTraits>
void pool_state<Resource, Clock, WaitTraits>::rearm_timer(std::optional<core::nanos> deadline) {
    timer_.arm(deadline, [this] {
        return [weak = this->weak_from_this()](const boost::system::error_code& ec) {
            if (ec) return;
            if (auto self = weak.lock()) self->announce(command_kind::tick);
        };
    });
}

template <class Resource, class Clock, class WaitTraits>
void pool_state<Resource, Clock, WaitTraits>::report_closed() {
    close_reported_ = true;
    keeping_.drop_tokens();  // every lease is back: none can be kept again
    closing_.closed();
}

// The deadline timer's expiry: a tick, if the armed deadline was reached by the
// Clock's own time, which fired it.
template <class Resource, class Clock, class WaitTraits>
inline void pool_state<Resource, Clock, WaitTraits>::on_timer_expired() {
    drain_now_ = std::max(drain_now_, clock_.fresh());
    if (timer_.expired(core_, drain_now_)) feed(core::event::tick(drain_now_));
}

}  // namespace fairpool::detail
