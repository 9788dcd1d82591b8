// fairpool's operations composed with Asio's own tools, as server authors use them:
// experimental::awaitable_operators (`||` racing a timer or another acquire, `&&`),
// experimental::make_parallel_group, bind_cancellation_slot with a cancellation_signal
// emitted with each type (terminal, partial, total) at each stage of an acquire, co_spawn
// cancelled as a whole, experimental::use_promise, as_tuple and redirect_error. On the
// test's manual clock and one thread the outcomes are pinned exactly; then the same
// compositions run on an io_context run by one thread and by two, with random timing,
// and only their outcomes and the pool's final counters are checked.
//
// The rules pinned (README "Using it with Boost.Asio", docs/CONTRACT.md section 8):
// a queued acquire honours every cancellation type alike and completes with
// boost::asio::error::operation_aborted (one `cancelled` rejection); a cancel that
// crosses a grant loses and the lease is delivered; a lease that is destroyed goes back
// clean unless mark_dirty() was called or it was destroyed during stack unwinding (a
// coroutine that throws, operation_aborted included), and a dirty one is retired (its
// close hook runs) and never handed out again. An acquire's and a close's initiation name the pool's
// executor as theirs, so use_promise completes there (it took the system executor, and
// a coroutine awaiting the promise resumed on a system thread, before they did).
#include <gtest/gtest.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/experimental/promise.hpp>
#include <boost/asio/experimental/use_promise.hpp>
#include <boost/asio/multiple_exceptions.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/version.hpp>
#include <array>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "fixture.hpp"

namespace fairpool::testing {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;
using ct = asio::cancellation_type;

constexpr std::array<ct, 3> every_type{ct::terminal, ct::partial, ct::total};

const char* name(ct type) {
    if (type == ct::terminal) return "terminal";
    if (type == ct::partial) return "partial";
    return "total";
}

std::uint64_t retired_total(const pool_stats& s) {
    return s.retired_dirty + s.retired_max_uses + s.retired_max_lifetime + s.retired_idle + s.retired_died +
           s.retired_shutdown + s.retired_reset_failed + s.retired_resize;
}
// Every outcome of an acquire that reached the scheduler: a grant or a rejection.
std::uint64_t outcomes(const pool_stats& s) {
    return s.grants_immediate + s.grants_after_wait + s.rejected_saturated + s.rejected_timeout +
           s.rejected_cancelled + s.rejected_deregistered + s.rejected_closed;
}

// What a coroutine spawned by the test ended with.
template <class T>
struct co_result {
    int completions = 0;
    std::exception_ptr error;
    std::optional<T> value;
    [[nodiscard]] bool done() const { return completions > 0; }
    // The system_error it threw (an empty code if it threw nothing or something else).
    [[nodiscard]] error_code thrown() const {
        if (!error) return {};
        try {
            std::rethrow_exception(error);
        } catch (const boost::system::system_error& e) {
            return e.code();
        } catch (...) {
        }
        return {};
    }
};

template <class T>
auto into(co_result<T>& r) {
    return [&r](std::exception_ptr e, T v) {
        ++r.completions;
        r.error = e;
        if (!e) r.value.emplace(std::move(v));
    };
}

// The tests' cancellation signals, kept until after the io_context is gone: an acquire
// clears its handler's cancellation slot on every way out (its delivery, or its
// destruction unrun when the context shuts down), so a signal must outlive the
// operation bound to it, as Asio asks, even when a failed assertion leaves one pending.
struct signal_keeper {
    std::deque<asio::cancellation_signal> signals;
};

// An acquire bound to a cancellation signal of the test's, and what it got.
struct signalled {
    asio::cancellation_signal& signal;
    outcome out;
};

class compose : public signal_keeper, public adapter {
protected:
    pool_stats stats() const { return pool_->stats(); }
    asio::cancellation_signal& new_signal() { return signals.emplace_back(); }

    // A warm pool of `n` slots whose every slot is leased to one of `holders`.
    test_pool& all_leased(std::vector<outcome>& holders, std::uint64_t n) {
        pool_.reset();
        log_ = std::make_shared<resource_log>();  // resources numbered from 1 again
        pool_ = make_pool(options(n, n));
        settle();
        holders.resize(n);
        for (auto& h : holders) pool_->async_acquire(record(h));
        settle();
        for (auto& h : holders) EXPECT_TRUE(h.lease);
        return *pool_;
    }

    // A pool of one slot, leased to holders[0], and `w`'s acquire, bound to its signal,
    // queued behind it (settled: it reached the actor).
    test_pool& queued_behind_a_holder(std::vector<outcome>& holders, signalled& w) {
        auto& pool = all_leased(holders, 1);
        pool.async_acquire(asio::bind_cancellation_slot(w.signal.slot(), record(w.out)));
        settle();
        return pool;
    }

    // A warm pool of `n` idle slots.
    test_pool& warm(std::uint64_t n) {
        pool_.reset();
        log_ = std::make_shared<resource_log>();
        pool_ = make_pool(options(n, n));
        settle();
        return *pool_;
    }

    // Runs `f` as a handler on the io_context (the pool's executor: a release there is
    // fed to the actor inline), then everything it made ready.
    template <class F>
    void on_executor(F f) {
        asio::post(io, std::move(f));
        settle();
    }

    // An acquire granted at once returns the resource `expect_id`; it goes back clean.
    void expect_immediate_grant_of(int expect_id) {
        const auto before = stats();
        outcome next;
        pool_->async_acquire(record(next));
        settle();
        ASSERT_TRUE(next.done);
        ASSERT_FALSE(next.ec);
        EXPECT_EQ(next.lease->id(), expect_id);
        EXPECT_EQ(stats().grants_immediate, before.grants_immediate + 1);
    }

