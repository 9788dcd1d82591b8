// The Boost.Asio adapter on a real io_context (one thread unless a test says
// otherwise) and the test's manual clock: grants, ordering, fairness, cancellation,
// deregistration, bounds, timeouts, close and close deadlines, shutdown, lifetime,
// dirty resources, factory failures and their backoff, retire grace, leak reports; and
// the default steady_clock pool. No test sleeps or reads the time: every deadline
// expires when the test advances the manual clock past it.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <array>
#include <functional>
#include <future>
#include <sstream>
#include <thread>
#include <type_traits>

#include "fixture.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

// Who gets each grant of a one-slot pool, in order: take(who) is an acquire's handler
// that records `who` and keeps the lease in `current` until the test gives it back.
struct turn_recorder {
    std::string order;
    test_lease current;
    auto take(char who) {
        return [this, who](error_code ec, test_lease l) {
            ASSERT_FALSE(ec);
            order.push_back(who);
            current = std::move(l);
        };
    }
};

TEST_F(adapter, immediate_uncontended_grant) {
    auto pool = make_pool(options(2, 1));
    settle();  // prewarmed
    EXPECT_EQ(log_->created, 1);
    outcome a;
    pool->async_acquire(record(a));
    settle();
    ASSERT_TRUE(a.done);
    EXPECT_FALSE(a.ec);
    EXPECT_EQ(a.lease->id(), 1);
    EXPECT_EQ(pool->stats().grants_immediate, 1u);
    EXPECT_EQ(log_->created, 1);  // no spawn for an immediate grant
}

TEST_F(adapter, fifo_ordering_under_saturation) {
    auto pool = make_pool(options(1, 1));
    settle();
    auto tenant = pool->make_handle();
    outcome first;
    tenant.async_acquire(record(first));
    settle();
    std::vector<int> order;
    std::vector<test_lease> held;
    for (int i = 0; i < 4; ++i)
        tenant.async_acquire([&, i](error_code ec, test_lease l) {
            ASSERT_FALSE(ec);
            order.push_back(i);
            held.push_back(std::move(l));
        });
    settle();
    EXPECT_TRUE(order.empty());
    first.lease.release();
    for (int i = 0; i < 4; ++i) {
        settle();
        ASSERT_EQ(order.size(), static_cast<std::size_t>(i + 1));
        held.back().release();
    }
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(adapter, round_robin_across_several_handles) {
    auto pool = make_pool(options(1, 1));
    settle();
    outcome blocker;
    pool->async_acquire(record(blocker));
    settle();
    auto a = pool->make_handle(), b = pool->make_handle(), c = pool->make_handle();
    turn_recorder turns;
    for (int i = 0; i < 3; ++i) a.async_acquire(turns.take('a'));
    for (int i = 0; i < 3; ++i) b.async_acquire(turns.take('b'));
    for (int i = 0; i < 3; ++i) c.async_acquire(turns.take('c'));
    serve_in_turn(blocker.lease, turns.current, 9);
    EXPECT_EQ(turns.order, "abcabcabc");
}

// A handle's weight is its turn: weight 2 takes two grants in a row before the
// rotation moves on (docs/CONTRACT.md section 5, "Who is granted next"). Every acquire
// carries its handle's weight to the scheduler; without it the turns would alternate.
TEST_F(adapter, a_handles_weight_is_its_turn_in_round_robin) {
    auto pool = make_pool(options(1, 1));
    settle();
    outcome blocker;
    pool->async_acquire(record(blocker));
    settle();
    auto heavy = pool->make_handle(2), light = pool->make_handle(1);
    turn_recorder turns;
    for (int i = 0; i < 4; ++i) heavy.async_acquire(turns.take('h'));
    for (int i = 0; i < 2; ++i) light.async_acquire(turns.take('l'));
    serve_in_turn(blocker.lease, turns.current, 6);
    EXPECT_EQ(turns.order, "hhlhhl");
}

TEST_F(adapter, cancelled_waiter_before_grant_for_every_cancellation_type) {
    using ct = boost::asio::cancellation_type;
    for (auto type : {ct::terminal, ct::partial, ct::total, ct::all}) {
        outcome holder;
        auto pool = one_slot_held(holder);
        boost::asio::cancellation_signal signal;
        outcome waiter;
        pool->async_acquire(boost::asio::bind_cancellation_slot(signal.slot(), record(waiter)));
        settle();
        EXPECT_FALSE(waiter.done);
        const std::uint64_t fed = pool->commands_fed();
        signal.emit(type);
        signal.emit(type);  // a second emit sends nothing more
        settle();
        EXPECT_EQ(pool->commands_fed(), fed + 1) << "one cancel fed, not two";
        ASSERT_TRUE(waiter.done);
        EXPECT_EQ(waiter.ec, boost::asio::error::operation_aborted);
        EXPECT_FALSE(waiter.lease);
        EXPECT_EQ(waiter.completions, 1);
        EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::cancelled)], 1u);
    }
}

// cancellation_type::none is no cancellation: emitting it sends nothing, and the
// waiter stays queued; its one cancel is still to come.
TEST_F(adapter, an_emit_of_cancellation_type_none_cancels_nothing) {
    outcome holder;
    auto pool = one_slot_held(holder);
    boost::asio::cancellation_signal signal;
    outcome waiter;
    pool->async_acquire(boost::asio::bind_cancellation_slot(signal.slot(), record(waiter)));
    settle();
    const std::uint64_t fed = pool->commands_fed();
    signal.emit(boost::asio::cancellation_type::none);
    settle();
    EXPECT_FALSE(waiter.done);
    EXPECT_EQ(pool->commands_fed(), fed) << "an emit of none sent a cancel";
    signal.emit(boost::asio::cancellation_type::terminal);
    settle();
    ASSERT_TRUE(waiter.done);
    EXPECT_EQ(waiter.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(waiter.completions, 1);
}

TEST_F(adapter, cancel_crossing_a_grant_loses_and_the_lease_is_delivered) {
    outcome holder;
    auto pool = one_slot_held(holder);
    boost::asio::cancellation_signal signal;
    outcome waiter;
    pool->async_acquire(boost::asio::bind_cancellation_slot(signal.slot(), record(waiter)));
    settle();
    holder.lease.release();          // the release is drained first: the slot goes to the waiter
    signal.emit(boost::asio::cancellation_type::terminal);  // then the cancel finds nobody
    settle();
    ASSERT_TRUE(waiter.done);
    EXPECT_FALSE(waiter.ec);
    EXPECT_TRUE(waiter.lease);
    EXPECT_EQ(waiter.completions, 1);
}

TEST_F(adapter, handle_deregistration_rejects_its_queued_waiters) {
    auto pool = make_pool(options(1, 1));
    settle();
    outcome holder, w1, w2, other;
    pool->async_acquire(record(holder));
    settle();
    auto other_tenant = pool->make_handle();
    {
        auto tenant = pool->make_handle();
        tenant.async_acquire(record(w1));
        other_tenant.async_acquire(record(other));
        tenant.async_acquire(record(w2));
        settle();
    }  // tenant destroyed
    settle();
    EXPECT_EQ(w1.ec, make_error_code(error::deregistered));
    EXPECT_EQ(w2.ec, make_error_code(error::deregistered));
    EXPECT_EQ(w1.completions, 1);
    EXPECT_EQ(w2.completions, 1);
    EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::deregistered)], 2u);
    EXPECT_FALSE(other.done);
    holder.lease.release();
    settle();
    ASSERT_TRUE(other.done);
    EXPECT_FALSE(other.ec);
    EXPECT_TRUE(other.lease);
}

// Only a handle with an acquire outstanding has anything to deregister (mailbox.hpp:
// the deregistration queue's 2(L + 1) counts on it): handles whose acquires were all
// delivered send nothing when they go, however many go before a drain runs. Here L = 2
// (a queue of 6) and 7 such handles go at once.
TEST_F(adapter, handles_without_an_acquire_outstanding_send_nothing_when_they_go) {
    auto pool = pool_admitting_two(1);
    std::vector<test_pool::handle_type> tenants;
    for (int i = 0; i < 7; ++i) {
        tenants.push_back(pool->make_handle());
        outcome o;
        tenants.back().async_acquire(record(o));
        settle();
        ASSERT_TRUE(o.lease) << i;
    }  // each lease released at once
    settle();
    const std::uint64_t fed = pool->commands_fed();
    const std::uint64_t run = pool->drains_run();
    tenants.clear();
    settle();
    EXPECT_EQ(pool->commands_fed(), fed) << "a handle with nothing outstanding sent a deregistration";
    EXPECT_EQ(pool->drains_run(), run);
}

