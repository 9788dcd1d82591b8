#pragma once
// A pool of numbered test resources on a real io_context and a manual clock. Every
// resource gets a unique identity; the fixture records which were created, closed and
// destroyed, so tests can prove that a dirty resource is never handed out again.
//
// Time is the test's: the pool reads manual_clock, which only advance() moves, so a
// deadline, a backoff, a retire grace or a close deadline expires exactly when the
// test says, never because the machine was slow.
#include <gtest/gtest.h>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <memory>
#include <set>
#include <vector>

#include "fairpool/asio/pool.hpp"
#include "manual_clock.hpp"

namespace fairpool::testing {

struct resource_log {
    int created = 0;
    int closed = 0;
    int destroyed = 0;
    bool fail_creation = false;
};

// A resource that reports its own destruction.
class resource {
public:
    resource(int id, std::shared_ptr<resource_log> log) : id_(id), log_(std::move(log)) {}
    resource(resource&& other) noexcept : id_(other.id_), log_(std::move(other.log_)) {}
    resource& operator=(resource&&) = delete;
    ~resource() {
        if (log_) ++log_->destroyed;
    }
    [[nodiscard]] int id() const noexcept { return id_; }

private:
    int id_;
    std::shared_ptr<resource_log> log_;
};

using test_pool = pool<resource, manual_clock, manual_wait_traits>;
using test_lease = test_pool::lease_type;
using manual_timer = boost::asio::basic_waitable_timer<manual_clock, manual_wait_traits>;
using namespace std::chrono_literals;

// The outcome of one acquire, as delivered to its handler.
struct outcome {
    bool done = false;
    int completions = 0;
    boost::system::error_code ec;
    test_lease lease;
};

inline auto record(outcome& o) {
    return [&o](boost::system::error_code ec, test_lease l) {
        ++o.completions;
        o.done = true;
        o.ec = ec;
        o.lease = std::move(l);
    };
}

class adapter : public ::testing::Test {
protected:
    pool_options options(std::uint64_t max_slots, std::uint64_t min_slots = 0) {
        pool_options o;
        o.max_slots = max_slots;
        o.min_slots = min_slots;
        o.spawn_backoff_initial = std::chrono::milliseconds(1);
        o.spawn_backoff_max = std::chrono::milliseconds(4);
        o.retire_grace = std::chrono::milliseconds(100);
        return o;
    }

    std::unique_ptr<test_pool> make_pool(const pool_options& o) {
        auto log = log_;
        return std::make_unique<test_pool>(
            io.get_executor(), o,
            [log]() -> boost::asio::awaitable<resource> {
                if (log->fail_creation) throw std::runtime_error("backend down");
                co_return resource(++log->created, log);
            },
            [log](resource&) -> boost::asio::awaitable<void> {
                ++log->closed;
                co_return;
            });
    }

    // A warm one-slot pool (min_slots 1, retire_grace 100 ms) whose close hook is `close`.
    template <class Close>
    std::unique_ptr<test_pool> one_slot_closing_with(Close close) {
        auto log = log_;
        auto pool = std::make_unique<test_pool>(
            io.get_executor(), options(1, 1),
            [log]() -> boost::asio::awaitable<resource> { co_return resource(++log->created, log); }, std::move(close));
        settle();
        return pool;
    }

    // The same, with a close hook that counts itself in the log (closed) and never
    // returns.
    std::unique_ptr<test_pool> one_slot_whose_close_hangs() {
        auto log = log_;
        return one_slot_closing_with([log](resource&) -> boost::asio::awaitable<void> {
            ++log->closed;
            manual_timer never(co_await boost::asio::this_coro::executor, manual_clock::time_point::max());
            co_await never.async_wait(boost::asio::use_awaitable);
        });
    }

    // Leases the pool's one idle slot and gives it back dirty: its resource retires.
    void retire_one_dirty(test_pool& pool) {
        outcome a;
        pool.async_acquire(record(a));
        settle();
        ASSERT_TRUE(a.lease);
        a.lease.mark_dirty();
        a.lease.release();
        settle();
    }

    // A warm pool of `slots` (all spawned) with room for `max_waiters` queued waiters and
    // `mailbox_capacity` commands in the mailbox.
    std::unique_ptr<test_pool> warm_pool(std::uint64_t slots, std::uint64_t max_waiters,
                                         std::uint32_t mailbox_capacity) {
        auto o = options(slots, slots);
        o.max_waiters = max_waiters;
        o.mailbox_capacity = mailbox_capacity;
        auto pool = make_pool(o);
        settle();
        return pool;
    }