    std::unique_ptr<test_pool> pool_;
};

// ---------------------------------------------------------------------------------
// awaitable_operators: `acquire || timer`, `acquire || acquire`, `acquire && ...`

TEST_F(compose, or_timer_wins_cancels_the_queued_acquire_and_leaks_nothing) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    auto h = pool.make_handle();
    co_result<std::size_t> r;
    asio::co_spawn(
        io,
        [&]() -> awaitable<std::size_t> {
            manual_timer timeout(co_await asio::this_coro::executor, 10ms);
            auto v = co_await (h.async_acquire(use_awaitable) || timeout.async_wait(use_awaitable));
            co_return v.index();
        },
        into(r));
    settle();
    ASSERT_FALSE(r.done());
    EXPECT_EQ(stats().queued_waiters, 1U);
    advance(10ms);
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_EQ(*r.value, 1U);  // the timer won
    auto s = stats();
    EXPECT_EQ(s.rejected_cancelled, 1U);
    EXPECT_EQ(outcomes(s), s.acquires);  // the acquire got exactly its one outcome
    EXPECT_EQ(s.queued_waiters, 0U);
    EXPECT_EQ(s.active_handles, 0U);
    EXPECT_EQ(s.slots_leased, 1U);  // the holder's only
    EXPECT_EQ(h.stats().rejected_cancelled, 1U);
    EXPECT_EQ(h.stats().leases_out, 0U);
    holders[0].lease.release();
    settle();
    s = stats();
    EXPECT_EQ(s.slots_idle, 1U);
    EXPECT_EQ(s.slots_leased, 0U);
    EXPECT_EQ(retired_total(s), 0U);
    expect_immediate_grant_of(1);  // the same resource, at once: nothing waits for it
    EXPECT_EQ(log_->created, 1);
}

TEST_F(compose, or_acquire_wins_cancels_the_timer_and_the_lease_returns_clean) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    co_result<int> r;
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            manual_timer timeout(co_await asio::this_coro::executor, 10ms);
            auto v = co_await (pool.async_acquire(use_awaitable) || timeout.async_wait(use_awaitable));
            if (v.index() != 0) co_return -1;
            auto lease = std::get<0>(std::move(v));
            co_return lease->id();  // usable; released clean as the coroutine ends
        },
        into(r));
    settle();
    ASSERT_FALSE(r.done());
    holders[0].lease.release();
    settle();  // no time passes: the coroutine ends only if the timer was cancelled
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_EQ(*r.value, 1);
    const auto s = stats();
    EXPECT_EQ(s.grants_after_wait, 1U);
    EXPECT_EQ(s.rejected_cancelled, 0U);
    EXPECT_EQ(s.slots_idle, 1U);
    EXPECT_EQ(retired_total(s), 0U);  // back clean
    EXPECT_EQ(log_->closed, 0);
    expect_immediate_grant_of(1);
}

// Two acquires raced on a pool whose two slots are both leased; both holders give
// their slots back in one handler, so both grants are decided and both completions
// posted before either runs. The first to run wins; the group's cancellation reaches
// the second after its grant was decided: it loses, the second lease is delivered
// all the same, and `||` discards it: a lease destroyed unused goes back clean.
TEST_F(compose, or_of_two_acquires_both_granted_returns_the_loser_clean) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 2);
    auto a = pool.make_handle(), b = pool.make_handle();
    co_result<int> r;
    test_lease won;
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            auto v = co_await (a.async_acquire(use_awaitable) || b.async_acquire(use_awaitable));
            const int index = static_cast<int>(v.index());
            won = index == 0 ? std::get<0>(std::move(v)) : std::get<1>(std::move(v));
            co_return index;
        },
        into(r));
    settle();
    ASSERT_FALSE(r.done());
    EXPECT_EQ(stats().queued_waiters, 2U);
    const auto fed_before = pool.diagnostics().commands_fed;
    on_executor([&] {
        holders[0].lease.release();  // fed inline: a's grant, posted
        holders[1].lease.release();  // b's grant, posted
    });
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_EQ(*r.value, 0);  // a's completion ran first
    ASSERT_TRUE(won);
    // Two releases, the cancel that b's slot sent after its grant, b's lease coming back.
    EXPECT_EQ(pool.diagnostics().commands_fed - fed_before, 4U);
    const auto s = stats();
    EXPECT_EQ(s.grants_after_wait, 2U);
    EXPECT_EQ(s.rejected_cancelled, 0U);  // the cancel crossed the grant: lost
    EXPECT_EQ(outcomes(s), s.acquires);
    EXPECT_EQ(s.slots_leased, 1U);  // a's, held by `won`
    EXPECT_EQ(s.slots_idle, 1U);    // b's came back
    EXPECT_EQ(retired_total(s), 0U);                        // clean
    EXPECT_EQ(a.stats().grants, 1U);
    EXPECT_EQ(b.stats().grants, 1U);
    EXPECT_EQ(b.stats().leases_out, 0U);
    EXPECT_EQ(b.stats().rejected_cancelled, 0U);
    const int other = won->id() == 1 ? 2 : 1;
    expect_immediate_grant_of(other);  // b's resource, reused: it was clean
}

// `acquire && timer`: the acquire is granted, the timer then fires, the lease comes out.
TEST_F(compose, and_with_a_timer_keeps_the_lease) {
    auto& pool = warm(1);
    co_result<int> r;
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            manual_timer t(co_await asio::this_coro::executor, 5ms);
            auto lease = co_await (pool.async_acquire(use_awaitable) && t.async_wait(use_awaitable));
            co_return lease->id();
        },
        into(r));
    settle();
    ASSERT_FALSE(r.done());
    EXPECT_EQ(stats().slots_leased, 1U);
    advance(5ms);
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_EQ(*r.value, 1);
    EXPECT_EQ(stats().slots_idle, 1U);
}