TEST_F(adapter, an_empty_handle_refuses_to_acquire_and_takes_a_handle_later) {
    auto pool = make_pool(options(1, 1));
    settle();
    test_pool::handle_type tenant;  // default-constructed: empty
    EXPECT_FALSE(tenant);
    EXPECT_EQ(tenant.id(), 0u);
    outcome o;
    EXPECT_THROW(tenant.async_acquire(record(o)), std::logic_error);
    settle();
    EXPECT_FALSE(o.done);
    EXPECT_EQ(pool->stats().acquires, 0u);  // nothing reached the pool
    tenant = pool->make_handle();
    EXPECT_TRUE(tenant);
    tenant.async_acquire(record(o));
    settle();
    ASSERT_TRUE(o.done);
    EXPECT_FALSE(o.ec);
    EXPECT_TRUE(o.lease);
}

TEST_F(adapter, reset_deregisters_the_handle_and_lets_go_of_the_pool) {
    outcome holder, w1, w2;
    auto pool = one_slot_held(holder);
    auto tenant = pool->make_handle();
    tenant.async_acquire(record(w1));
    tenant.async_acquire(record(w2));
    settle();
    EXPECT_FALSE(w1.done);
    tenant.reset();
    settle();
    EXPECT_FALSE(tenant);
    EXPECT_EQ(w1.ec, make_error_code(error::deregistered));
    EXPECT_EQ(w2.ec, make_error_code(error::deregistered));
    EXPECT_EQ(w1.completions + w2.completions, 2);
    outcome again;
    EXPECT_THROW(tenant.async_acquire(record(again)), std::logic_error);
    tenant.reset();  // idempotent
    // The reset handle holds no reference: dropping the pool and the lease frees it all.
    const auto lifetime = pool->lifetime();
    pool.reset();
    holder.lease.release();
    settle();
    EXPECT_TRUE(lifetime.expired());
}

// A handle assigned over (a handle moved into it) deregisters first, as its
// destruction would: its queued waiter is rejected `deregistered`, and the handle now
// serves as the one moved in.
TEST_F(adapter, a_handle_assigned_over_deregisters_its_queued_waiters) {
    outcome holder;
    auto pool = one_slot_held(holder);
    auto tenant = pool->make_handle();
    outcome queued, later;
    tenant.async_acquire(record(queued));
    settle();
    EXPECT_FALSE(queued.done);
    const std::uint64_t old_id = tenant.id();
    tenant = pool->make_handle();
    settle();
    ASSERT_TRUE(queued.done);
    EXPECT_EQ(queued.ec, make_error_code(error::deregistered));
    EXPECT_EQ(queued.completions, 1);
    EXPECT_NE(tenant.id(), old_id);
    tenant.async_acquire(record(later));
    settle();
    EXPECT_FALSE(later.done);
    holder.lease.release();
    settle();
    EXPECT_TRUE(later.lease);
    EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::deregistered)], 1u);
}

TEST_F(adapter, close_with_a_relative_timeout_times_out_like_a_deadline) {
    outcome holder;
    auto pool = one_slot_held(holder);
    int completions = 0;
    error_code ec;
    pool->async_close(20ms, [&](error_code e, close_report) { ++completions, ec = e; });
    advance(20ms - 1ns);
    EXPECT_EQ(completions, 0) << "the close timeout fired early";
    advance(1ns);
    ASSERT_EQ(completions, 1);
    EXPECT_EQ(ec, make_error_code(error::timed_out));
    bool closed = false;
    pool->async_close(std::chrono::nanoseconds::max(), [&](error_code e, close_report r) { closed = !e && r.closed; });
    advance(24h);  // a timeout too large for the clock saturates: never
    EXPECT_FALSE(closed);
    holder.lease.release();
    settle();
    EXPECT_TRUE(closed);
}

TEST_F(adapter, bounded_waiters_are_rejected_saturated) {
    auto o = options(1, 1);
    o.scheduler.max_waiters = 2;
    auto pool = make_pool(o);
    settle();
    outcome holder, a, b, c;
    pool->async_acquire(record(holder));
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));
    pool->async_acquire(record(c));
    settle();
    EXPECT_TRUE(holder.lease);
    EXPECT_FALSE(a.done);
    EXPECT_FALSE(b.done);
    EXPECT_EQ(c.ec, make_error_code(error::saturated));
    EXPECT_EQ(pool->stats().queued_waiters, 2u);
}

TEST_F(adapter, a_full_mailbox_completes_busy_at_once) {
    auto o = options(1, 1);
    o.scheduler.max_waiters = 1;
    o.mailbox_capacity = 2;  // three acquires may be outstanding
    auto pool = make_pool(o);
    settle();
    std::vector<outcome> outcomes(5);
    for (auto& out : outcomes) pool->async_acquire(record(out));  // not drained yet
    settle();
    // The first three reached the scheduler: granted, queued, saturated; the rest busy.
    ASSERT_TRUE(outcomes[0].done);
    EXPECT_FALSE(outcomes[0].ec);
    EXPECT_TRUE(outcomes[0].lease);
    EXPECT_FALSE(outcomes[1].done);
    EXPECT_EQ(outcomes[2].ec, make_error_code(error::saturated));
    EXPECT_EQ(outcomes[3].ec, make_error_code(error::busy));
    EXPECT_EQ(outcomes[4].ec, make_error_code(error::busy));
    EXPECT_EQ(pool->stats().acquires, 3u);
    EXPECT_EQ(pool->stats().busy_rejections, 2u);  // counted beside the core's counters
    EXPECT_EQ(make_error_code(error::busy), boost::system::errc::resource_unavailable_try_again);
}

