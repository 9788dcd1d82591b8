// The Boost.Asio adapter's deadlines and completions, on a real io_context and the
// test's manual clock: a queued acquire's deadline and the deadline timer, counters
// published before a completion is posted, the inline drain's budget, one actor and no
// task per acquire or release, outstanding work, completion tokens and allocators,
// cancellation from a foreign thread, the default steady_clock pool, errors and
// options. No test sleeps or reads the time.
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
#include <thread>
#include <type_traits>

#include "fixture.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

TEST_F(adapter, a_queued_acquire_times_out_exactly_at_its_deadline) {
    outcome holder;
    auto o = options(1, 1);
    o.acquire_timeout = fairpool::forever;  // `patient` waits on past the hour below (0.1's unbounded default)
    auto pool = make_pool(o);
    settle();
    pool->async_acquire(record(holder));
    settle();
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
    EXPECT_EQ(pool->stats().rejected_timeout, 1u);
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

TEST_F(adapter, a_try_acquire_is_rejected_at_once_unless_a_slot_is_idle) {
    outcome holder;
    auto pool = one_slot_held(holder);
    outcome now_or_never;
    pool->async_try_acquire(record(now_or_never));
    settle();  // no time passes
    EXPECT_EQ(now_or_never.ec, make_error_code(error::timeout));
    holder.lease.release();
    settle();
    outcome idle;
    pool->async_try_acquire(record(idle));
    settle();
    EXPECT_FALSE(idle.ec);
    EXPECT_TRUE(idle.lease);
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
    std::vector<pool_stats> seen;
    std::function<void()> read_counters = [&] { seen.push_back(pool->stats()); };
    const at_post_executor ex{io.get_executor(), &read_counters};
    outcome granted, rejected;
    pool->async_acquire(boost::asio::bind_executor(ex, record(granted)));
    settle();
    pool->async_try_acquire(boost::asio::bind_executor(ex, record(rejected)));
    settle();
    ASSERT_TRUE(granted.done && rejected.done);
    EXPECT_FALSE(granted.ec);
    EXPECT_EQ(rejected.ec, make_error_code(error::timeout));
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].grants_immediate, 1u);
    EXPECT_EQ(seen[0].acquires, 1u);
    EXPECT_EQ(seen[1].rejected_timeout, 1u);
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
    std::uint64_t before = pool->diagnostics().commands_fed, posted = pool->diagnostics().drains_posted, inline_fed = 0;
    boost::asio::post(io, [&] {
        pool->async_acquire(boost::asio::bind_executor(ex, record(fed)));
        inline_fed = pool->diagnostics().commands_fed - before;
    });
    settle();
    EXPECT_EQ(inline_fed, 32u) << "fed directly";
    EXPECT_EQ(pool->diagnostics().commands_fed - before, 41u);
    EXPECT_EQ(pool->diagnostics().drains_posted - posted, 1u);
    ASSERT_TRUE(fed.lease);
    EXPECT_EQ(pool->stats().slots_leased, 1u);

    // Announced: the cancel of a queued waiter, then 31 releases inline.
    held = lease_40();
    ASSERT_EQ(pool->stats().slots_leased, 41u);
    boost::asio::cancellation_signal signal;
    outcome cancelled;
    pool->async_acquire(
        boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::bind_executor(ex, record(cancelled))));
    settle();
    ASSERT_FALSE(cancelled.done);
    at_post = [&held] { held.clear(); };
    before = pool->diagnostics().commands_fed, posted = pool->diagnostics().drains_posted;
    boost::asio::post(io, [&] {
        signal.emit(boost::asio::cancellation_type::terminal);
        inline_fed = pool->diagnostics().commands_fed - before;
    });
    settle();
    EXPECT_EQ(inline_fed, 32u) << "announced";
    EXPECT_EQ(pool->diagnostics().commands_fed - before, 41u);
    EXPECT_EQ(pool->diagnostics().drains_posted - posted, 1u);
    EXPECT_EQ(cancelled.ec, boost::asio::error::operation_aborted);
    EXPECT_EQ(pool->stats().slots_leased, 1u);
}