// `acquire && acquire` when one fails: the other, queued, is cancelled (wait_for_one_error).
TEST_F(compose, and_of_two_acquires_one_saturated_cancels_the_other) {
    // One slot held; max_waiters 1: the first acquire queues, the second is saturated.
    auto o = options(1, 1);
    o.max_waiters = 1;
    pool_ = make_pool(o);
    settle();
    outcome holder;
    pool_->async_acquire(record(holder));
    settle();
    ASSERT_TRUE(holder.lease);
    co_result<int> both;
    auto x = pool_->make_handle(), y = pool_->make_handle();
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            auto [lx, ly] = co_await (x.async_acquire(use_awaitable) && y.async_acquire(use_awaitable));
            co_return lx->id() + ly->id();
        },
        into(both));
    settle();
    ASSERT_TRUE(both.done());
    // Both branches failed (y saturated, then x cancelled): Asio throws multiple_exceptions.
    ASSERT_TRUE(both.error);
    EXPECT_THROW(std::rethrow_exception(both.error), asio::multiple_exceptions);
    const auto s = stats();
    EXPECT_EQ(s.rejected_saturated, 1U);
    EXPECT_EQ(s.rejected_cancelled, 1U);  // x, cancelled by the group
    EXPECT_EQ(x.stats().rejected_cancelled, 1U);
    EXPECT_EQ(y.stats().rejected_saturated, 1U);
    EXPECT_EQ(s.queued_waiters, 0U);
    EXPECT_EQ(outcomes(s), s.acquires);
    holder.lease.release();
    settle();
    expect_immediate_grant_of(1);
}

// ---------------------------------------------------------------------------------
// make_parallel_group(...).async_wait(wait_for_one(), handler), with callbacks

TEST_F(compose, parallel_group_timer_wins_then_acquire_wins) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    auto h = pool.make_handle();
    struct result {
        int completions = 0;
        std::array<std::size_t, 2> order{};
        error_code acquire_ec, timer_ec;
        test_lease lease;
    };
    const auto race = [&](manual_timer& timer, result& out) {
        asio::experimental::make_parallel_group(h.async_acquire(asio::deferred), timer.async_wait(asio::deferred))
            .async_wait(asio::experimental::wait_for_one(),
                        [&out](std::array<std::size_t, 2> order, error_code ae, test_lease l, error_code te) {
                            ++out.completions;
                            out.order = order;
                            out.acquire_ec = ae;
                            out.lease = std::move(l);
                            out.timer_ec = te;
                        });
    };
    manual_timer t1(io, 10ms);
    result first;
    race(t1, first);
    settle();
    ASSERT_EQ(first.completions, 0);
    advance(10ms);
    ASSERT_EQ(first.completions, 1);
    EXPECT_EQ(first.order, (std::array<std::size_t, 2>{1, 0}));
    EXPECT_FALSE(first.timer_ec);
    EXPECT_EQ(first.acquire_ec, asio::error::operation_aborted);
    EXPECT_FALSE(first.lease);
    EXPECT_EQ(stats().rejected_cancelled, 1U);
    EXPECT_EQ(stats().queued_waiters, 0U);

    manual_timer t2(io, 10ms);
    result second;
    race(t2, second);
    settle();
    ASSERT_EQ(second.completions, 0);
    holders[0].lease.release();
    settle();  // no time passes: the group completes only if the timer was cancelled
    ASSERT_EQ(second.completions, 1);
    EXPECT_EQ(second.order, (std::array<std::size_t, 2>{0, 1}));
    EXPECT_FALSE(second.acquire_ec);
    EXPECT_EQ(second.timer_ec, asio::error::operation_aborted);
    ASSERT_TRUE(second.lease);
    EXPECT_EQ(second.lease->id(), 1);
    EXPECT_EQ(stats().rejected_cancelled, 1U);  // still the first race's only
    second.lease.release();
    settle();
    EXPECT_EQ(retired_total(stats()), 0U);
    expect_immediate_grant_of(1);
}

// The other operation's completion runs first, but the grant was decided (its
// completion posted) before the group's cancellation reached the acquire: the
// acquire still completes with its lease, which the group hands over.
TEST_F(compose, parallel_group_cancel_after_the_grant_was_posted_delivers_the_lease) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    manual_timer other(io, 1h);
    int completions = 0;
    std::array<std::size_t, 2> order{};
    error_code acquire_ec, other_ec;
    test_lease lease;
    asio::experimental::make_parallel_group(other.async_wait(asio::deferred), pool.async_acquire(asio::deferred))
        .async_wait(asio::experimental::wait_for_one(),
                    [&](std::array<std::size_t, 2> o, error_code te, error_code ae, test_lease l) {
                        ++completions;
                        order = o;
                        other_ec = te;
                        acquire_ec = ae;
                        lease = std::move(l);
                    });
    settle();
    ASSERT_EQ(stats().queued_waiters, 1U);
    on_executor([&] {
        other.cancel();               // the other operation's completion, queued first
        holders[0].lease.release();   // then the grant's
    });
    ASSERT_EQ(completions, 1);
    EXPECT_EQ(order, (std::array<std::size_t, 2>{0, 1}));
    EXPECT_EQ(other_ec, asio::error::operation_aborted);
    EXPECT_FALSE(acquire_ec);
    ASSERT_TRUE(lease);
    const auto s = stats();
    EXPECT_EQ(s.rejected_cancelled, 0U);
    EXPECT_EQ(s.grants_after_wait, 1U);
    EXPECT_EQ(outcomes(s), s.acquires);
    lease = test_lease();  // discarded unused: back clean
    settle();
    EXPECT_EQ(retired_total(stats()), 0U);
    EXPECT_EQ(stats().slots_idle, 1U);
    expect_immediate_grant_of(1);
}

// ---------------------------------------------------------------------------------
// bind_cancellation_slot + cancellation_signal: each type at each stage