// Admission counts the cancels queued beside the acquires outstanding (admission.hpp):
// an acquire is admitted while those, plus the acquires outstanding, are at most 2L,
// the bound included. Here L = 2 and no drain runs between the steps: two acquires are
// granted with their deliveries waiting on another context and cancelled meanwhile (two
// cancels queued), delivered (none outstanding), then a third is admitted and cancelled
// (one outstanding, three cancels queued): the fourth makes 1 + 3 = 4 = 2L, admitted.
TEST_F(adapter, an_acquire_is_admitted_while_acquires_and_cancels_queued_are_at_most_2l) {
    auto pool = pool_admitting_two(2);
    boost::asio::io_context handler_io;
    std::array<boost::asio::cancellation_signal, 3> signals;
    std::array<outcome, 4> got;
    for (int i = 0; i < 2; ++i) {
        auto on_handler_io = boost::asio::bind_executor(handler_io, record(got[i]));
        pool->async_acquire(boost::asio::bind_cancellation_slot(signals[i].slot(), std::move(on_handler_io)));
    }
    settle();  // both granted; their deliveries wait in handler_io
    signals[0].emit(boost::asio::cancellation_type::terminal);  // crossing the grants: queued, not served
    signals[1].emit(boost::asio::cancellation_type::terminal);
    handler_io.run();
    ASSERT_TRUE(got[0].lease && got[1].lease);
    pool->async_acquire(boost::asio::bind_cancellation_slot(signals[2].slot(), record(got[2])));
    signals[2].emit(boost::asio::cancellation_type::terminal);
    pool->async_acquire(record(got[3]));
    EXPECT_EQ(pool->stats().busy_rejections, 0u);
    settle();
    EXPECT_EQ(got[2].ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(got[3].ec, make_error_code(error::saturated));  // the one waiter's place was taken
    EXPECT_EQ(pool->stats().busy_rejections, 0u);
}

// On the pool's executor an acquire without a cancellation slot is fed to the core
// directly and counts as outstanding only once the scheduler queues it: one granted at
// once takes none of the admission's room, a queued one does (here L = max_waiters 1 +
// mailbox_capacity 1 = 2).
TEST_F(adapter, an_acquire_fed_directly_counts_as_outstanding_once_queued) {
    auto pool = pool_admitting_two(1);
    outcome granted, queued, admitted, refused;
    boost::asio::post(io, [&] {
        pool->async_acquire(record(granted));  // granted in its own step: not counted
        pool->async_acquire(record(queued));   // queued: 1 outstanding
    });
    settle();
    ASSERT_TRUE(granted.done);
    EXPECT_FALSE(queued.done);
    // From off the executor, through the mailbox: one more is admitted (2), the next busy.
    pool->async_acquire(record(admitted));
    pool->async_acquire(record(refused));
    settle();
    EXPECT_EQ(admitted.ec, make_error_code(error::saturated));  // reached the full scheduler
    EXPECT_EQ(refused.ec, make_error_code(error::busy));
    EXPECT_EQ(pool->stats().busy_rejections, 1u);
    granted.lease.release();
    settle();
    EXPECT_FALSE(queued.ec);
    EXPECT_TRUE(queued.lease);
}

// The admission of an acquire fed directly is checked inside the drain: with its limit
// of acquires outstanding (delivered to no handler yet), it completes busy, not saturated,
// and nothing reaches the scheduler. Outstanding here (L = 2): a waiter queued by the
// scheduler, and an acquire rejected through the mailbox whose delivery waits on an
// executor that does not run yet.
TEST_F(adapter, an_acquire_fed_directly_is_refused_busy_at_the_limit) {
    auto pool = pool_admitting_two(1);
    outcome granted, queued, saturated, refused;
    boost::asio::post(io, [&] {
        pool->async_acquire(record(granted));
        pool->async_acquire(record(queued));  // 1 outstanding
    });
    settle();
    boost::asio::io_context handler_io;  // not run until the end
    pool->async_acquire(boost::asio::bind_executor(handler_io, record(saturated)));  // admitted: 2
    settle();  // the drain rejects it saturated; its delivery waits in handler_io
    EXPECT_FALSE(saturated.done);
    boost::asio::post(io, [&] { pool->async_acquire(record(refused)); });  // 2 outstanding: busy
    settle();
    EXPECT_EQ(refused.ec, make_error_code(error::busy));
    EXPECT_EQ(refused.completions, 1);
    EXPECT_EQ(pool->stats().acquires, 3u);  // the refused one reached no scheduler
    EXPECT_EQ(pool->stats().busy_rejections, 1u);
    handler_io.run();
    EXPECT_EQ(saturated.ec, make_error_code(error::saturated));
    granted.lease.release();
    settle();
    EXPECT_TRUE(queued.lease);
}

// An acquire with a cancellation slot, fed directly and granted or rejected in its own
// step, is not counted and installs no cancellation handler; queued, it is counted and
// its slot cancels it. L = 2: under the rule for the mailbox (admitted up front) the
// third acquire here would be refused busy.
TEST_F(adapter, a_cancellable_acquire_completed_in_its_own_step_is_not_counted) {
    auto pool = pool_admitting_two(2);
    boost::asio::cancellation_signal sa, sb, sc, sd;
    outcome a, b, c, d;
    boost::asio::post(io, [&] {
        pool->async_acquire(boost::asio::bind_cancellation_slot(sa.slot(), record(a)));  // granted
        pool->async_acquire(boost::asio::bind_cancellation_slot(sb.slot(), record(b)));  // granted
        pool->async_acquire(boost::asio::bind_cancellation_slot(sc.slot(), record(c)));  // queued: 1
        pool->async_acquire(boost::asio::bind_cancellation_slot(sd.slot(), record(d)));  // saturated
    });
    settle();
    EXPECT_TRUE(a.lease);
    EXPECT_TRUE(b.lease);
    EXPECT_FALSE(c.done);
    EXPECT_EQ(d.ec, make_error_code(error::saturated));
    EXPECT_EQ(pool->stats().busy_rejections, 0u);
    EXPECT_FALSE(sa.slot().has_handler());  // nothing left to cancel: none installed
    EXPECT_TRUE(sc.slot().has_handler());
    sa.emit(boost::asio::cancellation_type::terminal);  // nothing happens
    sc.emit(boost::asio::cancellation_type::terminal);
    settle();
    EXPECT_EQ(c.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(c.completions, 1);
    EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::cancelled)], 1u);
    EXPECT_TRUE(a.lease);
    a.lease.release();
    b.lease.release();
    settle();
    EXPECT_EQ(pool->stats().queued_waiters, 0u);
}

// On the pool's executor but with a drain already scheduled, an acquire goes through
// the mailbox after all: admitted there, and counted back at its delivery, so rounds of
// it leave no room taken (L = 2 here: two lost counts would make the last acquire busy).
TEST_F(adapter, an_acquire_that_finds_the_actor_scheduled_is_counted_and_counted_back) {
    auto pool = pool_admitting_two(2);
    for (int round = 0; round < 3; ++round) {
        outcome on_executor, off_executor;
        const std::uint64_t posted = pool->drains_posted();
        boost::asio::post(io, [&] { pool->async_acquire(record(on_executor)); });  // runs first
        pool->async_acquire(record(off_executor));  // schedules a drain behind it
        EXPECT_EQ(pool->drains_posted(), posted + 1);
        settle();
        ASSERT_TRUE(on_executor.done && off_executor.done) << "round " << round;
        EXPECT_FALSE(on_executor.ec) << "round " << round;
        EXPECT_FALSE(off_executor.ec) << "round " << round;
        on_executor.lease.release();
        off_executor.lease.release();
        settle();
    }
    outcome last;
    pool->async_acquire(record(last));
    settle();
    EXPECT_FALSE(last.ec);
    EXPECT_EQ(pool->stats().busy_rejections, 0u);
}

// A handle destroyed on the pool's executor while its acquire, fed directly, waits in
// the scheduler: the acquire was counted when it was queued, so the handle sends its
// deregistration and the waiter is rejected `deregistered`.
TEST_F(adapter, a_handle_deregisters_an_acquire_fed_directly_and_queued) {
    outcome holder;
    auto pool = one_slot_held(holder);
    outcome waiter;
    boost::asio::post(io, [&] {
        auto tenant = pool->make_handle();
        tenant.async_acquire(record(waiter));
    });  // tenant destroyed
    settle();
    EXPECT_EQ(waiter.ec, make_error_code(error::deregistered));
    EXPECT_EQ(pool->stats().queued_waiters, 0u);
}

TEST_F(adapter, explicit_close_with_blocked_waiters) {
    auto pool = make_pool(options(1, 1));
    settle();
    outcome holder, waiter, later;
    pool->async_acquire(record(holder));
    pool->async_acquire(record(waiter));
    settle();
    bool closed = false;
    pool->async_close([&](error_code ec, close_report r) {
        EXPECT_FALSE(ec);
        EXPECT_TRUE(r.closed);
        closed = true;
    });
    settle();
    EXPECT_EQ(waiter.ec, make_error_code(error::closed));
    EXPECT_FALSE(closed);  // a lease is still out
    pool->async_acquire(record(later));
    settle();
    EXPECT_EQ(later.ec, make_error_code(error::closed));
    holder.lease.release();
    settle();
    EXPECT_TRUE(closed);
    EXPECT_EQ(log_->created, 1);
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(log_->destroyed, 1);
}

// A waiting close is outstanding work, as Asio asks of a pending operation: on the pool's
// executor (whose context must run the drains that close the pool) and on its handler's,
// so neither context's run() returns while it waits. (An io_context that polls with no
// work left stops itself: stopped() tells.)
TEST_F(adapter, a_waiting_close_keeps_its_handler_context_and_the_pool_context_running) {
    outcome holder;
    auto pool = one_slot_held(holder);
    boost::asio::io_context other;
    bool closed = false;
    pool->async_close(boost::asio::bind_executor(other, [&](error_code ec, close_report r) { closed = !ec && r.closed; }));
    settle();
    other.poll();
    EXPECT_FALSE(io.stopped()) << "the pool's context ran out of work while a close waits";
    EXPECT_FALSE(other.stopped()) << "the close handler's context ran out of work while it waits";
    EXPECT_FALSE(closed);
    holder.lease.release();
    // Step by step: between the close's completion leaving the pool and its handler
    // reaching `other`, `other` must still have work (it had none once the completion
    // was posted to the pool's executor, before that handler dispatched it on).
    for (int steps = 0; !closed && steps < 100; ++steps) {
        io.restart();
        io.run_one();
        other.restart();
        other.poll();
        if (!closed) {
            ASSERT_FALSE(other.stopped()) << "the close handler's context ran out of work before it ran";
        }
    }
    EXPECT_TRUE(closed);
    EXPECT_TRUE(other.stopped()) << "the close's work outlived its completion";
    settle();
    EXPECT_TRUE(io.stopped()) << "the close's work on the pool's context outlived its completion";
}

// A close asked for once the pool has closed completes at once, and is outstanding work
// on its handler's executor until its handler has run there.
TEST_F(adapter, a_close_after_the_pool_closed_keeps_its_handler_context_running_until_it_ran) {
    auto pool = make_pool(options(1, 1));
    settle();
    bool first = false;
    pool->async_close([&](error_code ec, close_report r) { first = !ec && r.closed; });
    settle();
    ASSERT_TRUE(first);
    boost::asio::io_context other;
    bool closed = false;
    pool->async_close(boost::asio::bind_executor(other, [&](error_code ec, close_report r) { closed = !ec && r.closed; }));
    for (int steps = 0; !closed && steps < 100; ++steps) {
        other.restart();
        other.poll();
        if (!closed) {
            ASSERT_FALSE(other.stopped()) << "the close handler's context ran out of work before it ran";
        }
        io.restart();
        io.run_one();
    }
    EXPECT_TRUE(closed);
    EXPECT_TRUE(other.stopped()) << "the close's work outlived its completion";
}