    // A warm pool whose admission takes at most two outstanding acquires: L =
    // max_waiters 1 + mailbox_capacity 1.
    std::unique_ptr<test_pool> pool_admitting_two(std::uint64_t slots) { return warm_pool(slots, 1, 1); }

    // A warm one-slot pool whose slot is leased to `holder`: the next acquire queues.
    std::unique_ptr<test_pool> one_slot_held(outcome& holder) {
        auto pool = make_pool(options(1, 1));
        settle();
        pool->async_acquire(record(holder));
        settle();
        return pool;
    }

    // A pool of `max_slots` (one made at start) with one lease out, held in `holder`: a
    // close then waits for it.
    std::unique_ptr<test_pool> pool_with_a_lease_out(outcome& holder, std::uint64_t max_slots) {
        auto pool = make_pool(options(max_slots, 1));
        settle();
        pool->async_acquire(record(holder));
        settle();
        return pool;
    }

    // Runs every handler that is ready, and those they make ready, without waiting:
    // queued acquires keep work outstanding, so io.run() would not return. Returns how
    // many ran.
    std::size_t settle() {
        std::size_t ran = 0;
        for (;;) {
            io.restart();
            const std::size_t n = io.poll();
            if (n == 0) return ran;
            ran += n;
        }
    }

    // What a close's handler was given, and how many times it ran.
    struct close_outcome {
        int completions = 0;
        boost::system::error_code ec;
        close_report report;
        // A close's handler that records here (the outcome outlives every call of it).
        auto handler() {
            return [this](boost::system::error_code e, close_report r) {
                ++completions;
                ec = e;
                report = r;
            };
        }
    };

    // A close whose deadline, `after` from now, has come: the clock moved to it, the
    // close completed exactly once, with error::timeout. `c` (the caller's, since the
    // handler must never run again: the caller checks later) gets its outcome.
    void close_past_its_deadline(test_pool& pool, manual_clock::duration after, close_outcome& c) {
        pool.async_close(manual_clock::now() + after, c.handler());
        advance(after);
        EXPECT_EQ(c.completions, 1);
        EXPECT_EQ(c.ec, make_error_code(error::timeout));
    }

    // Every field of a close's report against `want` (a field `want` leaves out: 0).
    static void expect_report(const close_report& got, const close_report& want) {
        EXPECT_EQ(got.closed, want.closed);
        EXPECT_EQ(got.leases_out, want.leases_out);
        EXPECT_EQ(got.waiters_queued, want.waiters_queued);
        EXPECT_EQ(got.slots_spawning, want.slots_spawning);
        EXPECT_EQ(got.slots_retiring, want.slots_retiring);
        EXPECT_EQ(got.slots_checking, want.slots_checking);
        EXPECT_EQ(got.slots_resetting, want.slots_resetting);
    }

    // A one-slot pool's queued waiters served one after the other: `blocker` (the
    // lease holding the slot) given back, then `current` (where each grant's handler
    // keeps its lease) given back after each of `grants` grants.
    void serve_in_turn(test_lease& blocker, test_lease& current, int grants) {
        settle();
        blocker.release();
        for (int i = 0; i < grants; ++i) {
            settle();
            current.release();
        }
        settle();
    }

    // Moves the manual clock forward, then runs everything that is due by then.
    template <class Clock = manual_clock>
    void advance(typename Clock::duration d) {
        Clock::advance(d);
        run_due<Clock>();
    }

    // Runs until every timer the manual clock has reached has fired and nothing is left
    // ready to run. A probe timer due now is the barrier: the reactor collects every
    // expired timer of the manual clock in one pass, so once the probe has fired, so
    // has every pool timer that was due, and settle() runs what they made ready. That
    // may arm a timer that is due already (a close deadline in the past, say), so the
    // rounds go on until one runs nothing but the probe.
    template <class Clock = manual_clock>
    void run_due() {
        for (int round = 0; round < 1000; ++round) {
            bool fired = false;
            boost::asio::basic_waitable_timer<Clock, basic_manual_wait_traits<Clock>> probe(io, Clock::now());
            probe.async_wait([&fired](boost::system::error_code) { fired = true; });
            std::size_t ran = 0;
            while (!fired) {
                io.restart();
                ran += io.run_one();  // the probe is outstanding work: returns once a handler ran
            }
            ran += settle();
            if (ran == 1) return;
        }
        ADD_FAILURE() << "timers kept firing at the same manual time for 1000 rounds";
    }

    boost::asio::io_context io;
    std::shared_ptr<resource_log> log_ = std::make_shared<resource_log>();
};

}  // namespace fairpool::testing