// Stage 1: emitted before the acquire reached the actor (pushed into the mailbox from
// this thread, its drain not yet run). The drain takes acquires before cancels: with
// every slot leased the acquire queues and the cancel then rejects it; with an idle slot
// it is granted at once and the cancel finds nobody.
TEST_F(compose, signal_before_the_acquire_reaches_the_actor) {
    for (const ct type : every_type) {
        SCOPED_TRACE(name(type));
        std::vector<outcome> holders;
        auto& pool = all_leased(holders, 1);
        signalled w{new_signal(), {}};
        pool.async_acquire(asio::bind_cancellation_slot(w.signal.slot(), record(w.out)));
        EXPECT_TRUE(w.signal.slot().has_handler());
        w.signal.emit(type);
        EXPECT_EQ(stats().acquires, 1U);  // the holder's only: nothing drained yet
        settle();
        ASSERT_TRUE(w.out.done);
        EXPECT_EQ(w.out.completions, 1);
        EXPECT_EQ(w.out.ec, asio::error::operation_aborted);
        EXPECT_FALSE(w.out.lease);
        EXPECT_EQ(stats().rejected_cancelled, 1U);
        EXPECT_EQ(stats().acquires, 2U);
        EXPECT_EQ(stats().queued_waiters, 0U);
        EXPECT_FALSE(w.signal.slot().has_handler());

        auto& idle = warm(1);
        signalled g{new_signal(), {}};
        idle.async_acquire(asio::bind_cancellation_slot(g.signal.slot(), record(g.out)));
        g.signal.emit(type);
        settle();
        ASSERT_TRUE(g.out.done);
        EXPECT_EQ(g.out.completions, 1);
        EXPECT_FALSE(g.out.ec);
        EXPECT_TRUE(g.out.lease);
        EXPECT_EQ(stats().rejected_cancelled, 0U);
        EXPECT_EQ(stats().grants_immediate, 1U);
    }
}

// Stage 2: emitted while the acquire is queued: every type cancels it.
TEST_F(compose, signal_while_queued_cancels_for_every_type) {
    for (const ct type : every_type) {
        SCOPED_TRACE(name(type));
        std::vector<outcome> holders;
        signalled w{new_signal(), {}};
        queued_behind_a_holder(holders, w);
        ASSERT_FALSE(w.out.done);
        ASSERT_EQ(stats().queued_waiters, 1U);
        on_executor([&] { w.signal.emit(type); });
        ASSERT_TRUE(w.out.done);
        EXPECT_EQ(w.out.completions, 1);
        EXPECT_EQ(w.out.ec, asio::error::operation_aborted);
        EXPECT_EQ(stats().rejected_cancelled, 1U);
        EXPECT_EQ(stats().queued_waiters, 0U);
        EXPECT_EQ(stats().slots_leased, 1U);
        holders[0].lease.release();
        settle();
        expect_immediate_grant_of(1);
    }
}

// Stage 3: the grant was decided and its completion posted, the handler has not run:
// the cancel loses, the lease is delivered, nothing is counted cancelled.
TEST_F(compose, signal_after_the_grant_was_posted_loses_for_every_type) {
    for (const ct type : every_type) {
        SCOPED_TRACE(name(type));
        std::vector<outcome> holders;
        signalled w{new_signal(), {}};
        queued_behind_a_holder(holders, w);
        bool posted_not_run = false;
        on_executor([&] {
            holders[0].lease.release();  // fed inline: the grant, its completion posted
            posted_not_run = !w.out.done && stats().grants_after_wait == 1;
            w.signal.emit(type);
        });
        EXPECT_TRUE(posted_not_run);
        ASSERT_TRUE(w.out.done);
        EXPECT_EQ(w.out.completions, 1);
        EXPECT_FALSE(w.out.ec);
        ASSERT_TRUE(w.out.lease);
        EXPECT_EQ(w.out.lease->id(), 1);
        EXPECT_EQ(stats().rejected_cancelled, 0U);
        EXPECT_EQ(stats().slots_leased, 1U);
        w.out.lease.release();
        settle();
        EXPECT_EQ(retired_total(stats()), 0U);
        expect_immediate_grant_of(1);
    }
}

// Stage 4: emitted after the handler ran: the slot holds nothing of the pool's any more.
TEST_F(compose, signal_after_completion_reaches_nothing) {
    for (const ct type : every_type) {
        SCOPED_TRACE(name(type));
        std::vector<outcome> holders;
        signalled w{new_signal(), {}};
        auto& pool = queued_behind_a_holder(holders, w);
        holders[0].lease.release();
        settle();
        ASSERT_TRUE(w.out.lease);
        EXPECT_FALSE(w.signal.slot().has_handler());
        const auto fed = pool.diagnostics().commands_fed;
        const auto before = stats();
        on_executor([&] { w.signal.emit(type); });
        EXPECT_EQ(pool.diagnostics().commands_fed, fed);  // no cancel was sent
        EXPECT_EQ(stats(), before);
        EXPECT_EQ(w.out.completions, 1);
    }
}

// ---------------------------------------------------------------------------------
// co_spawn(..., bind_cancellation_slot(...)): cancelling a whole coroutine

