// The lease's clean-or-dirty rule (lease.hpp): (1) destroyed during stack unwinding:
// dirty; (2) an in-flight guard that ends without done(): dirty; (3) otherwise clean
// unless mark_dirty(). Each path a server meets: a plain exception, a coroutine
// cancelled while awaiting with use_awaitable (it throws) and with as_tuple + a guard,
// an `op || timer` race the timer wins, a parallel_group cancel, a cancel from a foreign
// thread posted to the coroutine's strand, a lease moved between threads, a lease a
// composition discards before user code saw it. A dirty resource is retired (reason
// dirty) and destroyed, never granted again: stats().retired_dirty counts it.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <exception>
#include <future>
#include <stdexcept>
#include <thread>

#include "fixture.hpp"

namespace fairpool::testing {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// "An operation on the resource" that never completes by itself: a wait on a timer of
// the manual clock that is never advanced that far.
asio::awaitable<void> operation_on(test_lease&) {
    manual_timer never(co_await asio::this_coro::executor, manual_clock::time_point::max());
    co_await never.async_wait(asio::use_awaitable);
}

class dirty_rule : public adapter {
protected:
    // A warm one-slot pool.
    std::unique_ptr<test_pool> pool_ = [this] {
        auto p = make_pool(options(1, 1));
        settle();
        return p;
    }();

    // What the pool did with the one lease: retired dirty (1) or kept (0); and the slot
    // idle again with the same resource or a fresh one.
    [[nodiscard]] std::uint64_t retired_dirty() {
        settle();
        return pool_->stats().retired_dirty;
    }

    // Runs `body` as a coroutine on the io_context, then `meanwhile` (the manual clock
    // moved on, say); returns whether it ended by an exception.
    template <class Body, class Meanwhile = void (*)()>
    bool run_coroutine(Body body, Meanwhile meanwhile = [] {}) {
        bool threw = false, ended = false;
        asio::co_spawn(io, std::move(body), [&](std::exception_ptr e) {
            threw = e != nullptr;
            ended = true;
        });
        settle();
        meanwhile();
        EXPECT_TRUE(ended);
        return threw;
    }
};

TEST_F(dirty_rule, a_lease_given_back_normally_is_clean_and_its_resource_reused) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        EXPECT_EQ(lease->id(), 1);
    });
    EXPECT_EQ(retired_dirty(), 0u);
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        EXPECT_EQ(lease->id(), 1);  // the same resource again
        lease.release();            // explicit release: clean too
    });
    EXPECT_EQ(retired_dirty(), 0u);
    EXPECT_EQ(log_->created, 1);
}

TEST_F(dirty_rule, mark_dirty_retires_the_resource) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        lease.mark_dirty();
    });
    EXPECT_EQ(retired_dirty(), 1u);
}

TEST_F(dirty_rule, a_lease_destroyed_by_a_plain_exception_is_dirty) {
    const bool threw = run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        throw std::runtime_error("the query failed half-way");
    });
    EXPECT_TRUE(threw);
    EXPECT_EQ(retired_dirty(), 1u);
    EXPECT_EQ(log_->destroyed, 1);  // the half-used resource is gone
}

// Outside a coroutine: a lease on the stack of a function that throws.
TEST_F(dirty_rule, a_lease_on_the_stack_of_a_throwing_function_is_dirty) {
    outcome a;
    pool_->async_acquire(record(a));
    settle();
    ASSERT_TRUE(a.lease);
    try {
        test_lease held = std::move(a.lease);
        throw std::runtime_error("failed while holding it");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(retired_dirty(), 1u);
}

// Caught inside the lease's scope: nothing unwinds past the lease, so the guard is what
// says the operation did not finish.
TEST_F(dirty_rule, an_exception_caught_in_scope_is_dirty_only_through_the_guard) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        try {
            auto guard = lease.in_flight();
            throw std::runtime_error("failed mid-way");
        } catch (const std::runtime_error&) {
        }
    });
    EXPECT_EQ(retired_dirty(), 1u);
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        try {
            throw std::runtime_error("failed before touching it");
        } catch (const std::runtime_error&) {
        }
    });
    EXPECT_EQ(retired_dirty(), 1u);  // no guard, nothing unwound past it: clean
}

