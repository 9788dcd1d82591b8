// The adapter at its limits (docs/CONTRACT.md sections 8-9; the audit of HEAD 72ee768):
// cancels and deregistrations served whatever a drain's budget, the largest slot
// capacity the mailbox can hold, a deadline past the Clock's range, a deferred close
// launched after its pool object is gone, an acquire whose operation cannot be
// allocated, and acquires pushed before a close that are more than one drain's budget
// (fed before the shutdown, which the acquires pushed after it do not put off).
// One io_context thread, the manual clock, no sleeps: every outcome is exact.
#include <gmock/gmock.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <new>
#include <optional>
#include <vector>

#include "fixture.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

// Runs ready handlers, `rounds` polls at most (each poll runs every handler ready, and
// those they make ready): for cases where a broken pool could keep the io_context busy
// for ever. Returns how many ran.
std::size_t poll_bounded(boost::asio::io_context& io, int rounds) {
    std::size_t ran = 0;
    for (int i = 0; i < rounds; ++i) {
        io.restart();
        const std::size_t n = io.poll();
        if (n == 0) break;
        ran += n;
    }
    return ran;
}

// What a stream of acquires got: completions per acquire (each must be exactly 1) and
// the count per error.
struct tally {
    explicit tally(std::size_t total) : completions(total, 0) {}
    std::vector<int> completions;
    std::size_t aborted = 0;
    std::size_t saturated = 0;
    std::size_t deregistered = 0;
    std::size_t closed = 0;
    std::size_t other = 0;

    void count(std::size_t i, const error_code& ec) {
        ++completions[i];
        if (ec == boost::asio::error::operation_aborted) ++aborted;
        else if (ec == make_error_code(error::saturated)) ++saturated;
        else if (ec == make_error_code(error::deregistered)) ++deregistered;
        else if (ec == make_error_code(error::closed)) ++closed;
        else ++other;
    }
    [[nodiscard]] std::size_t not_exactly_once() const {
        std::size_t n = 0;
        for (int c : completions) n += c != 1 ? 1 : 0;
        return n;
    }
};

// L = max_waiters 8 + mailbox_capacity 2040 = 2048 (cancel and deregistration queues:
// 2(L + 1) = 4098); one slot, leased for the whole test, so that every acquire is
// queued or rejected saturated and none is ever granted.
constexpr std::size_t starve_limit = 2048;
constexpr std::size_t starve_total = 20'000;

// A one-slot pool whose slot stays leased, fed starve_total acquires: L started from
// off the executor (admitted and pushed), then one more from each completion (on the
// pool's executor, while the actor is scheduled: through the mailbox). start_one(pool,
// done) starts an acquire with `done` as its handler and sends the command under test
// for it; between(pool) runs once the first L are started; before_release() once the
// io_context ran dry, before the held lease goes back.
class starving_adapter : public adapter {
protected:
    template <class Start, class Between = void (*)(test_pool&), class BeforeRelease = void (*)()>
    tally run_stream(
        Start start_one, Between between = [](test_pool&) {}, BeforeRelease before_release = [] {}) {
        pool_options o = options(1, 1);
        o.max_waiters = 8;
        o.mailbox_capacity = 2040;
        auto pool = make_pool(o);
        settle();
        outcome holder;
        pool->async_acquire(record(holder));
        settle();
        EXPECT_TRUE(holder.lease);

        tally got(starve_total);
        std::size_t started = 0;
        std::function<void()> start = [&] {
            if (started >= starve_total) return;
            const std::size_t i = started++;
            start_one(*pool, [&, i](error_code ec, test_lease l) {
                EXPECT_FALSE(l);
                got.count(i, ec);
                start();
            });
        };
        for (std::size_t i = 0; i < starve_limit; ++i) start();
        between(*pool);
        settle();

        EXPECT_EQ(started, starve_total);
        EXPECT_EQ(got.not_exactly_once(), 0u) << "acquires completed never or more than once";
        EXPECT_EQ(pool->stats().rejected_busy, 0u);
        before_release();
        holder.lease.release();
        pool.reset();
        settle();
        return got;
    }
};