TEST_F(adapter, close_with_a_deadline_while_a_lease_is_out_times_out_then_closes) {
    auto pool = make_pool(options(2, 1));
    settle();
    outcome holder;
    pool->async_acquire(record(holder));
    settle();
    int completions = 0;
    error_code first;
    close_report report;
    pool->async_close(manual_clock::now() + 20ms, [&](error_code ec, close_report r) {
        ++completions;
        first = ec;
        report = r;
    });
    advance(20ms - 1ns);
    EXPECT_EQ(completions, 0) << "the close deadline fired early";
    advance(1ns);
    ASSERT_EQ(completions, 1);
    EXPECT_EQ(first, make_error_code(error::timed_out));
    EXPECT_FALSE(report.closed);
    EXPECT_EQ(report.leases_out, 1u);
    EXPECT_EQ(report.waiters_queued, 0u);
    EXPECT_EQ(report.slots_spawning, 0u);
    EXPECT_EQ(report.slots_retiring, 0u);
    advance(1h);
    EXPECT_EQ(completions, 1);
    bool closed = false;
    pool->async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });  // awaited again
    settle();
    EXPECT_FALSE(closed);
    holder.lease.release();
    settle();
    EXPECT_TRUE(closed);
}

// Two closes waiting with different deadlines: each times out at its own, the later
// one asked for first, and neither completes twice when the pool closes.
TEST_F(adapter, two_waiting_closes_time_out_each_at_its_own_deadline) {
    outcome holder;
    auto pool = one_slot_held(holder);
    std::string order;
    std::vector<error_code> results;
    const auto note = [&](char who) {
        return [&, who](error_code ec, close_report) {
            order.push_back(who);
            results.push_back(ec);
        };
    };
    pool->async_close(manual_clock::now() + 20ms, note('a'));
    pool->async_close(manual_clock::now() + 10ms, note('b'));
    settle();
    advance(10ms - 1ns);
    EXPECT_EQ(order, "");
    advance(1ns);
    EXPECT_EQ(order, "b");
    advance(10ms - 1ns);
    EXPECT_EQ(order, "b");
    advance(1ns);
    EXPECT_EQ(order, "ba");
    EXPECT_EQ(results, (std::vector<error_code>{make_error_code(error::timed_out), make_error_code(error::timed_out)}));
    holder.lease.release();
    settle();
    EXPECT_EQ(order, "ba");
    bool closed = false;
    pool->async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_TRUE(closed);
}

TEST_F(adapter, dropping_every_pool_and_handle_object_shuts_down_and_frees_everything) {
    std::weak_ptr<const void> state;
    test_lease survivor;
    {
        auto pool = make_pool(options(2, 2));
        state = pool->lifetime();
        settle();
        outcome a;
        auto tenant = pool->make_handle();
        tenant.async_acquire(record(a));
        settle();
        survivor = std::move(a.lease);  // a lease may outlive the pool
    }
    settle();
    EXPECT_EQ(log_->closed, 1);  // the idle resource was closed at shutdown
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_FALSE(state.expired());
    // Both prewarmed (resource 1 in slot 0, then 2 in slot 1); LIFO hands out the one
    // that became idle last.
    EXPECT_EQ(survivor.slot(), 1u);
    EXPECT_EQ(survivor->id(), 2);
    survivor.release();
    settle();
    EXPECT_EQ(log_->created, 2);
    EXPECT_EQ(log_->closed, 2);
    EXPECT_EQ(log_->destroyed, 2);
    EXPECT_TRUE(state.expired());  // no cycle keeps the pool's state alive
}

TEST_F(adapter, a_dirty_lease_resource_is_never_handed_out_again) {
    auto pool = make_pool(options(1, 1));
    settle();
    std::set<int> dirty;
    for (int round = 0; round < 20; ++round) {
        outcome a;
        pool->async_acquire(record(a));
        settle();
        ASSERT_TRUE(a.lease);
        EXPECT_EQ(dirty.count(a.lease->id()), 0u) << "resource " << a.lease->id() << " was dirty";
        if (round % 3 == 0) {
            dirty.insert(a.lease->id());
            a.lease.mark_dirty();
        }
        a.lease.release();
        settle();
    }
    EXPECT_EQ(dirty.size(), 7u);  // rounds 0, 3, ..., 18
    EXPECT_EQ(pool->stats().retirements[static_cast<int>(core::retire_reason::dirty)], 7u);
    EXPECT_EQ(log_->created, 8);  // one more for each dirty resource
    EXPECT_EQ(log_->destroyed, 7);
}

// A lease moved, by construction or by assignment, carries its dirty mark: released
// from where it was moved to, its resource is retired and never handed out again.
TEST_F(adapter, a_moved_lease_keeps_its_dirty_mark) {
    auto pool = make_pool(options(1, 1));
    settle();
    const auto dirty_retirements = [&] {
        return pool->stats().retirements[static_cast<int>(core::retire_reason::dirty)];
    };
    // Takes resource `id`, marks its lease dirty, moves it by `move` into another lease
    // and releases that one.
    const auto dirty_lease_moved = [&](int id, auto move) {
        outcome o;
        pool->async_acquire(record(o));
        settle();
        ASSERT_TRUE(o.lease);
        EXPECT_EQ(o.lease->id(), id);  // the resource before it was retired
        o.lease.mark_dirty();
        test_lease moved = move(std::move(o.lease));
        EXPECT_TRUE(moved.dirty());
        moved.release();
        settle();
    };
    dirty_lease_moved(1, [](test_lease&& l) { return test_lease(std::move(l)); });
    EXPECT_EQ(dirty_retirements(), 1u);
    dirty_lease_moved(2, [](test_lease&& l) {
        test_lease assigned;
        assigned = std::move(l);
        return assigned;
    });
    EXPECT_EQ(dirty_retirements(), 2u);
    outcome c;
    pool->async_acquire(record(c));
    settle();
    ASSERT_TRUE(c.lease);
    EXPECT_EQ(c.lease->id(), 3);  // resource 2 was retired
    EXPECT_EQ(log_->destroyed, 2);
}

TEST_F(adapter, factory_failures_back_off_and_waiters_time_out_cleanly) {
    log_->fail_creation = true;
    auto pool = make_pool(options(1, 0));  // backoff: 1 ms, doubling, at most 4 ms
    settle();
    outcome a;
    pool->async_acquire(30ms, record(a));  // at t = 0
    settle();
    EXPECT_EQ(pool->stats().spawn_failures, 1u);  // the first spawn fails at once
    // Each retry waits out its backoff exactly: 1, 2, 4, then 4 ms (the maximum) apart.
    const struct {
        std::chrono::nanoseconds wait;
        std::uint64_t failures;
    } retries[] = {{1ms, 2}, {2ms, 3}, {4ms, 4}, {4ms, 5}, {4ms, 6}, {4ms, 7}, {4ms, 8}, {4ms, 9}};
    for (const auto& r : retries) {
        advance(r.wait - 1ns);
        EXPECT_EQ(pool->stats().spawn_failures, r.failures - 1) << "retried before its backoff was over";
        advance(1ns);
        EXPECT_EQ(pool->stats().spawn_failures, r.failures);
    }
    // Now t = 27 ms, the next retry is due at 31: the waiter times out at 30 first.
    advance(3ms - 1ns);
    EXPECT_FALSE(a.done);
    EXPECT_EQ(pool->stats().spawn_failures, 9u);
    advance(1ns);
    ASSERT_TRUE(a.done);
    EXPECT_EQ(a.ec, make_error_code(error::timeout));
    EXPECT_FALSE(a.lease);
    EXPECT_EQ(a.completions, 1);
    EXPECT_EQ(pool->stats().spawn_failures, 9u);
    EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::timeout)], 1u);
    advance(1h);  // nobody waits and min_slots is 0: no more attempts
    EXPECT_EQ(pool->stats().spawns, 9u);

    // Recovered: the next spawn succeeds (the backoff of the 27 ms failure is over).
    log_->fail_creation = false;
    outcome b;
    pool->async_acquire(5s, record(b));
    settle();
    ASSERT_TRUE(b.done);
    EXPECT_FALSE(b.ec);
    ASSERT_TRUE(b.lease);
    EXPECT_EQ(b.lease->id(), 1);
    EXPECT_EQ(pool->stats().spawns, 10u);
    EXPECT_EQ(pool->stats().spawn_failures, 9u);
}

