// The Boost.Asio adapter's closing and resources, on a real io_context and the test's
// manual clock: close, close deadlines and cancelled closes, shutdown when every object goes, dirty
// resources, factory failures and their backoff, create timeout, retire grace, close
// functions that hang or throw, leak reports. No test sleeps or reads the time.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <array>

#include "fixture.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

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
    EXPECT_EQ(ec, make_error_code(error::timeout));
    bool closed = false;
    pool->async_close(fairpool::forever, [&](error_code e, close_report r) { closed = !e && r.closed; });
    advance(24h);  // a timeout too large for the clock saturates: never
    EXPECT_FALSE(closed);
    holder.lease.release();
    settle();
    EXPECT_TRUE(closed);
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
    outcome holder;
    auto pool = pool_with_a_lease_out(holder, 2);
    close_outcome c;
    pool->async_close(manual_clock::now() + 20ms, c.handler());
    advance(20ms - 1ns);
    EXPECT_EQ(c.completions, 0) << "the close deadline fired early";
    advance(1ns);
    ASSERT_EQ(c.completions, 1);
    EXPECT_EQ(c.ec, make_error_code(error::timeout));
    EXPECT_FALSE(c.report.closed);
    EXPECT_EQ(c.report.leases_out, 1u);
    EXPECT_EQ(c.report.waiters_queued, 0u);
    EXPECT_EQ(c.report.slots_spawning, 0u);
    EXPECT_EQ(c.report.slots_retiring, 0u);
    advance(1h);
    EXPECT_EQ(c.completions, 1);
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
// A waiting close is cancelled per operation, terminal or partial: it completes once,
// with operation_aborted and what is still out, and the pool goes on closing (a later
// close completes when it closed). A total cancellation is not honoured (the close
// has already asked for the shutdown, a side effect): that close waits on and
// completes with the pool. A cancellation after a close completed reaches nothing.
TEST_F(adapter, a_waiting_close_cancelled_terminal_or_partial_completes_aborted_and_the_pool_still_closes) {
    outcome holder;
    auto pool = pool_with_a_lease_out(holder, 2);
    std::array<boost::asio::cancellation_signal, 3> signals;
    std::array<close_outcome, 3> closes;
    for (std::size_t i = 0; i < closes.size(); ++i)
        pool->async_close(manual_clock::now() + 1h, boost::asio::bind_cancellation_slot(signals[i].slot(), closes[i].handler()));
    settle();
    signals[0].emit(boost::asio::cancellation_type::terminal);
    signals[1].emit(boost::asio::cancellation_type::partial);
    signals[2].emit(boost::asio::cancellation_type::total);
    settle();
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(closes[i].completions, 1) << i;
        EXPECT_EQ(closes[i].ec, boost::asio::error::operation_aborted) << i;
        expect_report(closes[i].report, {.leases_out = 1});
    }
    EXPECT_EQ(closes[2].completions, 0) << "a total cancellation was honoured after the close asked for the shutdown";
    signals[0].emit(boost::asio::cancellation_type::terminal);  // completed: reaches nothing
    settle();
    EXPECT_EQ(closes[0].completions, 1);

    bool closed = false;
    pool->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    holder.lease.release();
    settle();
    EXPECT_TRUE(closed) << "the cancelled closes stopped the pool's closing";
    EXPECT_EQ(closes[2].completions, 1);
    EXPECT_FALSE(closes[2].ec);
    EXPECT_TRUE(closes[2].report.closed);
    signals[2].emit(boost::asio::cancellation_type::terminal);  // completed with the pool: reaches nothing
    advance(2h);
    for (const close_outcome& c : closes) EXPECT_EQ(c.completions, 1);
    EXPECT_EQ(closes[0].ec, boost::asio::error::operation_aborted);
}