// A coroutine suspended in an acquire. Its cancellation state lets only terminal
// cancellation through by default (Asio's enable_terminal_cancellation): partial and
// total never reach the acquire, which stays queued and is granted later. With
// enable_total_cancellation every type reaches it, and every type cancels it.
TEST_F(compose, co_spawn_cancelled_while_suspended_in_an_acquire) {
    for (const bool let_all_through : {false, true}) {
        for (const ct type : every_type) {
            SCOPED_TRACE(std::string(name(type)) + (let_all_through ? ", enable_total_cancellation" : ", default"));
            std::vector<outcome> holders;
            auto& pool = all_leased(holders, 1);
            auto& signal = new_signal();
            co_result<int> r;
            asio::co_spawn(
                io,
                [&pool, let_all_through]() -> awaitable<int> {
                    if (let_all_through)
                        co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
                    auto lease = co_await pool.async_acquire(use_awaitable);
                    co_return lease->id();
                },
                asio::bind_cancellation_slot(signal.slot(), into(r)));
            settle();
            ASSERT_EQ(stats().queued_waiters, 1U);
            on_executor([&] { signal.emit(type); });
            const bool cancels = let_all_through || type == ct::terminal;
            if (cancels) {
                ASSERT_TRUE(r.done());
                EXPECT_EQ(r.thrown(), asio::error::operation_aborted);
                EXPECT_EQ(stats().rejected_cancelled, 1U);
                EXPECT_EQ(stats().queued_waiters, 0U);
                holders[0].lease.release();
                settle();
            } else {
                ASSERT_FALSE(r.done());
                EXPECT_EQ(stats().queued_waiters, 1U);
                holders[0].lease.release();
                settle();
                ASSERT_TRUE(r.done());
                ASSERT_FALSE(r.error);
                EXPECT_EQ(*r.value, 1);
                EXPECT_EQ(stats().rejected_cancelled, 0U);
            }
            EXPECT_EQ(r.completions, 1);
            EXPECT_EQ(outcomes(stats()), stats().acquires);
            EXPECT_EQ(stats().slots_idle, 1U);
            expect_immediate_grant_of(1);
        }
    }
}

// A coroutine cancelled while it holds a lease (suspended in a timer wait after its
// acquire). If it throws, the lease is destroyed as the coroutine unwinds: dirty (a
// lease destroyed during unwinding is dirty), whether or not it was marked dirty on the
// way out (the contract's rule for work cancelled mid-way): retired, its close hook
// runs, it is destroyed, never handed out again. If the coroutine handles the
// cancellation and returns, the lease is destroyed with no exception in flight: back
// clean, the resource is reused.
TEST_F(compose, co_spawn_cancelled_while_holding_a_lease) {
    enum class ending { thrown, marked_dirty_then_thrown, returned };
    for (const ending how : {ending::thrown, ending::marked_dirty_then_thrown, ending::returned}) {
        SCOPED_TRACE(how == ending::thrown                     ? "thrown"
                     : how == ending::marked_dirty_then_thrown ? "marked dirty, then thrown"
                                                               : "returned");
        auto& pool = warm(1);
        auto& signal = new_signal();
        co_result<int> r;
        asio::co_spawn(
            io,
            [&pool, how]() -> awaitable<int> {
                auto lease = co_await pool.async_acquire(use_awaitable);
                manual_timer work(co_await asio::this_coro::executor, 1h);
                auto [ec] = co_await work.async_wait(asio::as_tuple(use_awaitable));
                if (ec && how == ending::marked_dirty_then_thrown) lease.mark_dirty();  // its state is unknown
                if (ec && how == ending::returned) co_return -1;  // handled: no exception in flight
                if (ec) throw boost::system::system_error(ec);
                co_return lease->id();
            },
            asio::bind_cancellation_slot(signal.slot(), into(r)));
        settle();
        ASSERT_EQ(stats().slots_leased, 1U);
        on_executor([&] { signal.emit(ct::terminal); });
        ASSERT_TRUE(r.done());
        if (how == ending::returned) {
            ASSERT_FALSE(r.error);
            EXPECT_EQ(*r.value, -1);
        } else {
            EXPECT_EQ(r.thrown(), asio::error::operation_aborted);
        }
        const auto s = stats();
        EXPECT_EQ(s.slots_leased, 0U);
        if (how == ending::returned) {
            EXPECT_EQ(retired_total(s), 0U);
            EXPECT_EQ(s.slots_idle, 1U);
            EXPECT_EQ(log_->closed, 0);
            expect_immediate_grant_of(1);
            EXPECT_EQ(log_->created, 1);
        } else {
            EXPECT_EQ(s.retired_dirty, 1U);
            EXPECT_EQ(retired_total(s), 1U);
            EXPECT_EQ(log_->closed, 1);     // the close hook ran
            EXPECT_EQ(log_->destroyed, 1);  // and the resource is gone
            // min_slots 1: a fresh resource replaces it; resource 1 never comes back.
            for (int i = 0; i < 3; ++i) {
                outcome next;
                pool.async_acquire(record(next));
                settle();
                ASSERT_TRUE(next.lease);
                EXPECT_EQ(next.lease->id(), 2);
            }
            EXPECT_EQ(log_->created, 2);
        }
    }
}

// ---------------------------------------------------------------------------------
// Other tokens: as_tuple, redirect_error, experimental::use_promise

TEST_F(compose, as_tuple_and_redirect_error_report_the_cancel_without_throwing) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    co_result<int> r;
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            manual_timer t(co_await asio::this_coro::executor, 1ms);
            auto v = co_await (pool.async_acquire(asio::as_tuple(use_awaitable)) || t.async_wait(use_awaitable));
            if (v.index() != 1) co_return -1;  // the timer won; the tuple branch is cancelled
            error_code ec;
            manual_timer u(co_await asio::this_coro::executor, 1ms);
            auto w = co_await (pool.async_acquire(asio::redirect_error(use_awaitable, ec)) ||
                               u.async_wait(use_awaitable));
            if (w.index() != 1) co_return -2;
            co_return 0;
        },
        into(r));
    settle();
    advance(1ms);
    advance(1ms);
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_EQ(*r.value, 0);
    EXPECT_EQ(stats().rejected_cancelled, 2U);

    // The tuple's error code itself, cancelled by a signal.
    auto& signal = new_signal();
    co_result<error_code> t;
    asio::co_spawn(
        io,
        [&]() -> awaitable<error_code> {
            auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(use_awaitable));
            co_return ec;
        },
        asio::bind_cancellation_slot(signal.slot(), into(t)));
    settle();
    on_executor([&] { signal.emit(ct::terminal); });
    ASSERT_TRUE(t.done());
    EXPECT_EQ(*t.value, asio::error::operation_aborted);
    EXPECT_EQ(stats().rejected_cancelled, 3U);
    EXPECT_EQ(stats().queued_waiters, 0U);
}