TEST_F(dirty_rule, a_guard_marked_done_leaves_the_lease_clean) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        auto guard = lease.in_flight();
        EXPECT_FALSE(lease.dirty());
        guard.done();
    });
    EXPECT_EQ(retired_dirty(), 0u);
}

// A coroutine cancelled while awaiting an operation with use_awaitable: the await
// throws operation_aborted, and the lease goes during the unwinding.
TEST_F(dirty_rule, a_coroutine_cancelled_while_awaiting_with_use_awaitable_gives_its_lease_back_dirty) {
    asio::cancellation_signal cancel;
    bool aborted = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto lease = co_await pool_->async_acquire();
            try {
                co_await operation_on(lease);
            } catch (const boost::system::system_error& e) {
                aborted = e.code() == asio::error::operation_aborted;
                throw;
            }
        },
        asio::bind_cancellation_slot(cancel.slot(), [](std::exception_ptr) {}));
    settle();
    EXPECT_EQ(pool_->stats().slots_leased, 1u);
    cancel.emit(asio::cancellation_type::terminal);
    EXPECT_EQ(retired_dirty(), 1u);
    EXPECT_TRUE(aborted);
}

// The same with as_tuple: no exception, the error code says it; the guard marks it.
TEST_F(dirty_rule, a_coroutine_cancelled_while_awaiting_with_as_tuple_is_dirty_through_its_guard) {
    asio::cancellation_signal cancel;
    boost::system::error_code seen;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto lease = co_await pool_->async_acquire();
            auto guard = lease.in_flight();
            manual_timer op(co_await asio::this_coro::executor, manual_clock::time_point::max());
            auto [ec] = co_await op.async_wait(asio::as_tuple(asio::use_awaitable));
            seen = ec;
            if (!ec) guard.done();
        },
        asio::bind_cancellation_slot(cancel.slot(), [](std::exception_ptr) {}));
    settle();
    cancel.emit(asio::cancellation_type::terminal);
    EXPECT_EQ(retired_dirty(), 1u);
    EXPECT_EQ(seen, asio::error::operation_aborted);
}

// `co_await (op || timer)`: the timer wins, the operation is cancelled mid-flight.
TEST_F(dirty_rule, an_operation_that_loses_a_race_to_a_timer_leaves_the_lease_dirty) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        auto guard = lease.in_flight();
        manual_timer deadline(co_await asio::this_coro::executor, 10ms);
        auto winner = co_await (operation_on(lease) || deadline.async_wait(asio::use_awaitable));
        EXPECT_EQ(winner.index(), 1u);  // the timer
        if (winner.index() == 0) guard.done();
    }, [&] { advance(10ms); });
    EXPECT_EQ(retired_dirty(), 1u);
}

TEST_F(dirty_rule, an_operation_that_wins_its_race_and_says_done_leaves_the_lease_clean) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        auto guard = lease.in_flight();
        manual_timer op(co_await asio::this_coro::executor, 5ms);
        manual_timer deadline(co_await asio::this_coro::executor, 10ms);
        auto winner = co_await (op.async_wait(asio::use_awaitable) || deadline.async_wait(asio::use_awaitable));
        EXPECT_EQ(winner.index(), 0u);
        if (winner.index() == 0) guard.done();
    }, [&] { advance(5ms); });
    EXPECT_EQ(retired_dirty(), 0u);
}

