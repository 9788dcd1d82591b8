// The Boost.Asio adapter on a real io_context (one thread unless a test says
// otherwise) and the test's manual clock: grants, ordering, fairness, cancellation,
// handles and their deregistration, bounds, the mailbox and admission. No test sleeps
// or reads the time: every deadline expires when the test advances the manual clock
// past it. The pool's closing and resources are in pool_resources_test.cpp, deadlines
// and completions in pool_completion_test.cpp (one test program, adapter_tests).
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <array>

#include "fixture.hpp"

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
    outcome blocker;
    auto pool = pool_with_a_lease_out(blocker, 1);
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
    outcome blocker;
    auto pool = pool_with_a_lease_out(blocker, 1);
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
        const std::uint64_t fed = pool->diagnostics().commands_fed;
        signal.emit(type);
        signal.emit(type);  // a second emit sends nothing more
        settle();
        EXPECT_EQ(pool->diagnostics().commands_fed, fed + 1) << "one cancel fed, not two";
        ASSERT_TRUE(waiter.done);
        EXPECT_EQ(waiter.ec, boost::asio::error::operation_aborted);
        EXPECT_FALSE(waiter.lease);
        EXPECT_EQ(waiter.completions, 1);
        EXPECT_EQ(pool->stats().rejected_cancelled, 1u);
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
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    signal.emit(boost::asio::cancellation_type::none);
    settle();
    EXPECT_FALSE(waiter.done);
    EXPECT_EQ(pool->diagnostics().commands_fed, fed) << "an emit of none sent a cancel";
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
    EXPECT_EQ(pool->stats().rejected_deregistered, 2u);
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
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    const std::uint64_t run = pool->diagnostics().drains_run;
    tenants.clear();
    settle();
    EXPECT_EQ(pool->diagnostics().commands_fed, fed) << "a handle with nothing outstanding sent a deregistration";
    EXPECT_EQ(pool->diagnostics().drains_run, run);
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
    const auto lifetime = pool->diagnostics().lifetime;
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
    EXPECT_EQ(pool->stats().rejected_deregistered, 1u);
}

TEST_F(adapter, bounded_waiters_are_rejected_saturated) {
    auto o = options(1, 1);
    o.max_waiters = 2;
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
    o.max_waiters = 1;
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
    EXPECT_EQ(pool->stats().rejected_busy, 2u);  // counted beside the core's counters
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
    EXPECT_EQ(pool->stats().rejected_busy, 0u);
    settle();
    EXPECT_EQ(got[2].ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(got[3].ec, make_error_code(error::saturated));  // the one waiter's place was taken
    EXPECT_EQ(pool->stats().rejected_busy, 0u);
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
    EXPECT_EQ(pool->stats().rejected_busy, 1u);
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
    EXPECT_EQ(pool->stats().rejected_busy, 1u);
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
    EXPECT_EQ(pool->stats().rejected_busy, 0u);
    EXPECT_FALSE(sa.slot().has_handler());  // nothing left to cancel: none installed
    EXPECT_TRUE(sc.slot().has_handler());
    sa.emit(boost::asio::cancellation_type::terminal);  // nothing happens
    sc.emit(boost::asio::cancellation_type::terminal);
    settle();
    EXPECT_EQ(c.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(c.completions, 1);
    EXPECT_EQ(pool->stats().rejected_cancelled, 1u);
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
        const std::uint64_t posted = pool->diagnostics().drains_posted;
        boost::asio::post(io, [&] { pool->async_acquire(record(on_executor)); });  // runs first
        pool->async_acquire(record(off_executor));  // schedules a drain behind it
        EXPECT_EQ(pool->diagnostics().drains_posted, posted + 1);
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
    EXPECT_EQ(pool->stats().rejected_busy, 0u);
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

}  // namespace
}  // namespace fairpool::testing
