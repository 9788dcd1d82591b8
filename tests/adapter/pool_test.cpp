// The Boost.Asio adapter on a real io_context (one thread unless a test says
// otherwise): grants, ordering, fairness, cancellation, deregistration, bounds,
// close and shutdown, lifetime, dirty resources, factory failures.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

#include "fixture.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

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
    std::vector<char> order;
    test_lease current;
    auto take = [&](char who) {
        return [&, who](error_code ec, test_lease l) {
            ASSERT_FALSE(ec);
            order.push_back(who);
            current = std::move(l);
        };
    };
    for (int i = 0; i < 3; ++i) a.async_acquire(take('a'));
    for (int i = 0; i < 3; ++i) b.async_acquire(take('b'));
    for (int i = 0; i < 3; ++i) c.async_acquire(take('c'));
    settle();
    blocker.lease.release();
    for (int i = 0; i < 9; ++i) {
        settle();
        current.release();
    }
    EXPECT_EQ(std::string(order.begin(), order.end()), "abcabcabc");
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
        signal.emit(type);
        signal.emit(type);  // a second emit sends nothing more
        settle();
        ASSERT_TRUE(waiter.done);
        EXPECT_EQ(waiter.ec, boost::asio::error::operation_aborted);
        EXPECT_FALSE(waiter.lease);
        EXPECT_EQ(waiter.completions, 1);
        EXPECT_EQ(pool->stats().rejections[static_cast<int>(core::reject_reason::cancelled)], 1u);
    }
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
    EXPECT_FALSE(other.done);
    holder.lease.release();
    settle();
    EXPECT_TRUE(other.lease);
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
    EXPECT_FALSE(a.done);
    EXPECT_FALSE(b.done);
    EXPECT_EQ(c.ec, make_error_code(error::saturated));
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
    int busy = 0;
    for (const auto& out : outcomes) busy += out.ec == make_error_code(error::busy);
    EXPECT_EQ(busy, 2);
    EXPECT_FALSE(outcomes[0].ec);  // the first three reached the scheduler
    EXPECT_EQ(outcomes[2].ec, make_error_code(error::saturated));
    EXPECT_EQ(make_error_code(error::busy), boost::system::errc::resource_unavailable_try_again);
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
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(log_->destroyed, log_->created);
}

TEST_F(adapter, close_with_a_deadline_while_a_lease_is_out_times_out_then_closes) {
    auto pool = make_pool(options(2, 1));
    settle();
    outcome holder;
    pool->async_acquire(record(holder));
    settle();
    error_code first;
    close_report report;
    pool->async_close(std::chrono::steady_clock::now() + std::chrono::milliseconds(20), [&](error_code ec, close_report r) {
        first = ec;
        report = r;
    });
    run_for(std::chrono::milliseconds(60));
    EXPECT_EQ(first, make_error_code(error::timed_out));
    EXPECT_FALSE(report.closed);
    EXPECT_EQ(report.leases_out, 1u);
    bool closed = false;
    pool->async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });  // awaited again
    settle();
    EXPECT_FALSE(closed);
    holder.lease.release();
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
    EXPECT_FALSE(state.expired());
    EXPECT_EQ(survivor->id() > 0, true);
    survivor.release();
    settle();
    EXPECT_EQ(log_->destroyed, log_->created);
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
    EXPECT_EQ(pool->stats().retirements[static_cast<int>(core::retire_reason::dirty)], dirty.size());
}

TEST_F(adapter, factory_failures_back_off_and_waiters_time_out_cleanly) {
    log_->fail_creation = true;
    auto pool = make_pool(options(1, 0));
    settle();
    outcome a;
    pool->async_acquire(std::chrono::milliseconds(30), record(a));
    run_for(std::chrono::milliseconds(80));
    ASSERT_TRUE(a.done);
    EXPECT_EQ(a.ec, make_error_code(error::timeout));
    EXPECT_EQ(a.completions, 1);
    const core::stats s = pool->stats();
    EXPECT_GE(s.spawn_failures, 2u);           // retried after each backoff
    EXPECT_LE(s.spawn_failures, 30u / 1 + 1);  // but not hammered: ≥ 1 ms apart
    log_->fail_creation = false;
    outcome b;
    pool->async_acquire(std::chrono::seconds(5), record(b));
    for (int i = 0; i < 100 && !b.done; ++i) run_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(b.lease);  // recovered
}

TEST_F(adapter, one_actor_and_no_task_per_acquire_or_release) {
    auto pool = make_pool(options(1, 1));
    settle();
    const std::uint64_t before = pool->drains_posted();
    int cycles = 0;
    std::function<void(error_code, test_lease)> again = [&](error_code ec, test_lease l) {
        ASSERT_FALSE(ec);
        l.release();
        if (++cycles < 10'000) pool->async_acquire(again);
    };
    pool->async_acquire(again);
    settle();
    EXPECT_EQ(cycles, 10'000);
    // One drain per command at most (acquire, release), coalesced when they meet.
    EXPECT_LE(pool->drains_posted() - before, 2u * 10'000);
    EXPECT_GE(pool->drains_posted() - before, 10'000u);
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
    o = options(0);
    try {
        make_pool(o);
        ADD_FAILURE();
    } catch (const core::config_error& e) {
        EXPECT_NE(std::string(e.what()).find("scheduler.max_slots"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fairpool::testing