// experimental::use_promise: the acquire starts at once (the promise is eager) and
// completes on the pool's executor (the initiation names it as its own, as an Asio I/O
// object's does; without that the promise would take the system executor and complete
// on a thread of its own). A promise destroyed while its acquire is queued cancels it;
// one destroyed after the grant gives the lease back clean.
TEST_F(compose, use_promise_completes_on_the_pools_executor) {
    std::vector<outcome> holders;
    auto& pool = all_leased(holders, 1);
    {
        auto p = pool.async_acquire(asio::experimental::use_promise);
        EXPECT_TRUE((std::is_same_v<decltype(p), asio::experimental::promise<void(error_code, test_lease),
                                                                             asio::any_io_executor>>));
        settle();
        EXPECT_EQ(stats().queued_waiters, 1U);
        EXPECT_FALSE(p.completed());
    }  // destroyed: its cancel is dispatched to the pool's executor
    settle();
    EXPECT_EQ(stats().rejected_cancelled, 1U);
    EXPECT_EQ(stats().queued_waiters, 0U);

    // Awaited before its grant: the coroutine resumes on its own thread (here, the one
    // running settle()), not on a system thread.
    co_result<bool> r;
    const auto io_thread = std::this_thread::get_id();
    bool resumed_on_io_thread = false;
    asio::co_spawn(
        io,
        [&]() -> awaitable<bool> {
            auto p = pool.async_acquire(asio::experimental::use_promise);
            auto [ec, lease] = co_await p(asio::as_tuple(use_awaitable));
            resumed_on_io_thread = std::this_thread::get_id() == io_thread;
            co_return !ec && static_cast<bool>(lease);
        },
        into(r));
    settle();
    ASSERT_FALSE(r.done());
    holders[0].lease.release();
    // Without the pool's executor the promise completed on a system thread: wait a while.
    for (int i = 0; i < 2000 && !r.done(); ++i) {
        settle();
        if (!r.done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(r.done());
    ASSERT_FALSE(r.error);
    EXPECT_TRUE(resumed_on_io_thread);
#if BOOST_VERSION < 108200
    // Boost 1.81's promise hands a waiter that came before the result moved-from values
    // (boostorg/asio#414, fixed in Asio 1.28 / Boost 1.82): the waiter's lease is empty,
    // the lease itself stays in the promise, and goes back clean with it.
    EXPECT_FALSE(*r.value);
#else
    EXPECT_TRUE(*r.value);
#endif
    settle();
    EXPECT_EQ(stats().slots_idle, 1U);
    EXPECT_EQ(retired_total(stats()), 0U);

    // Completed, then awaited: the lease comes out of the promise.
    co_result<int> later;
    asio::co_spawn(
        io,
        [&]() -> awaitable<int> {
            auto p = pool.async_acquire(asio::experimental::use_promise);
            manual_timer t(co_await asio::this_coro::executor, 1ms);
            co_await t.async_wait(use_awaitable);
            if (!p.completed()) co_return -1;
            auto [ec, lease] = co_await p(asio::as_tuple(use_awaitable));
            co_return ec || !lease ? -2 : lease->id();
        },
        into(later));
    settle();
    advance(1ms);
    ASSERT_TRUE(later.done());
    ASSERT_FALSE(later.error);
    EXPECT_EQ(*later.value, 1);
    {
        auto p = pool.async_acquire(asio::experimental::use_promise);
        settle();
        EXPECT_TRUE(p.completed());
        EXPECT_EQ(stats().slots_leased, 1U);
    }  // destroyed holding the lease: back clean
    settle();
    EXPECT_EQ(stats().slots_idle, 1U);
    EXPECT_EQ(retired_total(stats()), 0U);
    EXPECT_EQ(stats().rejected_cancelled, 1U);
    EXPECT_EQ(outcomes(stats()), stats().acquires);

    // async_close takes the pool's executor too.
    auto closing = pool.async_close(asio::experimental::use_promise);
    EXPECT_TRUE((std::is_same_v<decltype(closing), asio::experimental::promise<void(error_code, close_report),
                                                                               asio::any_io_executor>>));
    settle();
    ASSERT_TRUE(closing.completed());
}

// ---------------------------------------------------------------------------------
// The same compositions with random timing, on an io_context run by one thread and by
// two (the pool on the context's executor, or on a strand of it). Each task runs on a
// strand of its own, as Asio requires of a composition whose operations cancel each
// other (a cancellation_signal is not thread-safe: parallel_group emits it from the
// completing operation's handler, so every operation of a group must complete on one
// serial executor). No time is asserted: only outcomes and counters.

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    return std::strtoull(v, nullptr, 10);
}

struct counted_resource {
    int id;
    std::atomic<int>* destroyed;
    bool live = true;
    counted_resource(int i, std::atomic<int>* d) : id(i), destroyed(d) {}
    counted_resource(counted_resource&& o) noexcept : id(o.id), destroyed(o.destroyed) { o.live = false; }
    counted_resource& operator=(counted_resource&&) = delete;
    ~counted_resource() {
        if (live) ++*destroyed;
    }
};
using real_pool = pool<counted_resource>;
using real_lease = real_pool::lease_type;
using real_handle = real_pool::handle_type;

// Every acquire's outcome as the tasks saw it, and what must never happen.
struct tally {
    explicit tally(int slots) : max_slots(slots) {}
    const int max_slots;
    std::atomic<int> issued{0}, observed{0}, grants{0}, aborted{0}, timeouts{0}, other{0};
    std::atomic<int> in_use{0}, over_cap{0}, dirty_marked{0}, dirty_reused{0}, twice{0};
    std::mutex m;
    std::set<int> dirty_ids;

    void outcome(const error_code& ec, const real_lease& l) {
        ++observed;
        if (!ec) {
            ++grants;
            if (in_use.fetch_add(1) + 1 > max_slots) ++over_cap;
            const std::lock_guard<std::mutex> g(m);
            if (dirty_ids.count(l->id) != 0) ++dirty_reused;
        } else if (ec == asio::error::operation_aborted) {
            ++aborted;
        } else if (ec == error::timeout) {
            ++timeouts;
        } else {
            ++other;
        }
    }
    void mark_dirty(real_lease& l) {
        {
            const std::lock_guard<std::mutex> g(m);
            dirty_ids.insert(l->id);
        }
        ++dirty_marked;
        l.mark_dirty();
    }
};

// A granted lease, counted in use until it goes (whoever drops it: `||` drops a
// losing branch's value itself).
class tracked {
public:
    tracked() = default;
    tracked(real_lease l, tally* t) : lease_(std::move(l)), t_(t) {}
    tracked(tracked&& o) noexcept : lease_(std::move(o.lease_)), t_(o.t_) {}
    tracked& operator=(tracked&& o) noexcept {
        if (this != &o) {
            reset();
            lease_ = std::move(o.lease_);
            t_ = o.t_;
        }
        return *this;
    }
    tracked(const tracked&) = delete;
    tracked& operator=(const tracked&) = delete;
    ~tracked() { reset(); }
    void reset() noexcept {
        if (lease_) {
            --t_->in_use;
            lease_.release();
        }
    }
    void mark_dirty() { t_->mark_dirty(lease_); }

private:
    real_lease lease_;
    tally* t_ = nullptr;
};

// An acquire whose outcome is tallied before the composition sees it.
awaitable<tracked> acquire_counted(real_handle& h, tally& t, std::chrono::microseconds timeout) {
    ++t.issued;
    // Not `auto [ec, lease] = c ? co_await x : co_await y;`: g++ 12 destroys the result of
    // a co_await inside ?: while the binding still holds a bitwise copy of it, so the
    // lease would be released twice (clang gets it right).
    error_code ec;
    real_lease lease;
    if (timeout.count() > 0)
        std::tie(ec, lease) = co_await h.async_acquire(timeout, asio::as_tuple(use_awaitable));
    else
        std::tie(ec, lease) = co_await h.async_acquire(asio::as_tuple(use_awaitable));
    t.outcome(ec, lease);
    if (ec) throw boost::system::system_error(ec);
    co_return tracked(std::move(lease), &t);
}

struct plan {
    int kind = 0;
    std::chrono::microseconds wait{0}, hold{0}, timeout{0};
    bool dirty = false;
    ct type = ct::terminal;
};

// Holds the lease for a while, then lets it go (dirty if the plan says so).
awaitable<void> hold(tracked l, const plan& p) {
    asio::steady_timer t(co_await asio::this_coro::executor, p.hold);
    co_await t.async_wait(use_awaitable);
    if (p.dirty) l.mark_dirty();
}

constexpr int task_kinds = 6;

awaitable<void> task(real_pool& pool, tally& t, plan p) {
    const auto ex = co_await asio::this_coro::executor;  // the task's strand
    auto h = pool.make_handle();
    asio::steady_timer timer(ex, p.wait);
    try {
        switch (p.kind) {
            case 0: {  // acquire || timer
                auto v = co_await (acquire_counted(h, t, p.timeout) || timer.async_wait(use_awaitable));
                if (v.index() == 0) co_await hold(std::get<0>(std::move(v)), p);
                break;
            }
            case 1: {  // acquire || acquire (two handles)
                auto h2 = pool.make_handle();
                auto v = co_await (acquire_counted(h, t, p.timeout) || acquire_counted(h2, t, p.timeout));
                co_await hold(v.index() == 0 ? std::get<0>(std::move(v)) : std::get<1>(std::move(v)), p);
                break;
            }
            case 2: {  // acquire && timer
                auto l = co_await (acquire_counted(h, t, p.timeout) && timer.async_wait(use_awaitable));
                co_await hold(std::move(l), p);
                break;
            }
            case 3: {  // parallel_group, wait_for_one, both operations bound to the strand
                ++t.issued;
                auto [order, ec, lease, tec] =
                    co_await asio::experimental::make_parallel_group(
                        h.async_acquire(asio::bind_executor(ex, asio::deferred)),
                        timer.async_wait(asio::bind_executor(ex, asio::deferred)))
                        .async_wait(asio::experimental::wait_for_one(), use_awaitable);
                (void)order;
                (void)tec;
                t.outcome(ec, lease);
                if (!ec) co_await hold(tracked(std::move(lease), &t), p);
                break;
            }
            case 4: {  // bind_cancellation_slot, the signal emitted on the strand after a while
                auto signal = std::make_shared<asio::cancellation_signal>();
                auto completions = std::make_shared<std::atomic<int>>(0);
                ++t.issued;
                h.async_acquire(asio::bind_cancellation_slot(
                    signal->slot(), asio::bind_executor(ex, [&t, signal, completions](error_code e, real_lease l) {
                        if (completions->fetch_add(1) != 0) ++t.twice;
                        t.outcome(e, l);
                        tracked keep(std::move(l), &t);
                    })));
                co_await timer.async_wait(use_awaitable);
                signal->emit(p.type);  // queued, granted but not yet run, or run: any stage
                asio::steady_timer after(ex, p.hold);
                co_await after.async_wait(use_awaitable);
                break;
            }
            case 5: {  // a coroutine holding a lease, cancelled as a whole
                asio::cancellation_signal signal;
                bool finished = false;
                asio::co_spawn(
                    ex,
                    [&]() -> awaitable<void> {
                        auto l = co_await acquire_counted(h, t, p.timeout);
                        asio::steady_timer work(co_await asio::this_coro::executor, p.hold);
                        auto [ec] = co_await work.async_wait(asio::as_tuple(use_awaitable));
                        if (ec && p.dirty) l.mark_dirty();  // cancelled mid-way: its state is unknown
                    },
                    asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr) { finished = true; }));
                co_await timer.async_wait(use_awaitable);
                if (!finished) signal.emit(ct::terminal);
                while (!finished) {  // the inner coroutine ends on this strand
                    asio::steady_timer again(ex, std::chrono::microseconds(50));
                    co_await again.async_wait(use_awaitable);
                }
                break;
            }
            default: break;
        }
    } catch (const std::exception&) {  // a branch failed: its outcome is tallied already
    }
}