TEST_F(adapter, the_backoff_holds_a_new_waiter_until_it_is_over) {
    log_->fail_creation = true;
    auto pool = make_pool(options(1, 0));
    settle();
    outcome a;
    pool->async_acquire(500us, record(a));
    settle();  // its spawn fails at t = 0: backoff until 1 ms
    EXPECT_EQ(pool->stats().spawn_failures, 1u);
    advance(500us);
    EXPECT_EQ(a.ec, make_error_code(error::timeout));
    log_->fail_creation = false;
    outcome b;
    pool->async_acquire(record(b));
    advance(500us - 1ns);
    EXPECT_FALSE(b.done) << "spawned before the backoff was over";
    EXPECT_EQ(pool->stats().spawns, 1u);
    advance(1ns);
    ASSERT_TRUE(b.done);
    EXPECT_FALSE(b.ec);
    EXPECT_EQ(pool->stats().spawns, 2u);
    EXPECT_EQ(pool->stats().spawn_failures, 1u);
}

TEST_F(adapter, a_queued_acquire_times_out_exactly_at_its_deadline) {
    outcome holder;
    auto pool = one_slot_held(holder);
    auto tenant = pool->make_handle();
    outcome timed, patient;
    tenant.async_acquire(30ms, record(timed));
    tenant.async_acquire(record(patient));  // no deadline: waits on
    settle();
    advance(30ms - 1ns);
    EXPECT_FALSE(timed.done) << "timed out early";
    advance(1ns);
    ASSERT_TRUE(timed.done);
    EXPECT_EQ(timed.ec, make_error_code(error::timeout));
    EXPECT_FALSE(timed.lease);
    EXPECT_EQ(timed.completions, 1);
    EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::timeout)], 1u);
    EXPECT_EQ(pool->stats().queued_waiters, 1u);
    advance(1h);
    EXPECT_FALSE(patient.done);
    EXPECT_EQ(timed.completions, 1);
    holder.lease.release();
    settle();
    ASSERT_TRUE(patient.done);
    EXPECT_FALSE(patient.ec);
    EXPECT_TRUE(patient.lease);
}

// The deadline timer waits only while some deadline is pending: once the one waiter
// that had a deadline is granted, the timer is disarmed, and the pool keeps no work on
// its context (io.run() would return). A wait left pending would hold the context
// until the manual clock reached that deadline, which it never does here.
TEST_F(adapter, the_deadline_timer_is_disarmed_once_no_waiter_has_a_deadline) {
    outcome holder;
    auto pool = one_slot_held(holder);
    outcome waiter;
    pool->async_acquire(1h, record(waiter));
    settle();
    EXPECT_FALSE(waiter.done);
    holder.lease.release();
    settle();
    ASSERT_TRUE(waiter.lease);
    waiter.lease.release();
    settle();
    EXPECT_TRUE(io.stopped()) << "the deadline timer still waits for a deadline no waiter has";
}

// The same when the drain that feeds the shutdown also closes the pool: here no slot is
// live (the factory fails, the pool backs off), so rejecting the one waiter, which had a
// deadline, closes the pool in the same step.
TEST_F(adapter, the_deadline_timer_is_disarmed_by_the_drain_that_closes_the_pool) {
    log_->fail_creation = true;
    auto pool = make_pool(options(1, 0));
    outcome waiter;
    pool->async_acquire(1h, record(waiter));
    settle();  // its spawn failed: the pool backs off, the waiter waits
    EXPECT_FALSE(waiter.done);
    EXPECT_EQ(pool->stats().spawn_failures, 1u);
    bool closed = false;
    pool->async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_EQ(waiter.ec, make_error_code(error::closed));
    EXPECT_TRUE(closed);
    EXPECT_TRUE(io.stopped()) << "the deadline timer still waits after the pool closed";
}

TEST_F(adapter, a_zero_timeout_is_rejected_at_once_unless_a_slot_is_idle) {
    outcome holder;
    auto pool = one_slot_held(holder);
    outcome now_or_never;
    pool->async_acquire(0ns, record(now_or_never));
    settle();  // no time passes
    EXPECT_EQ(now_or_never.ec, make_error_code(error::timeout));
    holder.lease.release();
    settle();
    outcome idle;
    pool->async_acquire(0ns, record(idle));
    settle();
    EXPECT_FALSE(idle.ec);
    EXPECT_TRUE(idle.lease);
}

// A factory that never answers: it waits on a timer of the manual clock that never
// expires.
boost::asio::awaitable<resource> never_answers() {
    manual_timer never(co_await boost::asio::this_coro::executor, manual_clock::time_point::max());
    co_await never.async_wait(boost::asio::use_awaitable);
    co_return resource(0, nullptr);
}

// A handler's executor that runs `at_post` when a completion is posted to it (every
// time, or with `once` the first time only, clearing it), then runs the completion on
// the io_context (never inline). `at_post` runs on the pool's thread while the drain
// that posts the completion still holds the actor: what it sends the pool is pending
// for that drain.
struct at_post_executor {
    boost::asio::io_context::executor_type inner;
    std::function<void()>* at_post;
    bool once = false;

    boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
        return inner.context();
    }
    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
        return boost::asio::execution::blocking.never;
    }
    at_post_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }
    template <class F>
    void execute(F&& f) const {
        if (*at_post) once ? std::exchange(*at_post, nullptr)() : (*at_post)();
        boost::asio::require(inner, boost::asio::execution::blocking.never).execute(std::forward<F>(f));
    }
    bool operator==(const at_post_executor&) const noexcept = default;
};

TEST_F(adapter, counters_count_a_completion_before_it_is_posted) {
    auto pool = make_pool(options(1, 1));
    settle();
    std::vector<core::stats> seen;
    std::function<void()> read_counters = [&] { seen.push_back(pool->stats()); };
    const at_post_executor ex{io.get_executor(), &read_counters};
    outcome granted, rejected;
    pool->async_acquire(boost::asio::bind_executor(ex, record(granted)));
    settle();
    pool->async_acquire(0ns, boost::asio::bind_executor(ex, record(rejected)));
    settle();
    ASSERT_TRUE(granted.done && rejected.done);
    EXPECT_FALSE(granted.ec);
    EXPECT_EQ(rejected.ec, make_error_code(error::timeout));
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].grants_immediate, 1u);
    EXPECT_EQ(seen[0].acquires, 1u);
    EXPECT_EQ(seen[1].rejections[static_cast<int>(core::reject_reason::timeout)], 1u);
    EXPECT_EQ(seen[1].acquires, 2u);
}

// A drain run inline (inside an initiating function on the pool's executor) serves at
// most 32 commands, the one that began it included; what is left goes on in one posted
// drain (docs/CONTRACT.md section 8). The commands: 40 leases released, from a
// completion's post, while that drain holds the actor: each finds the actor busy, goes
// through the mailbox, and is served by the drain's re-check. Both kinds of inline
// drain: an acquire fed to the core directly, and a cancel announced on the executor.
TEST_F(adapter, an_inline_drain_serves_at_most_32_commands_and_posts_the_rest) {
    auto pool = make_pool(options(41, 41));
    settle();
    const auto lease_40 = [&] {
        std::vector<outcome> got(40);
        for (auto& o : got) pool->async_acquire(record(o));
        settle();
        std::vector<test_lease> leases;
        for (auto& o : got) leases.push_back(std::move(o.lease));
        return leases;
    };
    std::function<void()> at_post;
    const at_post_executor ex{io.get_executor(), &at_post, true};

    // Fed directly: the acquire, then 31 releases inline.
    std::vector<test_lease> held = lease_40();
    at_post = [&held] { held.clear(); };
    outcome fed;
    std::uint64_t before = pool->commands_fed(), posted = pool->drains_posted(), inline_fed = 0;
    boost::asio::post(io, [&] {
        pool->async_acquire(boost::asio::bind_executor(ex, record(fed)));
        inline_fed = pool->commands_fed() - before;
    });
    settle();
    EXPECT_EQ(inline_fed, 32u) << "fed directly";
    EXPECT_EQ(pool->commands_fed() - before, 41u);
    EXPECT_EQ(pool->drains_posted() - posted, 1u);
    ASSERT_TRUE(fed.lease);
    EXPECT_EQ(pool->stats().slots[static_cast<int>(core::slot_state::leased)], 1u);

    // Announced: the cancel of a queued waiter, then 31 releases inline.
    held = lease_40();
    ASSERT_EQ(pool->stats().slots[static_cast<int>(core::slot_state::leased)], 41u);
    boost::asio::cancellation_signal signal;
    outcome cancelled;
    pool->async_acquire(
        boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::bind_executor(ex, record(cancelled))));
    settle();
    ASSERT_FALSE(cancelled.done);
    at_post = [&held] { held.clear(); };
    before = pool->commands_fed(), posted = pool->drains_posted();
    boost::asio::post(io, [&] {
        signal.emit(boost::asio::cancellation_type::terminal);
        inline_fed = pool->commands_fed() - before;
    });
    settle();
    EXPECT_EQ(inline_fed, 32u) << "announced";
    EXPECT_EQ(pool->commands_fed() - before, 41u);
    EXPECT_EQ(pool->drains_posted() - posted, 1u);
    EXPECT_EQ(cancelled.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(pool->stats().slots[static_cast<int>(core::slot_state::leased)], 1u);
}