// Publishing writes only what changed: after every drain the snapshot must still equal
// the core's counters, whichever of them a step changed (grants immediate and after a
// wait into different histogram buckets, several grants in one drain, rejections of
// every kind, spawns, a dirty retirement, gauges up and down).
TEST_F(adapter, the_published_counters_equal_the_cores_after_every_drain) {
    scratch_directory dumps;
    pool_options o = options(2, 1);
    o.max_waiters = 2;
    o.recording = whole_test_in_memory();
    auto pool = make_pool(o);
    int dumped = 0;
    const auto check = [&](const char* when) {
        settle();
        const auto dir = dumps / std::to_string(dumped++);
        ASSERT_FALSE(pool->dump_recording(dir)) << when;
        EXPECT_EQ(pool->diagnostics().scheduler, counters_of_recording(dir)) << when;
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

TEST_F(adapter, one_actor_and_no_task_per_acquire_or_release) {
    auto pool = make_pool(options(1, 1));
    settle();
    const pool_diagnostics start = pool->diagnostics();
    const std::uint64_t posted = start.drains_posted, run = start.drains_run, fed = start.commands_fed;
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
    EXPECT_EQ(pool->diagnostics().drains_posted - posted, 1u);
    EXPECT_EQ(handlers, 1u + 10'000u);
    EXPECT_EQ(pool->diagnostics().drains_run - run, 20'000u);
    EXPECT_EQ(pool->diagnostics().commands_fed - fed, 20'000u);
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
        std::future<test_lease> f = pool->async_try_acquire(boost::asio::use_future);  // nothing idle: timeout
        try {
            f.get();
            ADD_FAILURE() << "a rejected acquire's future returned a lease";
        } catch (const boost::system::system_error& e) {
            EXPECT_EQ(e.code(), make_error_code(error::timeout));
        }
        // Without exceptions: a callback fulfils a promise of (error_code, lease).
        std::promise<std::pair<error_code, test_lease>> promise;
        auto outcome_of = promise.get_future();
        pool->async_try_acquire([&promise](error_code ec, test_lease l) { promise.set_value({ec, std::move(l)}); });
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
    pool.async_try_acquire([&](error_code ec, lease<resource>) { zero_ec = ec, zero_done = true; });
    settle();  // a try-acquire is decided in the step that takes the acquire
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
    EXPECT_EQ(close_ec, make_error_code(error::timeout));
    EXPECT_FALSE(report.closed);
    EXPECT_EQ(report.leases_out, 1u);
    held.release();
    bool closed = false;
    pool.async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_TRUE(closed);
    EXPECT_EQ(log_->destroyed, 1);
}

// A Clock coarser than the scheduler's nanoseconds (milliseconds here): an acquire's
// and a close's deadlines are its time points, rounded up to its tick, and expire on
// it. (Converting such a Clock's whole range into nanoseconds overflows: the deadlines
// then lay past every time point, and neither ever expired.)
TEST_F(adapter, a_clock_of_milliseconds_times_out_acquires_and_closes) {
    using ms_pool = pool<resource, manual_ms_clock, manual_ms_wait_traits>;
    const auto ms_advance = [this](int ms) { advance<manual_ms_clock>(std::chrono::milliseconds(ms)); };
    auto log = log_;
    ms_pool pool(io.get_executor(), options(1, 1),
                 [log]() -> boost::asio::awaitable<resource> { co_return resource(++log->created, log); });
    settle();
    ms_pool::lease_type held;
    pool.async_acquire([&held](error_code ec, ms_pool::lease_type l) {
        EXPECT_FALSE(ec);
        held = std::move(l);
    });
    settle();
    ASSERT_TRUE(held);

    int acquires = 0;
    error_code acquire_ec;
    pool.async_acquire(std::chrono::milliseconds(5), [&](error_code ec, ms_pool::lease_type) {
        ++acquires;
        acquire_ec = ec;
    });
    settle();
    ms_advance(4);
    EXPECT_EQ(acquires, 0) << "timed out a millisecond before its deadline";
    ms_advance(1);
    EXPECT_EQ(acquires, 1);
    EXPECT_EQ(acquire_ec, make_error_code(error::timeout));

    close_outcome c;
    pool.async_close(std::chrono::microseconds(19'001), c.handler());  // rounds up to 20 ms
    settle();
    ms_advance(19);
    EXPECT_EQ(c.completions, 0) << "timed out a millisecond before its deadline";
    ms_advance(1);
    EXPECT_EQ(c.completions, 1);
    EXPECT_EQ(c.ec, make_error_code(error::timeout));
    expect_report(c.report, {.leases_out = 1});

    held.release();
    bool closed = false;
    pool.async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    settle();
    EXPECT_TRUE(closed);
    EXPECT_EQ(c.completions, 1);
}

// fairpool has no code of its own for a cancellation (0.1's error::cancelled, never
// delivered) nor a second timeout code (0.1's error::timed_out, now error::timeout).
template <class E>
concept has_cancelled_code = requires { E::cancelled; };
template <class E>
concept has_timed_out_code = requires { E::timed_out; };
static_assert(!has_cancelled_code<error>);
static_assert(!has_timed_out_code<error>);

TEST_F(adapter, errors_have_a_category_and_messages) {
    EXPECT_STREQ(make_error_code(error::saturated).category().name(), "fairpool");
    // A cancelled acquire completes with Asio's operation_aborted, which a caller tests
    // as errc::operation_canceled (what 0.1's error::cancelled compared equal to).
    const error_code aborted = boost::asio::error::operation_aborted;
    EXPECT_EQ(aborted, boost::system::errc::operation_canceled);
    EXPECT_EQ(make_error_code(error::timeout), boost::system::errc::timed_out);
    EXPECT_EQ(make_error_code(error::closed).message(), "the pool is closed");
}

TEST_F(adapter, invalid_options_are_refused_naming_the_field) {
    auto o = options(2);
    o.max_waiters = 32000;
    o.mailbox_capacity = 1000;
    EXPECT_THROW(make_pool(o), config_error);
    // The largest mailbox: its queues' storage (a deregistration queue of 2(L + 1)
    // and a dummy node) is still within Boost.Lockfree's 65535 nodes; one more is refused.
    o.mailbox_capacity = 766;
    EXPECT_NO_THROW(make_pool(o));
    o.mailbox_capacity = 767;
    EXPECT_EQ(validate(o).value_or(""), "mailbox_capacity: max_waiters + mailbox_capacity is 32767, above 32766");
    o = options(2);
    o.create_timeout = std::chrono::nanoseconds(-1);
    EXPECT_EQ(validate(o).value_or(""), "create_timeout: must be positive, got -1 ns (fairpool::forever: no bound)");
    o.create_timeout = std::chrono::nanoseconds(0);  // 0 is no longer "none": refused
    EXPECT_EQ(validate(o).value_or(""), "create_timeout: must be positive, got 0 ns (fairpool::forever: no bound)");
    o.create_timeout = fairpool::forever;  // none
    EXPECT_FALSE(validate(o).has_value());
    o = options(0);
    try {
        make_pool(o);
        ADD_FAILURE();
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("invalid pool options: max_slots: "), std::string::npos) << e.what();
    }
}

// Each bound of the adapter's own options (options.cpp: validate): the limit itself is
// accepted, one past it refused naming the field.
TEST_F(adapter, each_adapter_option_accepts_its_limit_and_refuses_one_past_it) {
    auto o = options(2);
    o.retire_grace = 0ns;  // retire at once
    EXPECT_FALSE(validate(o).has_value());
    o.retire_grace = -1ns;
    EXPECT_EQ(validate(o).value_or(""), "retire_grace: must not be negative, got -1 ns");
    o = options(2);
    o.check_timeout = 1ns;
    o.reset_timeout = 1ns;
    EXPECT_FALSE(validate(o).has_value());
    o.check_timeout = 0ns;
    EXPECT_EQ(validate(o).value_or(""), "check_timeout: must be positive, got 0 ns");
    o.check_timeout = 1ns;
    o.reset_timeout = 0ns;
    EXPECT_EQ(validate(o).value_or(""), "reset_timeout: must be positive, got 0 ns");
    o = options(2);
    o.mailbox_capacity = 1;
    EXPECT_FALSE(validate(o).has_value());
    o.mailbox_capacity = 0;
    EXPECT_EQ(validate(o).value_or(""), "mailbox_capacity: must be at least 1");
}

}  // namespace
}  // namespace fairpool::testing