// T1. A cancel is served by the next drain whatever its budget (mailbox.hpp: the cancel
// queue's 2(L + 1) holds only if no cancel outlives the drain after it). Each acquire is
// cancelled at once. A posted drain's budget (1024) is used up by acquires every time:
// if the cancels waited for budget, they would pile up while every delivery sent a new
// one, and the queue would overflow (the process aborts with "fairpool invariant broken:
// pushed"). Every acquire completes exactly once, aborted or saturated.
TEST_F(starving_adapter, cancels_are_served_whatever_the_drain_budget) {
    std::deque<boost::asio::cancellation_signal> signals;  // stable addresses: each outlives its acquire
    const tally got = run_stream([&](test_pool& pool, auto done) {
        auto& signal = signals.emplace_back();
        pool.async_acquire(boost::asio::bind_cancellation_slot(signal.slot(), std::move(done)));
        signal.emit(boost::asio::cancellation_type::terminal);  // outstanding: one cancel
    });
    EXPECT_EQ(got.aborted + got.saturated, starve_total)
        << "aborted " << got.aborted << ", saturated " << got.saturated << ", other " << got.other;
}

// T2. The same for deregistrations: each acquire's handle is reset at once (it has an
// acquire outstanding: one deregistration), and each completion starts one more
// through a new handle. Without a deregistration served by every drain, its queue
// overflows (handle::~handle -> deregister is noexcept: the process aborts). Every
// acquire completes exactly once, deregistered or saturated.
TEST_F(starving_adapter, deregistrations_are_served_whatever_the_drain_budget) {
    const tally got = run_stream([](test_pool& pool, auto done) {
        auto tenant = pool.make_handle();
        tenant.async_acquire(std::move(done));
        tenant.reset();  // outstanding: one deregistration
    });
    EXPECT_EQ(got.deregistered + got.saturated, starve_total)
        << "deregistered " << got.deregistered << ", saturated " << got.saturated << ", other " << got.other;
}

// T3. The slot-event queue is a Boost.Lockfree fixed-size queue, which holds at most
// 65534 commands: a slot capacity of 65535 (given, or max_slots by default) is refused
// by validate and by the constructor with fairpool::config_error naming slot_capacity, never
// with Boost.Lockfree's std::runtime_error.
TEST_F(adapter, slot_capacity_65535_is_refused_with_a_config_error) {
    auto by_default = options(65535);  // slot_capacity resolves to max_slots
    auto given = options(10);
    given.slot_capacity = 65535;
    for (const pool_options* o : {&by_default, &given}) {
        const std::optional<std::string> why = validate(*o);
        ASSERT_TRUE(why.has_value()) << "validate accepts slot_capacity 65535";
        EXPECT_THAT(*why, ::testing::HasSubstr("slot_capacity"));
        EXPECT_THROW(make_pool(*o), config_error);
    }
}

// T3, the other side: slot capacity 65534 is valid, constructs, and its mailbox takes a
// release from every one of its 65534 slots at once (none may find the queue full).
TEST_F(adapter, slot_capacity_65534_holds_a_release_from_every_slot) {
    constexpr std::size_t slots = 65534;
    auto o = options(slots, slots);  // prewarmed: every acquire below is an immediate grant
    o.max_waiters = 1;
    o.mailbox_capacity = 32765;  // L = 32766, the most
    EXPECT_FALSE(validate(o).has_value());
    // No close hook: closing 65534 resources through it (each raced against a retire
    // grace timer) would take most of this test's time at shutdown.
    auto create = [log = log_]() -> boost::asio::awaitable<resource> { co_return resource(++log->created, log); };
    std::unique_ptr<test_pool> pool;
    ASSERT_NO_THROW(pool = std::make_unique<test_pool>(io.get_executor(), o, create));
    settle();
    ASSERT_EQ(pool->stats().slots_idle, slots);
    // Every slot leased (in batches of at most L outstanding acquires), then every lease
    // released from off the executor: 65534 slot events in the mailbox at once.
    std::vector<test_lease> held;
    held.reserve(slots);
    std::size_t failed = 0;
    error_code first_error;
    while (held.size() < slots) {
        const std::size_t batch = std::min<std::size_t>(32766, slots - held.size());
        for (std::size_t i = 0; i < batch; ++i)
            pool->async_acquire([&](error_code ec, test_lease l) {
                if (!ec) held.push_back(std::move(l));
                else if (failed++ == 0) first_error = ec;
            });
        settle();
        ASSERT_EQ(failed, 0u) << first_error.message();
    }
    EXPECT_EQ(log_->created, static_cast<int>(slots));
    for (auto& l : held) l.release();
    settle();
    EXPECT_EQ(pool->stats().slots_leased, 0u);
    EXPECT_EQ(pool->stats().slots_idle, slots);
    pool.reset();
    settle();
    EXPECT_EQ(log_->destroyed, static_cast<int>(slots));
}