TEST_F(dirty_rule, a_parallel_group_that_cancels_the_operation_leaves_the_lease_dirty) {
    run_coroutine([&]() -> asio::awaitable<void> {
        auto lease = co_await pool_->async_acquire();
        auto guard = lease.in_flight();
        const auto ex = co_await asio::this_coro::executor;
        manual_timer op(ex, manual_clock::time_point::max());
        manual_timer deadline(ex, 10ms);
        auto [order, op_ec, deadline_ec] =
            co_await asio::experimental::make_parallel_group(op.async_wait(asio::deferred),
                                                             deadline.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        EXPECT_EQ(order[0], 1u);
        EXPECT_EQ(op_ec, asio::error::operation_aborted);
        if (!op_ec) guard.done();
    }, [&] { advance(10ms); });
    EXPECT_EQ(retired_dirty(), 1u);
}

// The coroutine runs on a strand of a context two threads run; the cancel comes from a
// third thread, posted to that strand (a cancellation signal is not thread-safe).
TEST(dirty_rule_threads, a_cancel_from_a_foreign_thread_posted_to_the_strand_gives_the_lease_back_dirty) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    pool_options o;
    o.max_slots = 1;  // min_slots 0: nothing replaces the dirty resource, so the counts below
                      // do not depend on whether a replacement was made before the close
    pool<int> p(io.get_executor(), o, []() -> asio::awaitable<int> { co_return 7; });
    std::thread runners[] = {std::thread([&] { io.run(); }), std::thread([&] { io.run(); })};
    auto strand = asio::make_strand(io);
    asio::cancellation_signal cancel;
    std::promise<void> awaiting, ended;
    asio::co_spawn(
        strand,
        [&]() -> asio::awaitable<void> {
            auto lease = co_await p.async_acquire();
            asio::steady_timer op(co_await asio::this_coro::executor, std::chrono::hours(1));
            awaiting.set_value();
            co_await op.async_wait(asio::use_awaitable);  // throws operation_aborted
        },
        asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
            EXPECT_NE(e, nullptr);
            ended.set_value();
        }));
    awaiting.get_future().wait();
    std::thread foreign([&] { asio::post(strand, [&] { cancel.emit(asio::cancellation_type::terminal); }); });
    ended.get_future().wait();
    foreign.join();
    std::promise<void> closed;
    p.async_close([&](boost::system::error_code, close_report) { closed.set_value(); });
    closed.get_future().wait();
    EXPECT_EQ(p.stats().retired_dirty, 1u);
    EXPECT_EQ(p.stats().retired_shutdown, 0u);
    EXPECT_EQ(p.stats().spawns, 1u);
    work.reset();
    for (auto& t : runners) t.join();
}

// Moved to another thread, the lease takes that thread's count: given back normally
// there it is clean, given back by an exception there it is dirty.
TEST_F(dirty_rule, a_lease_moved_to_another_thread_is_judged_by_that_thread) {
    outcome a;
    pool_->async_acquire(record(a));
    settle();
    ASSERT_TRUE(a.lease);
    std::thread([&, l = std::move(a.lease)]() mutable {
        test_lease mine = std::move(l);
        mine.release();
    }).join();
    EXPECT_EQ(retired_dirty(), 0u);

    outcome b;
    pool_->async_acquire(record(b));
    settle();
    ASSERT_TRUE(b.lease);
    std::thread([&, l = std::move(b.lease)]() mutable {
        try {
            test_lease mine = std::move(l);
            throw std::runtime_error("failed on the worker thread");
        } catch (const std::runtime_error&) {
        }
    }).join();
    EXPECT_EQ(retired_dirty(), 1u);
}

// Moved into during an unwinding (a destructor run by a throw), and given back in that
// same destructor: as many exceptions in flight as when it came, so clean. The count is
// taken where the lease was moved into, not where it was first made.
TEST_F(dirty_rule, a_lease_moved_into_during_unwinding_and_given_back_there_is_clean) {
    outcome a;
    pool_->async_acquire(record(a));
    settle();
    ASSERT_TRUE(a.lease);
    struct hands_back {
        test_lease* from;
        ~hands_back() {
            test_lease here = std::move(*from);  // std::uncaught_exceptions() is 1 here
            here.release();
        }
    };
    try {
        hands_back h{&a.lease};
        throw std::runtime_error("unwinding");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(retired_dirty(), 0u);
}

// `acquire || acquire` with two idle slots: both are granted at once, the composition
// keeps the first and destroys the second's lease itself, before any user code saw
// it: clean, and both resources stay.
TEST_F(dirty_rule, a_lease_a_composition_discards_before_user_code_saw_it_is_clean) {
    auto two = make_pool(options(2, 2));
    settle();
    run_coroutine([&]() -> asio::awaitable<void> {
        auto first = co_await (two->async_acquire(asio::use_awaitable) || two->async_acquire(asio::use_awaitable));
        EXPECT_EQ(first.index(), 0u);
    });
    settle();
    const pool_stats s = two->stats();
    EXPECT_EQ(s.grants, 2u);
    EXPECT_EQ(s.retired_dirty, 0u);
    EXPECT_EQ(s.slots_idle, 2u);
}

}  // namespace
}  // namespace fairpool::testing