// The way a coroutine gives up waiting for a close: the close against a timer, with
// awaitable operators; the timer wins, the close is cancelled and completes, and the
// coroutine goes on. (Before closes could be cancelled, it waited for the pool.)
TEST_F(adapter, a_coroutine_stops_waiting_for_a_close_when_its_own_timer_wins) {
    outcome holder;
    auto pool = pool_with_a_lease_out(holder, 1);
    bool gave_up = false;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            using namespace boost::asio::experimental::awaitable_operators;
            manual_timer patience(co_await boost::asio::this_coro::executor, manual_clock::now() + 5ms);
            const auto winner = co_await (pool->async_close(boost::asio::as_tuple(boost::asio::use_awaitable)) ||
                                          patience.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable)));
            gave_up = winner.index() == 1;
        },
        boost::asio::detached);
    settle();
    advance(5ms);
    EXPECT_TRUE(gave_up) << "the coroutine still waits for a close it stopped caring about";
    EXPECT_EQ(pool->stats().slots_leased, 1u);
    holder.lease.release();
    bool closed = false;
    pool->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_TRUE(closed);
}

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
    EXPECT_EQ(results, (std::vector<error_code>{make_error_code(error::timeout), make_error_code(error::timeout)}));
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
        state = pool->diagnostics().lifetime;
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
    EXPECT_EQ(pool->stats().retired_dirty, 7u);
    EXPECT_EQ(log_->created, 8);  // one more for each dirty resource
    EXPECT_EQ(log_->destroyed, 7);
}

// A lease moved, by construction or by assignment, carries its dirty mark: released
// from where it was moved to, its resource is retired and never handed out again.
TEST_F(adapter, a_moved_lease_keeps_its_dirty_mark) {
    auto pool = make_pool(options(1, 1));
    settle();
    const auto dirty_retirements = [&] {
        return pool->stats().retired_dirty;
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
    EXPECT_EQ(pool->stats().rejected_timeout, 1u);
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

// A factory that never answers: it waits on a timer of the manual clock that never
// expires.
boost::asio::awaitable<resource> never_answers() {
    manual_timer never(co_await boost::asio::this_coro::executor, manual_clock::time_point::max());
    co_await never.async_wait(boost::asio::use_awaitable);
    co_return resource(0, nullptr);
}

TEST_F(adapter, a_resource_whose_close_hangs_is_dropped_after_retire_grace) {
    auto pool_owner = one_slot_whose_close_hangs();
    test_pool& pool = *pool_owner;
    retire_one_dirty(pool);
    EXPECT_EQ(log_->closed, 1);  // its close has begun, and hangs
    EXPECT_EQ(log_->destroyed, 0);
    EXPECT_EQ(pool.stats().slots_retiring, 1u);
    advance(100ms - 1ns);
    EXPECT_EQ(log_->destroyed, 0) << "dropped before its retire grace was over";
    EXPECT_EQ(pool.stats().slots_retiring, 1u);
    advance(1ns);
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_EQ(pool.stats().slots_retiring, 0u);
    EXPECT_EQ(log_->created, 2);  // min_slots: replaced
    EXPECT_EQ(pool.stats().slots_idle, 1u);
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
    EXPECT_EQ(pool.stats().slots_retiring, 1u);
    advance(100ms - 1ns);
    EXPECT_EQ(pool.stats().slots_retiring, 1u) << "freed before its grace";
    advance(1ns);
    EXPECT_EQ(pool.stats().slots_retiring, 0u);
    EXPECT_EQ(log_->created, 2);  // min_slots: replaced, while the old close still runs
    EXPECT_EQ(pool.stats().slots_idle, 1u);
    EXPECT_EQ(log_->destroyed, 0) << "destroyed while its close hook still uses it";
    advance(10s);  // the hook returns at last
    EXPECT_EQ(log_->destroyed, 1);
    EXPECT_EQ(pool.stats().retired_dirty, 1u);
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
    EXPECT_EQ(pool.stats().slots_spawning, 1u);
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
    EXPECT_EQ(pool.stats().slots_leased, 1u);
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
    ASSERT_EQ(pool.stats().slots_retiring, 1u);
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
    EXPECT_EQ(pool.stats().slots_retiring, 0u);
    EXPECT_EQ(log_->created, 2);
}

TEST_F(adapter, a_lease_held_past_leak_threshold_is_reported_once) {
    auto o = options(2, 2);
    o.leak_threshold = std::chrono::milliseconds(50);
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
    EXPECT_EQ(pool->stats().slots_idle, 2u);
}

}  // namespace
}  // namespace fairpool::testing