// T4. The largest finite timeout (one below fairpool::forever, which is no deadline at
// all) is a deadline past the Clock's range: it is "never" in effect, and must arm no
// timer that fires at once (epoch + deadline overflowing into the past: the actor would
// drain, find the deadline not reached and re-arm, for as long as the waiter waits). The
// clock has been running (an epoch far from 0) when the pool is made. Polling runs at
// most a couple of drains; the waiter is granted once the lease comes back.
TEST_F(adapter, a_deadline_past_the_clocks_range_arms_no_busy_timer) {
    manual_clock::advance(std::chrono::hours(1));  // process-wide, forward only: harmless to the other tests
    auto o = options(1, 1);
    o.acquire_timeout = forever;  // else the default 30 s deadline is the one armed, not the one past the range
    auto pool = make_pool(o);
    settle();
    outcome holder;
    pool->async_acquire(record(holder));
    settle();
    ASSERT_TRUE(holder.lease);
    const std::uint64_t drains_before = pool->diagnostics().drains_run;
    outcome waiter;
    pool->async_acquire(forever - std::chrono::nanoseconds(1), record(waiter));
    for (int i = 0; i < 200; ++i) {
        io.restart();
        io.poll_one();
    }
    EXPECT_LE(pool->diagnostics().drains_run - drains_before, 4u) << "the deadline timer keeps firing";
    EXPECT_FALSE(waiter.done);
    holder.lease.release();
    poll_bounded(io, 100);
    ASSERT_TRUE(waiter.done);
    EXPECT_FALSE(waiter.ec);
    EXPECT_TRUE(waiter.lease);
    EXPECT_EQ(waiter.completions, 1);
    waiter.lease.release();
    pool.reset();
    poll_bounded(io, 100);
}

// T4b. The same for a core deadline from the config: a lease held with a leak_threshold
// of 2^63 - 2 ns (the largest below fairpool::forever, which is off) has a deadline past
// the Clock's range; no timer may fire over and over, and no leak is reported.
TEST_F(adapter, a_config_deadline_past_the_clocks_range_arms_no_busy_timer) {
    manual_clock::advance(std::chrono::hours(1));
    auto o = options(1, 1);
    o.leak_threshold = forever - std::chrono::nanoseconds(1);
    int leaks = 0;
    o.on_leak_suspected = [&leaks](std::uint32_t, std::uint64_t) { ++leaks; };
    auto pool = make_pool(o);
    poll_bounded(io, 100);
    const std::uint64_t drains_before = pool->diagnostics().drains_run;
    outcome holder;
    pool->async_acquire(record(holder));
    for (int i = 0; i < 200; ++i) {
        io.restart();
        io.poll_one();
    }
    ASSERT_TRUE(holder.lease);
    EXPECT_LE(pool->diagnostics().drains_run - drains_before, 4u) << "the deadline timer keeps firing";
    EXPECT_EQ(leaks, 0);
    holder.lease.release();
    pool.reset();
    poll_bounded(io, 100);
}

class deferred_close_adapter : public adapter {
protected:
    // T5: a deferred close of a warm one-slot pool, launched after the pool object is gone
    // (and, if `run_first`, after the io_context ran its shutdown and close); then settled.
    // It must complete once, without error (nothing was leased: the pool closed), and the
    // pool's state must go once it has.
    void expect_a_deferred_close_completes_after_its_pool(bool run_first) {
        auto pool = make_pool(options(1, 1));
        settle();
        const std::weak_ptr<const void> state = pool->diagnostics().lifetime;
        int completions = 0;
        error_code got;
        close_report report;
        {
            auto close_op = pool->async_close(boost::asio::deferred);
            pool.reset();
            if (run_first) settle();  // shut down and closed
            std::move(close_op)([&](error_code ec, close_report r) {
                ++completions;
                got = ec;
                report = r;
            });
        }  // the deferred operation goes (it may keep its arguments until then, as a deferred acquire does)
        settle();
        EXPECT_EQ(completions, 1);
        EXPECT_FALSE(got);
        EXPECT_TRUE(report.closed);
        EXPECT_TRUE(state.expired());
    }
};

// T5. A deferred close holds the pool's state, not a pointer to it. Here it is launched
// at once, while the shutdown's posted drain still holds the state.
TEST_F(deferred_close_adapter, a_deferred_close_outlives_its_pool_object) {
    expect_a_deferred_close_completes_after_its_pool(false);
}

// T5, the use-after-free: the same, with the pool shut down and closed (its io_context
// run: nothing else holds the state) before the close is launched.
TEST_F(deferred_close_adapter, a_deferred_close_launched_after_its_pool_shut_down_completes) {
    expect_a_deferred_close_completes_after_its_pool(true);
}