// Publishing writes only what changed: after every drain the snapshot must still equal
// the core's counters, whichever of them a step changed (grants immediate and after a
// wait into different histogram buckets, several grants in one drain, rejections of
// every kind, spawns, a dirty retirement, gauges up and down).
TEST_F(adapter, the_published_counters_equal_the_cores_after_every_drain) {
    scratch_directory dumps;
    pool_options o = options(2, 1);
    o.scheduler.max_waiters = 2;
    o.recording = whole_test_in_memory();
    auto pool = make_pool(o);
    int dumped = 0;
    const auto check = [&](const char* when) {
        settle();
        const auto dir = dumps / std::to_string(dumped++);
        ASSERT_FALSE(pool->dump_recording(dir)) << when;
        EXPECT_EQ(pool->stats(), counters_of_recording(dir)) << when;
    };
    check("warm");
    outcome a, b, c, d, e, f;
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));  // waits for the second slot's spawn
    check("a grant now, one after a spawn");
    pool->async_acquire(record(c));
    pool->async_acquire(5ms, record(d));
    check("two queued");
    advance(1ms);
    a.lease.release();  // c granted after 1 ms of waiting; d still queued
    check("a grant after a wait");
    boost::asio::cancellation_signal cancel;
    pool->async_acquire(boost::asio::bind_cancellation_slot(cancel.slot(), record(e)));
    pool->async_acquire(record(f));  // the queue is full: saturated
    check("queued and saturated");
    cancel.emit(boost::asio::cancellation_type::terminal);
    check("cancelled");
    advance(1s);  // d times out
    check("timed out");
    b.lease.mark_dirty();
    b.lease.release();  // retired; the pool spawns again
    c.lease.release();
    check("dirty release");
    EXPECT_TRUE(a.done && b.done && c.done && d.done && e.done && f.done);
    EXPECT_EQ(d.ec, make_error_code(error::timeout));
    EXPECT_EQ(f.ec, make_error_code(error::saturated));
    EXPECT_EQ(e.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(pool->stats().grants_after_wait, 2u);
}

TEST_F(adapter, a_resource_whose_close_hangs_is_dropped_after_retire_grace) {
    auto pool_owner = one_slot_whose_close_hangs();
    test_pool& pool = *pool_owner;
    retire_one_dirty(pool);
    EXPECT_EQ(log_->closed, 1);  // its close has begun, and hangs
    EXPECT_EQ(log_->destroyed, 0);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 1u);
    advance(100ms - 1ns);
    EXPECT_EQ(log_->destroyed, 0) << "dropped before its retire grace was over";
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 1u);
    advance(1ns);
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 0u);
    EXPECT_EQ(log_->created, 2);  // min_slots: replaced
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::idle)], 1u);
}

// A close hook that ignores cancellation (its wait is bound to an empty cancellation
// slot): at retire_grace the slot is retired all the same and replaced; the resource,
// which the hook still uses, is destroyed only when the hook returns.
TEST_F(adapter, a_close_that_ignores_cancellation_frees_its_slot_at_retire_grace) {
    auto log = log_;
    auto pool_owner = one_slot_closing_with([log](resource&) -> boost::asio::awaitable<void> {
        ++log->closed;
        manual_timer later(co_await boost::asio::this_coro::executor, std::chrono::seconds(10));
        co_await later.async_wait(
            boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), boost::asio::use_awaitable));
    });
    test_pool& pool = *pool_owner;
    retire_one_dirty(pool);
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 1u);
    advance(100ms - 1ns);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 1u) << "freed before its grace";
    advance(1ns);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 0u);
    EXPECT_EQ(log_->created, 2);  // min_slots: replaced, while the old close still runs
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::idle)], 1u);
    EXPECT_EQ(log_->destroyed, 0) << "destroyed while its close hook still uses it";
    advance(10s);  // the hook returns at last
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_EQ(pool.stats().retirements[static_cast<int>(core::retire_reason::dirty)], 1u);
    outcome b;
    pool.async_acquire(record(b));
    settle();
    ASSERT_TRUE(b.lease);
    EXPECT_EQ(b.lease->id(), 2);  // the replacement
}

// A factory that never answers and ignores cancellation: at create_timeout the spawn
// has failed (the waiter still waits; the pool backs off and spawns again), and a
// second factory call that answers serves the waiter. The first one's resource, if it
// ever comes, is destroyed unused.
TEST_F(adapter, a_factory_past_create_timeout_fails_the_spawn_and_its_late_resource_is_destroyed) {
    auto log = log_;
    auto o = options(1, 0);  // backoff 1 ms
    o.create_timeout = std::chrono::milliseconds(50);
    int calls = 0;
    test_pool pool(io.get_executor(), o, [log, &calls]() -> boost::asio::awaitable<resource> {
        if (++calls == 1) {  // answers only after 10 s, deaf to cancellation
            manual_timer later(co_await boost::asio::this_coro::executor, std::chrono::seconds(10));
            co_await later.async_wait(
                boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), boost::asio::use_awaitable));
        }
        co_return resource(++log->created, log);
    });
    outcome a;
    pool.async_acquire(record(a));
    settle();
    EXPECT_EQ(calls, 1);
    advance(50ms - 1ns);
    EXPECT_EQ(pool.stats().spawn_failures, 0u) << "failed before create_timeout";
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::spawning)], 1u);
    advance(1ns);
    EXPECT_EQ(pool.stats().spawn_failures, 1u);
    EXPECT_FALSE(a.done) << "a failed spawn does not reject the waiter";
    advance(1ms);  // the backoff ends: spawned again, and this factory answers
    EXPECT_EQ(calls, 2);
    ASSERT_TRUE(a.done);
    ASSERT_TRUE(a.lease);
    EXPECT_EQ(a.lease->id(), 1);
    advance(10s);  // the first factory answers at last
    EXPECT_EQ(log_->created, 2);
    EXPECT_EQ(log_->destroyed, 1) << "the late resource was not destroyed";
    EXPECT_EQ(a.lease->id(), 1) << "the late resource replaced the one leased";
    EXPECT_EQ(pool.stats().spawns, 2u);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::leased)], 1u);
}

// A close is not held up for ever by a factory that never answers.
TEST_F(adapter, a_close_completes_while_a_factory_never_answers) {
    auto o = options(1, 1);
    o.create_timeout = std::chrono::milliseconds(50);
    test_pool pool(io.get_executor(), o, never_answers);
    settle();
    bool closed = false;
    pool.async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_FALSE(closed);
    advance(50ms);
    EXPECT_TRUE(closed);
    EXPECT_EQ(pool.stats().spawn_failures, 1u);
}

// A close that times out reports what it still waits for, each in its own field: here
// a spawn whose factory has not answered (until create_timeout, 50 ms).
TEST_F(adapter, a_timed_out_close_reports_a_slot_still_spawning) {
    auto o = options(1, 1);
    o.create_timeout = std::chrono::milliseconds(50);
    test_pool pool(io.get_executor(), o, never_answers);
    settle();
    close_outcome timed_out;
    close_past_its_deadline(pool, 10ms, timed_out);
    expect_report(timed_out.report, {.slots_spawning = 1});
    bool closed = false;
    pool.async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    advance(40ms);  // create_timeout: the spawn fails, the pool closes
    EXPECT_TRUE(closed);
    EXPECT_EQ(timed_out.completions, 1);
}

// The same for a slot whose close hook has not returned (until retire_grace, 100 ms).
TEST_F(adapter, a_timed_out_close_reports_a_slot_still_retiring) {
    auto pool_owner = one_slot_whose_close_hangs();
    test_pool& pool = *pool_owner;
    retire_one_dirty(pool);  // its close hangs; max_slots 1: no replacement meanwhile
    ASSERT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 1u);
    close_outcome timed_out;
    close_past_its_deadline(pool, 10ms, timed_out);
    expect_report(timed_out.report, {.slots_retiring = 1});
    bool closed = false;
    pool.async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    advance(90ms);  // retire_grace: the slot is retired, the pool closes
    EXPECT_TRUE(closed);
    EXPECT_EQ(timed_out.completions, 1);
    EXPECT_EQ(log_->destroyed, 1);
}