// Runs `rounds` rounds of `per_round` random tasks on `pool`, each round until every
// task has ended, with the io_context run by `threads` threads.
void run_random_compositions(int threads, bool pool_on_strand, int rounds) {
    constexpr int slots = 2;
    constexpr int per_round = 6;
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    std::vector<std::thread> runners;
    for (int i = 0; i < threads; ++i) runners.emplace_back([&io] { io.run(); });
    std::atomic<int> created{0}, destroyed{0}, closed{0};
    pool_options o;
    o.max_slots = slots;
    o.retire_grace = std::chrono::milliseconds(100);
    const asio::any_io_executor pool_ex =
        pool_on_strand ? asio::any_io_executor(asio::make_strand(io)) : asio::any_io_executor(io.get_executor());
    auto p = std::make_unique<real_pool>(
        pool_ex, o, [&]() -> awaitable<counted_resource> { co_return counted_resource(++created, &destroyed); },
        [&](counted_resource&) -> awaitable<void> {
            ++closed;
            co_return;
        });
    tally t(slots);
    std::mt19937 rng(20261205U + static_cast<unsigned>(threads) * 7U + (pool_on_strand ? 1U : 0U));
    const auto us = [&rng](int max) { return std::chrono::microseconds(std::uniform_int_distribution<int>(0, max)(rng)); };
    int tasks = 0;
    for (int round = 0; round < rounds; ++round) {
        std::atomic<int> left{per_round};
        std::promise<void> all_done;
        for (int i = 0; i < per_round; ++i) {
            plan pl;
            pl.kind = std::uniform_int_distribution<int>(0, task_kinds - 1)(rng);
            pl.wait = us(200);
            pl.hold = us(150);
            pl.timeout = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? us(300) + std::chrono::microseconds(1)
                                                                             : std::chrono::microseconds(0);
            pl.dirty = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
            pl.type = every_type[std::uniform_int_distribution<std::size_t>(0, 2)(rng)];
            ++tasks;
            asio::co_spawn(asio::make_strand(io), task(*p, t, pl), [&](std::exception_ptr e) {
                if (e) ADD_FAILURE() << "a task threw";
                if (--left == 0) all_done.set_value();
            });
        }
        ASSERT_EQ(all_done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready)
            << "round " << round << ": a task hangs";
        // Every lease is back (the last release may still be in a drain on another thread).
        pool_stats s;
        for (int i = 0; i < 5000; ++i) {
            s = p->stats();
            if (s.slots_leased == 0 && s.queued_waiters == 0) break;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        ASSERT_EQ(s.slots_leased, 0U) << "round " << round;
        ASSERT_EQ(s.queued_waiters, 0U) << "round " << round;
        ASSERT_EQ(t.in_use.load(), 0) << "round " << round;
    }
    EXPECT_EQ(t.issued.load(), t.observed.load());  // every acquire had its outcome
    EXPECT_EQ(t.twice.load(), 0);
    EXPECT_EQ(t.over_cap.load(), 0);
    EXPECT_EQ(t.dirty_reused.load(), 0);
    EXPECT_EQ(t.other.load(), 0);
    const auto s = p->stats();
    EXPECT_EQ(s.acquires, static_cast<std::uint64_t>(t.issued.load()));
    EXPECT_EQ(outcomes(s), s.acquires);
    EXPECT_EQ(s.grants_immediate + s.grants_after_wait, static_cast<std::uint64_t>(t.grants.load()));
    EXPECT_EQ(s.rejected_cancelled, static_cast<std::uint64_t>(t.aborted.load()));
    EXPECT_EQ(s.rejected_timeout, static_cast<std::uint64_t>(t.timeouts.load()));
    EXPECT_EQ(s.rejected_busy, 0U);
    EXPECT_EQ(s.retired_dirty, static_cast<std::uint64_t>(t.dirty_marked.load()));
    EXPECT_GT(t.aborted.load(), 0);  // the runs did cancel
    EXPECT_GT(t.grants.load(), 0);
    auto f = p->async_close(asio::use_future);
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    const close_report report = f.get();
    EXPECT_TRUE(report.closed);
    EXPECT_EQ(report.leases_out, 0U);
    EXPECT_EQ(report.waiters_queued, 0U);
    const std::weak_ptr<const void> life = p->diagnostics().lifetime;
    p.reset();
    for (int i = 0; i < 5000 && !life.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(life.expired());
    EXPECT_EQ(created.load(), destroyed.load());
    EXPECT_EQ(created.load(), closed.load());  // every resource went through its close hook
    guard.reset();
    for (auto& r : runners) r.join();
    EXPECT_GT(tasks, 0);
}

int rounds() { return static_cast<int>(env_or("FAIRPOOL_COMPOSE_ROUNDS", 1000)); }

TEST(compose_random, one_thread) { run_random_compositions(1, false, rounds()); }
TEST(compose_random, two_threads) { run_random_compositions(2, false, rounds()); }
TEST(compose_random, two_threads_pool_on_a_strand) { run_random_compositions(2, true, rounds()); }

}  // namespace
}  // namespace fairpool::testing