// An allocator that always fails, as a bounded arena that is full.
template <class T>
struct failing_allocator {
    using value_type = T;
    failing_allocator() noexcept = default;
    template <class U>
    failing_allocator(const failing_allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
    [[noreturn]] T* allocate(std::size_t) { throw std::bad_alloc(); }
    void deallocate(T*, std::size_t) noexcept {}
    template <class U>
    friend bool operator==(const failing_allocator&, const failing_allocator<U>&) noexcept {
        return true;
    }
};

// T6. An acquire admitted on its caller's thread whose operation cannot be allocated
// (the handler's associated allocator throws) throws from the initiating function and
// leaves admission as it was: with L = 2, two such failures leave room for two
// acquires, both granted (not refused busy).
TEST_F(adapter, an_acquire_whose_operation_cannot_be_allocated_leaves_admission_unchanged) {
    auto pool = pool_admitting_two(2);
    outcome never_a;
    outcome never_b;
    EXPECT_THROW(pool->async_acquire(boost::asio::bind_allocator(failing_allocator<void>(), record(never_a))),
                 std::bad_alloc);
    EXPECT_THROW(pool->async_acquire(boost::asio::bind_allocator(failing_allocator<void>(), record(never_b))),
                 std::bad_alloc);
    settle();
    EXPECT_FALSE(never_a.done);
    EXPECT_FALSE(never_b.done);
    outcome a;
    outcome b;
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));
    settle();
    ASSERT_TRUE(a.done);
    ASSERT_TRUE(b.done);
    EXPECT_FALSE(a.ec) << a.ec.message();
    EXPECT_FALSE(b.ec) << b.ec.message();
    EXPECT_TRUE(a.lease);
    EXPECT_TRUE(b.lease);
    EXPECT_EQ(pool->stats().rejected_busy, 0u);
    a.lease.release();
    b.lease.release();
    pool.reset();
    settle();
}

// An acquire through the pool (a fresh handle of its own) that throws takes no handle
// id: ids come from one counter with make_handle's, so the next handle made has the id
// after the last one, whether the acquire that threw was started off the pool's
// executor (through the mailbox) or on it (fed to the core directly); an acquire that
// returns takes one.
TEST_F(adapter, an_acquire_through_the_pool_that_throws_takes_no_handle_id) {
    auto pool = warm_pool(2, 4, 4);
    const auto first = pool->make_handle();
    outcome never_a;
    outcome never_b;
    EXPECT_THROW(pool->async_acquire(boost::asio::bind_allocator(failing_allocator<void>(), record(never_a))),
                 std::bad_alloc);
    bool threw_on_executor = false;
    boost::asio::post(io, [&] {
        try {
            pool->async_acquire(boost::asio::bind_allocator(failing_allocator<void>(), record(never_b)));
        } catch (const std::bad_alloc&) {
            threw_on_executor = true;
        }
    });
    settle();
    EXPECT_TRUE(threw_on_executor);
    EXPECT_FALSE(never_a.done);
    EXPECT_FALSE(never_b.done);
    const auto second = pool->make_handle();
    EXPECT_EQ(second.id(), first.id() + 1) << "an acquire that threw took a handle id";
    outcome a;
    pool->async_acquire(record(a));  // through the mailbox: a fresh handle, an id
    settle();
    ASSERT_TRUE(a.lease);
    a.lease.release();
    outcome b;
    boost::asio::post(io, [&] { pool->async_acquire(record(b)); });  // fed directly: an id too
    settle();
    ASSERT_TRUE(b.lease);
    b.lease.release();
    const auto third = pool->make_handle();
    EXPECT_EQ(third.id(), second.id() + 3);
    settle();
}

// T7 and T7c: 1100 warm slots, more than a posted drain's budget (1024), with room
// for 2000 waiters and 2000 mailbox commands; acquires pushed off the executor, then
// async_close.
class closing_adapter : public adapter {
protected:
    static constexpr std::size_t slots = 1100;

    struct run {
        std::vector<outcome> got;
        int close_completions = 0;
        bool closed = false;
        std::size_t granted = 0;
        std::size_t rejected_closed = 0;
        std::size_t first_closed = 0;  // the first acquire rejected closed (got.size(): none)
        std::size_t last_granted = 0;
    };

    std::unique_ptr<test_pool> make_big_pool() { return warm_pool(slots, 2000, 2000); }