TEST_F(adapter, a_resource_whose_close_throws_is_dropped_at_once) {
    auto log = log_;
    auto pool_owner = one_slot_closing_with([log](resource&) -> boost::asio::awaitable<void> {
        ++log->closed;
        throw std::runtime_error("close failed");
        co_return;
    });
    test_pool& pool = *pool_owner;
    retire_one_dirty(pool);  // no time passes: not held until retire_grace
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_EQ(pool.stats().slots[static_cast<int>(core::slot_state::retiring)], 0u);
    EXPECT_EQ(log_->created, 2);
}

TEST_F(adapter, a_lease_held_past_leak_threshold_is_reported_once) {
    auto o = options(2, 2);
    o.scheduler.leak_threshold = 50'000'000;  // 50 ms
    std::vector<std::pair<std::uint32_t, std::uint64_t>> reports;
    o.on_leak_suspected = [&reports](std::uint32_t slot, std::uint64_t lease) { reports.emplace_back(slot, lease); };
    auto pool = make_pool(o);
    settle();
    outcome kept, returned;
    pool->async_acquire(record(kept));
    pool->async_acquire(record(returned));
    settle();
    ASSERT_TRUE(kept.lease);
    ASSERT_TRUE(returned.lease);
    advance(50ms - 1ns);
    returned.lease.release();  // back in time: never reported
    settle();
    EXPECT_TRUE(reports.empty()) << "reported before its threshold";
    advance(1ns);
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].first, kept.lease.slot());
    EXPECT_EQ(reports[0].second, kept.lease.id());
    EXPECT_EQ(pool->stats().leaks_suspected, 1u);
    advance(1h);
    EXPECT_EQ(reports.size(), 1u);  // once per lease
    kept.lease.release();
    settle();
    EXPECT_EQ(pool->stats().slots[static_cast<int>(core::slot_state::idle)], 2u);
}