    // `n` acquires, then async_close; settled, and each acquire's one outcome tallied.
    void acquire_then_close(test_pool& pool, std::size_t n, run& r) {
        r.got.resize(n);
        for (auto& g : r.got) pool.async_acquire(record(g));
        pool.async_close([&r](error_code ec, close_report report) {
            ++r.close_completions;
            r.closed = !ec && report.closed;
        });
        settle();
        r.first_closed = n;
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_EQ(r.got[i].completions, 1) << "acquire " << i;
            if (!r.got[i].ec && r.got[i].lease) {
                ++r.granted;
                r.last_granted = i;
            } else if (r.got[i].ec == make_error_code(error::closed)) {
                ++r.rejected_closed;
                r.first_closed = std::min(r.first_closed, i);
            }
        }
    }

    // The close waits for the leases out, and completes once they are back.
    void release_all_then_closed(run& r) {
        EXPECT_EQ(r.close_completions, 0);  // leases are out
        for (auto& g : r.got) g.lease.release();
        settle();
        EXPECT_EQ(r.close_completions, 1);
        EXPECT_TRUE(r.closed);
    }
};

// T7. Every acquire pushed before a close is fed before the shutdown, even when there
// are more of them than one drain's budget: 1500 acquires, then async_close, on 1100
// idle slots. The first 1100 are granted (their leases kept), and only the last 400,
// queued when the shutdown comes, are rejected closed; none is rejected closed while a
// slot was idle. The close completes once the leases are back.
TEST_F(closing_adapter, acquires_pushed_before_a_close_are_fed_before_the_shutdown) {
    constexpr std::size_t total = 1500;
    auto pool = make_big_pool();
    ASSERT_EQ(pool->stats().slots_idle, slots);
    run r;
    acquire_then_close(*pool, total, r);
    EXPECT_EQ(r.granted, slots);
    EXPECT_EQ(r.rejected_closed, total - slots);
    EXPECT_EQ(r.last_granted, slots - 1);
    EXPECT_EQ(r.first_closed, slots) << "an acquire was rejected closed while a slot was idle";
    release_all_then_closed(r);
}

// T7c. The same rule for slot events: releases pushed before the acquires and the close
// are fed before the shutdown, even past a drain's budget. All 1100 slots leased; off
// the executor, the 1100 leases are released (1100 slot events, more than a posted
// drain's budget of 1024), then 1100 acquires are started, then async_close. Every
// acquire finds a slot released before it was pushed: all 1100 are granted, none is
// queued and then rejected closed because the shutdown overtook the last 76 releases.
TEST_F(closing_adapter, releases_pushed_before_a_close_are_fed_before_the_shutdown) {
    auto pool = make_big_pool();
    std::vector<outcome> first(slots);
    for (auto& f : first) pool->async_acquire(record(f));
    settle();
    for (auto& f : first) ASSERT_TRUE(f.lease);
    ASSERT_EQ(pool->stats().slots_leased, slots);

    for (auto& f : first) f.lease.release();  // off the executor: 1100 slot events pushed
    run r;
    acquire_then_close(*pool, slots, r);
    EXPECT_EQ(r.granted, slots);
    EXPECT_EQ(r.rejected_closed, 0u) << "the shutdown overtook releases pushed before it";
    release_all_then_closed(r);
}

// T7b. The other side of T7: a shutdown waits only for the commands pushed before it,
// never for acquires that keep arriving after it. L = 2048 acquires (more than a posted
// drain's budget) are pushed, then async_close; every completion starts a new acquire
// (20,000 in all), so the acquire queue never runs dry. The shutdown must still be fed
// within a few drains: past the acquires pushed before the close and those their
// completions started meanwhile (a few budgets' worth), every acquire is rejected
// closed. A pool that put the shutdown off while any acquire was left would serve all
// 20,000 first (and, with no cap on them, never close).
TEST_F(starving_adapter, a_close_is_not_put_off_by_acquires_that_keep_arriving) {
    int close_completions = 0;
    bool closed = false;
    const tally got = run_stream(
        [](test_pool& pool, auto done) { pool.async_acquire(std::move(done)); },
        [&](test_pool& pool) {
            pool.async_close([&](error_code ec, close_report r) {
                ++close_completions;
                closed = !ec && r.closed;
            });
        },
        [&] { EXPECT_EQ(close_completions, 0); });  // the held lease is out
    // The 2048 pushed before the close, and what their completions started before the
    // shutdown was fed: a few drain budgets (1024 each), far below 20,000.
    EXPECT_LE(starve_total - got.closed, starve_limit + std::size_t{4} * 1024)
        << "the shutdown was put off while acquires kept arriving";
    EXPECT_EQ(close_completions, 1);
    EXPECT_TRUE(closed);
}

}  // namespace
}  // namespace fairpool::testing