TEST_F(adapter, one_actor_and_no_task_per_acquire_or_release) {
    auto pool = make_pool(options(1, 1));
    settle();
    const std::uint64_t posted = pool->drains_posted(), run = pool->drains_run(), fed = pool->commands_fed();
    int cycles = 0;
    std::function<void(error_code, test_lease)> again = [&](error_code ec, test_lease l) {
        ASSERT_FALSE(ec);
        l.release();
        if (++cycles < 10'000) pool->async_acquire(again);
    };
    pool->async_acquire(again);  // from outside the executor: a posted drain
    const std::size_t handlers = settle();
    EXPECT_EQ(cycles, 10'000);
    // On the executor, with the actor idle, each release and each acquire is its own
    // inline drain; no drain is posted, and the only handlers are the completions.
    EXPECT_EQ(pool->drains_posted() - posted, 1u);
    EXPECT_EQ(handlers, 1u + 10'000u);
    EXPECT_EQ(pool->drains_run() - run, 20'000u);
    EXPECT_EQ(pool->commands_fed() - fed, 20'000u);
    EXPECT_EQ(pool->stats().grants_immediate, 10'000u);
}

// An acquire is outstanding work on its handler's executor while the scheduler holds it
// queued (io.run() would not return meanwhile), and none once it is delivered.
TEST_F(adapter, a_queued_acquire_is_outstanding_work_until_it_is_delivered) {
    auto pool = make_pool(options(1, 1));
    settle();
    outcome held, queued;
    boost::asio::post(io, [&] { pool->async_acquire(record(held)); });  // fed directly, granted
    settle();
    ASSERT_TRUE(held.done);
    EXPECT_TRUE(io.stopped());  // nothing outstanding once the grant is delivered
    boost::asio::post(io, [&] { pool->async_acquire(record(queued)); });  // fed directly, queued
    settle();
    EXPECT_FALSE(queued.done);
    EXPECT_FALSE(io.stopped());  // the queued acquire is outstanding work
    held.lease.release();
    settle();
    ASSERT_TRUE(queued.done);
    EXPECT_FALSE(queued.ec);
    EXPECT_TRUE(io.stopped());  // its work ended with its delivery
}

// An acquire pushed into the mailbox (its caller is not on the pool's executor) is
// outstanding work on its handler's executor, here another io_context's, from its
// initiating function on: that context's run() would not return while the drain that
// grants it has not run yet. None is left once it is delivered.
TEST_F(adapter, an_acquire_in_the_mailbox_is_outstanding_work_on_its_handlers_executor) {
    auto pool = make_pool(options(1, 1));
    settle();
    boost::asio::io_context handler_io;
    outcome granted;
    pool->async_acquire(boost::asio::bind_executor(handler_io, record(granted)));  // pushed: off the executor
    handler_io.poll();
    EXPECT_FALSE(handler_io.stopped());  // the acquire waits in the mailbox: work
    settle();                            // the drain grants it, posting to handler_io
    handler_io.restart();
    handler_io.poll();
    ASSERT_TRUE(granted.done);
    EXPECT_FALSE(granted.ec);
    EXPECT_TRUE(handler_io.stopped());  // delivered: no work left
    granted.lease.release();
    settle();
}

// An allocator that counts what it hands out, for a handler's associated allocator.
template <class T>
struct counting_allocator {
    using value_type = T;
    int* count;
    explicit counting_allocator(int* c) noexcept : count(c) {}
    template <class U>
    counting_allocator(const counting_allocator<U>& other) noexcept : count(other.count) {}  // NOLINT: rebinding
    T* allocate(std::size_t n) {
        ++*count;
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
    template <class U>
    bool operator==(const counting_allocator<U>& other) const noexcept { return count == other.count; }
};

// A handler with its own allocator, recording its outcome.
struct allocating_handler {
    outcome* out;
    int* allocations;
    using allocator_type = counting_allocator<void>;
    [[nodiscard]] allocator_type get_allocator() const noexcept { return allocator_type(allocations); }
    void operator()(error_code ec, test_lease l) const { record(*out)(ec, std::move(l)); }
};

// The handler's associated allocator serves the acquire's operation. On an io_context's
// executor, directly or inside an any_io_executor, that operation is itself what the
// completion posts to the io_context (one allocation); on any other executor (here a
// strand) Asio wraps the delivery in operations of its own, from the same allocator.
TEST_F(adapter, a_completion_on_an_io_context_posts_the_operation_itself) {
    auto pool = make_pool(options(1, 1));
    settle();
    const auto acquire_counting = [&](auto bind) {
        outcome o;
        int allocations = 0;
        pool->async_acquire(bind(allocating_handler{&o, &allocations}));
        settle();
        EXPECT_TRUE(o.done);
        EXPECT_FALSE(o.ec);
        EXPECT_TRUE(o.lease);
        o.lease.release();
        settle();
        return allocations;
    };
    EXPECT_EQ(acquire_counting([](auto h) { return h; }), 1);
    EXPECT_EQ(acquire_counting([&](auto h) {
                  return boost::asio::bind_executor(boost::asio::any_io_executor(io.get_executor()), h);
              }),
              1);
    auto strand = boost::asio::make_strand(io);  // the count sees Asio's wrappers: more than one
    EXPECT_GT(acquire_counting([&](auto h) { return boost::asio::bind_executor(strand, h); }), 1);
}

TEST_F(adapter, every_completion_token_works) {
    auto pool = make_pool(options(2, 2));
    settle();
    // use_awaitable
    bool coroutine_done = false;
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
        auto l = co_await pool->async_acquire(boost::asio::use_awaitable);
        EXPECT_TRUE(l);
        auto [ec, l2] = co_await pool->async_acquire(boost::asio::as_tuple(boost::asio::use_awaitable));
        EXPECT_FALSE(ec);
        EXPECT_TRUE(l2);
        coroutine_done = true;
    }, boost::asio::detached);
    settle();
    EXPECT_TRUE(coroutine_done);
    // deferred
    auto op = pool->async_acquire(boost::asio::deferred);
    outcome d;
    std::move(op)(record(d));
    settle();
    EXPECT_TRUE(d.lease);
    // use_future, with the io_context on another thread
    std::thread runner;
    {
        auto work = boost::asio::make_work_guard(io);
        io.restart();
        runner = std::thread([this] { io.run(); });
        std::future<test_lease> f = pool->async_acquire(boost::asio::use_future);
        EXPECT_TRUE(f.get());
    }
    runner.join();
}

TEST_F(adapter, a_use_future_rejection_throws_system_error_with_its_code) {
    outcome holder;
    auto pool = one_slot_held(holder);
    std::thread runner;
    {
        auto work = boost::asio::make_work_guard(io);
        io.restart();
        runner = std::thread([this] { io.run(); });
        std::future<test_lease> f = pool->async_acquire(0ns, boost::asio::use_future);  // nothing idle: timeout
        try {
            f.get();
            ADD_FAILURE() << "a rejected acquire's future returned a lease";
        } catch (const boost::system::system_error& e) {
            EXPECT_EQ(e.code(), make_error_code(error::timeout));
        }
        // Without exceptions: a callback fulfils a promise of (error_code, lease).
        std::promise<std::pair<error_code, test_lease>> promise;
        auto outcome_of = promise.get_future();
        pool->async_acquire(0ns, [&promise](error_code ec, test_lease l) { promise.set_value({ec, std::move(l)}); });
        EXPECT_EQ(outcome_of.get().first, make_error_code(error::timeout));
    }
    runner.join();
}

// Waiter ids come from two sources (an acquire with a cancellation slot takes an odd one
// on its caller's thread, any other an even one from the actor): queued side by side,
// none is taken for another (the scheduler refuses a duplicate id, which is fatal in
// the actor), and a cancel reaches exactly the waiter it was meant for.
TEST_F(adapter, waiters_with_and_without_a_cancellation_slot_never_share_an_id) {
    outcome holder;
    auto pool = one_slot_held(holder);
    std::array<outcome, 3> plain;
    std::array<outcome, 3> cancellable;
    std::array<boost::asio::cancellation_signal, 3> signals;
    for (std::size_t i = 0; i < 3; ++i) {
        pool->async_acquire(record(plain[i]));
        pool->async_acquire(boost::asio::bind_cancellation_slot(signals[i].slot(), record(cancellable[i])));
    }
    settle();
    EXPECT_EQ(pool->stats().queued_waiters, 6u);
    signals[1].emit(boost::asio::cancellation_type::terminal);
    settle();
    EXPECT_EQ(cancellable[1].ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(pool->stats().queued_waiters, 5u);
    // FIFO from here: each release grants the next waiter in the order they were queued.
    const std::array<outcome*, 5> order{&plain[0], &cancellable[0], &plain[1], &plain[2], &cancellable[2]};
    for (outcome* next : order) {
        holder.lease.release();
        settle();
        ASSERT_TRUE(next->done);
        EXPECT_FALSE(next->ec);
        holder.lease = std::move(next->lease);
    }
    EXPECT_EQ(pool->stats().queued_waiters, 0u);
}

TEST_F(adapter, a_foreign_thread_cancels_by_posting_the_emit_to_the_handlers_executor) {
    outcome holder;
    auto pool = one_slot_held(holder);
    boost::asio::cancellation_signal signal;  // not thread-safe: emitted on the handler's executor only
    std::promise<error_code> cancelled;
    auto ec = cancelled.get_future();
    pool->async_acquire(boost::asio::bind_cancellation_slot(
        signal.slot(), boost::asio::bind_executor(io.get_executor(), [&cancelled](error_code e, test_lease) {
            cancelled.set_value(e);
        })));
    settle();
    std::thread runner;
    {
        auto work = boost::asio::make_work_guard(io);
        io.restart();
        runner = std::thread([this] { io.run(); });
        // This thread is not the io_context's: it posts the emit there.
        boost::asio::post(io.get_executor(), [&signal] { signal.emit(boost::asio::cancellation_type::terminal); });
        EXPECT_EQ(ec.get(), boost::asio::error::operation_aborted);
    }
    runner.join();
}

// The default clock: pool<R> is pool<R, steady_clock, wait_traits<steady_clock>>, on
// real time. Only outcomes that no amount of elapsed time can change are asserted here:
// deadlines already past when they are given.
using steady_pool = pool<resource>;
static_assert(std::is_same_v<steady_pool, pool<resource, std::chrono::steady_clock,
                                               boost::asio::wait_traits<std::chrono::steady_clock>>>);
static_assert(std::is_same_v<steady_pool::clock_type, std::chrono::steady_clock>);
static_assert(std::is_same_v<steady_pool::time_point, std::chrono::steady_clock::time_point>);
static_assert(std::is_same_v<steady_pool::lease_type, lease<resource>>);
static_assert(std::is_same_v<steady_pool::handle_type, handle<resource>>);

TEST_F(adapter, the_steady_clock_pool_honours_deadlines_already_past) {
    auto log = log_;
    steady_pool pool(io.get_executor(), options(1, 1),
                     [log]() -> boost::asio::awaitable<resource> { co_return resource(++log->created, log); });
    settle();
    lease<resource> held;
    pool.async_acquire([&held](error_code ec, lease<resource> l) {
        EXPECT_FALSE(ec);
        held = std::move(l);
    });
    settle();
    ASSERT_TRUE(held);
    // Runs until `done`, or until nothing is left that could make it so.
    const auto run_until = [this](const bool& done) {
        while (!done) {
            io.restart();
            if (io.run_one() == 0) return;
        }
    };

    error_code zero_ec, short_ec;
    bool zero_done = false, short_done = false;
    pool.async_acquire(0ns, [&](error_code ec, lease<resource>) { zero_ec = ec, zero_done = true; });
    settle();  // a zero timeout is decided in the step that takes the acquire
    EXPECT_EQ(zero_ec, make_error_code(error::timeout));
    pool.async_acquire(1ns, [&](error_code ec, lease<resource>) { short_ec = ec, short_done = true; });
    run_until(short_done);  // at once, or by the steady deadline timer
    EXPECT_EQ(short_ec, make_error_code(error::timeout));

    // A close deadline already past: its steady timer fires on the reactor's next pass.
    int completions = 0;
    bool close_done = false;
    error_code close_ec;
    close_report report;
    pool.async_close(std::chrono::steady_clock::now(), [&](error_code ec, close_report r) {
        ++completions;
        close_done = true;
        close_ec = ec;
        report = r;
    });
    run_until(close_done);
    settle();
    EXPECT_EQ(completions, 1);
    EXPECT_EQ(close_ec, make_error_code(error::timed_out));
    EXPECT_FALSE(report.closed);
    EXPECT_EQ(report.leases_out, 1u);
    held.release();
    bool closed = false;
    pool.async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_TRUE(closed);
    EXPECT_EQ(log_->destroyed, 1);
}

TEST_F(adapter, errors_have_a_category_and_messages) {
    EXPECT_STREQ(make_error_code(error::saturated).category().name(), "fairpool");
    EXPECT_EQ(make_error_code(error::cancelled), boost::system::errc::operation_canceled);
    EXPECT_EQ(make_error_code(error::timeout), boost::system::errc::timed_out);
    EXPECT_EQ(make_error_code(error::closed).message(), "the pool is closed");
}

TEST_F(adapter, invalid_options_are_refused_naming_the_field) {
    auto o = options(2);
    o.scheduler.max_waiters = 32000;
    o.mailbox_capacity = 1000;
    EXPECT_THROW(make_pool(o), core::config_error);
    // The largest mailbox: its queues' storage (a deregistration queue of 2(L + 1)
    // and a dummy node) is still within Boost.Lockfree's 65535 nodes; one more is refused.
    o.mailbox_capacity = 766;
    EXPECT_NO_THROW(make_pool(o));
    o.mailbox_capacity = 767;
    EXPECT_EQ(validate(o).value_or(""), "mailbox_capacity: max_waiters + mailbox_capacity is 32767, above 32766");
    o = options(2);
    o.create_timeout = std::chrono::nanoseconds(-1);
    EXPECT_EQ(validate(o).value_or(""), "create_timeout: must not be negative");
    o.create_timeout = std::chrono::nanoseconds(0);  // none
    EXPECT_FALSE(validate(o).has_value());
    o = options(0);
    try {
        make_pool(o);
        ADD_FAILURE();
    } catch (const core::config_error& e) {
        EXPECT_NE(std::string(e.what()).find("scheduler.max_slots"), std::string::npos) << e.what();
    }
}

// Each bound of the adapter's own options (error.cpp: validate): the limit itself is
// accepted, one past it refused naming the field.
TEST_F(adapter, each_adapter_option_accepts_its_limit_and_refuses_one_past_it) {
    auto o = options(2);
    o.retire_grace = 0ns;  // retire at once
    EXPECT_FALSE(validate(o).has_value());
    o.retire_grace = -1ns;
    EXPECT_EQ(validate(o).value_or(""), "retire_grace: must not be negative");
    o = options(2);
    o.check_timeout = 1ns;
    o.reset_timeout = 1ns;
    EXPECT_FALSE(validate(o).has_value());
    o.check_timeout = 0ns;
    EXPECT_EQ(validate(o).value_or(""), "check_timeout: must be positive");
    o.check_timeout = 1ns;
    o.reset_timeout = 0ns;
    EXPECT_EQ(validate(o).value_or(""), "reset_timeout: must be positive");
    o = options(2);
    o.mailbox_capacity = 1;
    EXPECT_FALSE(validate(o).has_value());
    o.mailbox_capacity = 0;
    EXPECT_EQ(validate(o).value_or(""), "mailbox_capacity: must be at least 1");
}

}  // namespace
}  // namespace fairpool::testing
