// Tenant isolation in the adapter (issue 15), on one thread and the manual clock:
// handle options (weight, max_leases, name) and the config's cap, pool.resize (its
// checks on the caller's thread, grow and shrink, to zero and back, latest wins, after
// shutdown), the pool's demand and its peak (pool_stats, take_demand_peak), the
// per-handle statistics and their Prometheus text, and a recording of caps and resizes
// replayed by fairpool-replay --check. One test runs on two threads and the real clock:
// a resize racing the close.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <unistd.h>

#include "fairpool/asio/detail/prometheus_handles.hpp"
#include "fairpool/asio/prometheus.hpp"
#include "fairpool/core/prometheus.hpp"
#include "fixture.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

handle_options capped(std::uint64_t max_leases, std::string name = {}) {
    handle_options o;
    o.max_leases = max_leases;
    o.name = std::move(name);
    return o;
}

class isolation : public adapter {
protected:
    // A pool whose resources take 1 s of the manual clock to make: its spawns stay in
    // flight until the test advances the clock.
    std::unique_ptr<test_pool> slow_pool(const pool_options& o) {
        auto log = log_;
        return std::make_unique<test_pool>(io.get_executor(), o, [log]() -> boost::asio::awaitable<resource> {
            manual_timer made(co_await boost::asio::this_coro::executor, manual_clock::now() + 1s);
            co_await made.async_wait(boost::asio::use_awaitable);
            co_return resource(++log->created, log);
        });
    }
};

// --- Caps ----------------------------------------------------------------------------

TEST_F(isolation, a_capped_handles_second_acquire_queues_until_its_lease_returns_while_another_is_served) {
    auto pool = make_pool(options(2, 2));
    settle();
    auto greedy = pool->make_handle(capped(1));
    auto light = pool->make_handle();
    outcome g1, g2, l1;
    greedy.async_acquire(record(g1));
    greedy.async_acquire(record(g2));
    settle();
    ASSERT_TRUE(g1.lease);
    EXPECT_FALSE(g2.done) << "granted beyond its cap of 1";
    EXPECT_EQ(pool->stats().slots_idle, 1u);  // idle beside it: the cap, not the size
    EXPECT_EQ(pool->stats().waiters_behind_cap, 1u);
    EXPECT_EQ(pool->stats().handles_at_cap, 1u);
    light.async_acquire(record(l1));
    settle();
    ASSERT_TRUE(l1.lease) << "the other handle is served from the idle slot";
    EXPECT_FALSE(g2.done);
    l1.lease.release();
    settle();
    EXPECT_FALSE(g2.done) << "another handle's release does not lift the cap";
    g1.lease.release();
    settle();
    ASSERT_TRUE(g2.lease);
    EXPECT_EQ(pool->stats().waiters_behind_cap, 0u);
    EXPECT_EQ(greedy.stats().leases_out_max, 1u);
}

TEST_F(isolation, the_configs_cap_applies_to_handles_without_options_and_an_option_overrides_it) {
    auto o = options(3, 3);
    o.max_leases_per_handle = 1;
    auto pool = make_pool(o);
    settle();
    auto plain = pool->make_handle();
    auto uncapped = pool->make_handle(capped(0));
    outcome p1, p2, u1, u2;
    plain.async_acquire(record(p1));
    plain.async_acquire(record(p2));
    uncapped.async_acquire(record(u1));
    uncapped.async_acquire(record(u2));
    settle();
    EXPECT_TRUE(p1.lease);
    EXPECT_FALSE(p2.done) << "the config's max_leases_per_handle=1 does not hold";
    EXPECT_TRUE(u1.lease);
    EXPECT_TRUE(u2.lease) << "max_leases=0 is no cap, whatever the config says";
    p1.lease.release();
    settle();
    EXPECT_TRUE(p2.lease);
}

TEST_F(isolation, a_bad_weight_is_refused_at_make_handle_and_nothing_is_sent) {
    auto pool = make_pool(options(1, 1));
    settle();
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    for (const std::uint32_t weight : {0U, 65536U}) {
        handle_options o;
        o.weight = weight;
        EXPECT_THROW((void)pool->make_handle(o), std::invalid_argument) << weight;
        EXPECT_THROW((void)pool->make_handle(weight), std::invalid_argument) << weight;
    }
    handle_options heaviest;
    heaviest.weight = 65535;
    auto h = pool->make_handle(heaviest);
    settle();
    EXPECT_EQ(pool->diagnostics().commands_fed, fed);
    outcome o;
    h.async_acquire(record(o));
    settle();
    EXPECT_TRUE(o.lease);
}

// --- Resize --------------------------------------------------------------------------

TEST_F(isolation, resize_grows_then_shrinks_retiring_idle_slots_at_once_and_leased_ones_when_released) {
    auto o = options(1, 1);
    o.slot_capacity = 3;
    auto pool = make_pool(o);
    settle();
    ASSERT_FALSE(pool->resize(3, 3));
    settle();
    EXPECT_EQ(log_->created, 3);
    EXPECT_EQ(pool->stats().slots_idle, 3u);
    outcome a, b;
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));
    settle();
    ASSERT_TRUE(a.lease);
    ASSERT_TRUE(b.lease);
    ASSERT_FALSE(pool->resize(1, 0));
    settle();
    run_due();
    pool_stats s = pool->stats();
    EXPECT_EQ(s.resizes, 2u);
    EXPECT_EQ(s.retired_resize, 1u);  // the idle one
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(s.slots_leased, 2u);
    a.lease.release();  // surplus: retired when it comes back
    settle();
    run_due();
    s = pool->stats();
    EXPECT_EQ(s.retired_resize, 2u);
    EXPECT_EQ(log_->closed, 2);
    EXPECT_EQ(log_->destroyed, 2);
    b.lease.release();  // one slot live, as max_slots says: kept
    settle();
    s = pool->stats();
    EXPECT_EQ(s.retired_resize, 2u);
    EXPECT_EQ(s.slots_idle, 1u);
    EXPECT_EQ(*o.slot_capacity - s.held, 2u);  // empty
    EXPECT_EQ(log_->created, 3);
}

TEST_F(isolation, resize_refuses_bad_sizes_on_the_callers_thread_and_changes_nothing) {
    auto o = options(2, 1);
    o.slot_capacity = 3;
    auto pool = make_pool(o);
    settle();
    const pool_stats before = pool->stats();
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    const std::uint64_t posted = pool->diagnostics().drains_posted;
    for (const auto& [max, min] : {std::pair<std::uint64_t, std::uint64_t>{0, 1}, {4, 0}, {2, 3}, {1, 2},
                                   {~std::uint64_t{0}, 0}, {1ULL << 32, 0}})
        EXPECT_EQ(pool->resize(max, min), make_error_code(error::bad_size)) << max << " " << min;
    settle();
    EXPECT_EQ(pool->diagnostics().commands_fed, fed);
    EXPECT_EQ(pool->diagnostics().drains_posted, posted) << "a refused resize sent something";
    EXPECT_EQ(pool->stats(), before);
    EXPECT_EQ(make_error_code(error::bad_size).message(),
              "bad pool size: max_slots must be 0..slot_capacity and min_slots at most max_slots");
    EXPECT_FALSE(pool->resize(3, 3));  // the bounds themselves are fine
    EXPECT_FALSE(pool->resize(0, 0));  // fed after the first: latest wins
    settle();
    EXPECT_EQ(pool->stats().resizes, 1u);
    EXPECT_EQ(log_->created, 1);
}

// Decision 16: max_slots 0 is a size. The pool holds no resource: the idle one retires
// at once, the leased one when it comes back (not handed to the waiter queued
// meanwhile); nothing spawns; acquires wait and time out, or are refused saturated
// when the queue is full. A resize back up spawns for the waiter.
TEST_F(isolation, resize_to_zero_holds_no_resource_an_acquire_times_out_and_a_resize_back_up_grants_a_waiter) {
    auto o = options(2, 1);
    o.max_waiters = 1;
    auto pool = make_pool(o);
    settle();
    outcome a, b;
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));
    settle();
    ASSERT_TRUE(a.lease);
    ASSERT_TRUE(b.lease);
    b.lease.release();  // one leased, one idle
    settle();
    const std::uint64_t spawns = pool->stats().spawns;
    EXPECT_EQ(spawns, 2u);
    ASSERT_FALSE(pool->resize(0, 0));
    settle();
    run_due();
    pool_stats s = pool->stats();
    EXPECT_EQ(s.resizes, 1u);
    EXPECT_EQ(s.retired_resize, 1u);  // the idle one, at once
    EXPECT_EQ(s.slots_idle, 0u);
    EXPECT_EQ(s.slots_leased, 1u);
    EXPECT_EQ(log_->closed, 1);
    outcome w, full;
    pool->async_acquire(10ms, record(w));
    settle();
    EXPECT_FALSE(w.done);
    pool->async_acquire(record(full));
    settle();
    EXPECT_EQ(full.ec, make_error_code(error::saturated));  // max_waiters 1
    a.lease.release();  // surplus: retired, not handed to w
    settle();
    run_due();
    EXPECT_FALSE(w.done);
    s = pool->stats();
    EXPECT_EQ(s.retired_resize, 2u);
    EXPECT_EQ(s.held, 0u);
    EXPECT_EQ(s.queued_waiters, 1u);
    EXPECT_EQ(s.spawns, spawns) << "a pool resized to 0 spawned";
    advance(10ms);
    ASSERT_TRUE(w.done);
    EXPECT_EQ(w.ec, make_error_code(error::timeout));
    EXPECT_FALSE(w.lease);
    outcome x;
    pool->async_acquire(record(x));
    settle();
    advance(1s);
    EXPECT_FALSE(x.done);
    EXPECT_EQ(pool->stats().spawns, spawns);
    ASSERT_FALSE(pool->resize(2, 0));
    settle();
    ASSERT_TRUE(x.lease) << "the resize back up did not serve the waiter";
    s = pool->stats();
    EXPECT_EQ(s.spawns, spawns + 1);
    EXPECT_EQ(s.rejected_timeout, 1u);
    EXPECT_EQ(s.rejected_saturated, 1u);
    EXPECT_EQ(s.resizes, 2u);
    EXPECT_EQ(log_->created, 3);
    EXPECT_EQ(log_->destroyed, 2);
}

TEST_F(isolation, resizes_the_pool_has_not_taken_yet_coalesce_the_latest_winning) {
    auto o = options(1, 1);
    o.slot_capacity = 4;
    auto pool = make_pool(o);
    settle();
    // From outside the pool's executor: each posts (or finds posted) a drain; none runs yet.
    ASSERT_FALSE(pool->resize(4, 4));
    ASSERT_FALSE(pool->resize(2, 2));
    settle();
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.resizes, 1u);
    EXPECT_EQ(log_->created, 2);
    EXPECT_EQ(s.slots_idle, 2u);
}

TEST_F(isolation, resize_after_shutdown_is_refused_closed) {
    auto o = options(1, 1);
    o.slot_capacity = 2;
    auto pool = make_pool(o);
    settle();
    bool closed = false;
    pool->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    EXPECT_EQ(pool->resize(2, 2), make_error_code(error::closed));  // shutting down already
    settle();
    run_due();
    EXPECT_TRUE(closed);
    EXPECT_EQ(pool->resize(1, 0), make_error_code(error::closed));
    EXPECT_EQ(pool->resize(0, 0), make_error_code(error::closed));
    EXPECT_EQ(pool->resize(0, 1), make_error_code(error::bad_size));  // sizes are checked first
    settle();
    EXPECT_EQ(pool->stats().resizes, 0u);
    EXPECT_EQ(log_->created, 1);
}

// The resize word orders a resize against the shutdown (mailbox.hpp): a resize posted
// before the shutdown is taken (the latest), none is posted after it.
TEST(resize_request, a_resize_posted_before_the_shutdown_is_taken_and_none_after_it) {
    detail::resize_request r;
    std::uint64_t max_slots = 0;
    std::uint64_t min_slots = 0;
    EXPECT_FALSE(r.take(max_slots, min_slots));
    ASSERT_TRUE(r.post(3, 1));
    ASSERT_TRUE(r.post(2, 1));  // not taken yet: replaced
    r.shut();
    EXPECT_FALSE(r.post(4, 0)) << "a resize posted after the shutdown";
    ASSERT_TRUE(r.take(max_slots, min_slots)) << "the resize posted before the shutdown was lost";
    EXPECT_EQ(max_slots, 2u);
    EXPECT_EQ(min_slots, 1u);
    EXPECT_FALSE(r.take(max_slots, min_slots));
    EXPECT_FALSE(r.post(1, 0));
}

// A resize to max_slots 0 and min_slots 0 is pending too (the word's pending bit).
TEST(resize_request, a_resize_to_zero_is_taken) {
    detail::resize_request r;
    std::uint64_t max_slots = 9;
    std::uint64_t min_slots = 9;
    ASSERT_TRUE(r.post(0, 0));
    ASSERT_TRUE(r.take(max_slots, min_slots)) << "a resize to 0 was lost";
    EXPECT_EQ(max_slots, 0u);
    EXPECT_EQ(min_slots, 0u);
    EXPECT_FALSE(r.take(max_slots, min_slots));
    ASSERT_TRUE(r.post(65535, 65535));
    r.shut();
    ASSERT_TRUE(r.take(max_slots, min_slots));
    EXPECT_EQ(max_slots, 65535u);
    EXPECT_EQ(min_slots, 65535u);
}

// --- Demand ------------------------------------------------------------------------

// pool_stats::demand is slots_leased + slots_spawning + the eligible waiters: a waiter
// behind its handle's lease cap is not counted (it could not take a free slot); a
// waiter whose resource is being made counts, and so does that spawning slot.
// active_weight sums the weights of the handles with a waiter, behind a cap or not.
TEST_F(isolation, demand_counts_leased_spawning_and_eligible_waiters_exactly) {
    auto pool = slow_pool(options(3, 0));
    settle();
    handle_options greedy_options;
    greedy_options.weight = 2;
    greedy_options.max_leases = 1;
    auto greedy = pool->make_handle(greedy_options);
    auto light = pool->make_handle(4);
    outcome g1, g2, l1, l2;
    greedy.async_acquire(record(g1));
    settle();
    pool_stats s = pool->stats();
    EXPECT_EQ(s.slots_spawning, 1u);
    EXPECT_EQ(s.queued_waiters, 1u);
    EXPECT_EQ(s.demand, 2u);
    EXPECT_EQ(s.active_weight, 2u);
    advance(1s);
    ASSERT_TRUE(g1.lease);
    s = pool->stats();
    EXPECT_EQ(s.demand, 1u);  // the lease
    EXPECT_EQ(s.active_weight, 0u);
    greedy.async_acquire(record(g2));
    settle();
    s = pool->stats();
    EXPECT_EQ(s.queued_waiters, 1u);
    EXPECT_EQ(s.waiters_behind_cap, 1u);
    EXPECT_EQ(s.slots_spawning, 0u);  // nothing is made for a waiter behind its cap
    EXPECT_EQ(s.demand, 1u) << "a waiter behind its cap was counted";
    EXPECT_EQ(s.active_weight, 2u);
    light.async_acquire(record(l1));
    light.async_acquire(record(l2));
    settle();
    s = pool->stats();
    EXPECT_EQ(s.slots_leased, 1u);
    EXPECT_EQ(s.slots_spawning, 2u);
    EXPECT_EQ(s.queued_waiters, 3u);
    EXPECT_EQ(s.waiters_behind_cap, 1u);
    EXPECT_EQ(s.demand, 1u + 2u + 2u);
    EXPECT_EQ(s.active_weight, 2u + 4u);
    advance(1s);
    ASSERT_TRUE(l1.lease);
    ASSERT_TRUE(l2.lease);
    s = pool->stats();
    EXPECT_EQ(s.demand, 3u);  // three leases; g2 still behind its cap
    EXPECT_EQ(s.active_weight, 2u);
    g1.lease.release();  // handed to g2: below its cap again
    settle();
    ASSERT_TRUE(g2.lease);
    s = pool->stats();
    EXPECT_EQ(s.demand, 3u);
    EXPECT_EQ(s.queued_waiters, 0u);
    EXPECT_EQ(s.active_weight, 0u);
    g2.lease.release();
    l1.lease.release();
    l2.lease.release();
    settle();
    s = pool->stats();
    EXPECT_EQ(s.slots_idle, 3u);
    EXPECT_EQ(s.demand, 0u) << "idle resources are held, not demanded";
    EXPECT_EQ(s.demand_peak, 5u);
}

// demand_peak is the highest demand published since the last take_demand_peak(): it
// keeps the high-water mark when the load drops, reading stats() does not reset it,
// and a take returns it and starts the next interval at the demand in force.
TEST_F(isolation, demand_peak_keeps_the_high_water_mark_until_take_demand_peak_resets_it_to_the_demand_now) {
    auto pool = slow_pool(options(2, 0));
    settle();
    EXPECT_EQ(pool->stats().demand_peak, 0u);
    EXPECT_EQ(pool->take_demand_peak(), 0u);
    outcome a, b, c;
    pool->async_acquire(record(a));
    settle();
    EXPECT_EQ(pool->stats().demand, 2u);  // a waiter and its spawn
    advance(1s);
    ASSERT_TRUE(a.lease);
    pool->async_acquire(record(b));
    pool->async_acquire(record(c));
    settle();
    EXPECT_EQ(pool->stats().demand, 4u);  // a's lease, b's spawn, b and c queued
    advance(1s);
    ASSERT_TRUE(b.lease);
    a.lease.release();  // handed to c
    settle();
    ASSERT_TRUE(c.lease);
    pool_stats s = pool->stats();
    EXPECT_EQ(s.demand, 2u);
    EXPECT_EQ(s.demand_peak, 4u);
    b.lease.release();
    c.lease.release();
    settle();
    s = pool->stats();
    EXPECT_EQ(s.demand, 0u);
    EXPECT_EQ(s.demand_peak, 4u) << "the load dropped and the peak with it";
    EXPECT_EQ(pool->stats().demand_peak, 4u) << "stats() reset the peak";
    EXPECT_EQ(pool->take_demand_peak(), 4u);
    EXPECT_EQ(pool->stats().demand_peak, 0u);
    EXPECT_EQ(pool->take_demand_peak(), 0u);
    outcome d;
    pool->async_acquire(record(d));  // granted at once: both resources are idle
    settle();
    ASSERT_TRUE(d.lease);
    EXPECT_EQ(pool->stats().demand_peak, 1u);
    EXPECT_EQ(pool->take_demand_peak(), 1u);
    s = pool->stats();
    EXPECT_EQ(s.demand, 1u);
    EXPECT_EQ(s.demand_peak, 1u) << "the new interval starts at the demand now, not at 0";
    d.lease.release();
    settle();
    s = pool->stats();
    EXPECT_EQ(s.demand, 0u);
    EXPECT_EQ(s.demand_peak, 1u);
    EXPECT_EQ(pool->take_demand_peak(), 1u);
    EXPECT_EQ(pool->take_demand_peak(), 0u);
}

// One thread resizes until it is refused `closed` while another closes the pool: every
// resize that was accepted is fed before the shutdown, and none after it (before the
// resize word carried the shutdown, a resize checked "not shutting down", then the
// shutdown was fed, then the resize: about 1 run in 100 here). Read from a recording
// of each run.
TEST(isolation_threads, a_resize_racing_the_close_is_either_fed_before_the_shutdown_or_refused) {
    const auto dir = std::filesystem::temp_directory_path() / ("fairpool-resize-race-" + std::to_string(::getpid()));
    const int runs = std::getenv("FAIRPOOL_RESIZE_RACES") ? std::atoi(std::getenv("FAIRPOOL_RESIZE_RACES")) : 1000;
    int runs_with_a_resize_fed = 0;
    for (int run = 0; run < runs; ++run) {
        boost::asio::io_context io;
        auto work = boost::asio::make_work_guard(io);
        std::thread runner([&io] { io.run(); });
        pool_options o;
        o.max_slots = 2;
        o.min_slots = 0;
        o.recording = whole_test_in_memory();
        auto p = std::make_unique<pool<int>>(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 1; });
        std::atomic<int> accepted{0};
        std::thread resizer([&] {
            for (std::uint64_t k = 0; !p->resize(1 + (k & 1), 0); ++k) accepted.fetch_add(1);
        });
        while (accepted.load() < 20) std::this_thread::yield();
        std::promise<void> closed;
        p->async_close([&closed](error_code, close_report) { closed.set_value(); });
        resizer.join();
        closed.get_future().wait();
        std::promise<void> drained;  // a drain still posted (a late resize's) runs first
        boost::asio::post(io, [&] { boost::asio::post(io, [&] { drained.set_value(); }); });
        drained.get_future().wait();
        std::filesystem::remove_all(dir);
        ASSERT_FALSE(p->dump_recording(dir));
        const auto files = segment_files(dir);
        ASSERT_EQ(files.size(), 1u);
        bool shut = false;
        for (const trace::step& s : read_segment(files.front()).steps) {
            if (s.event.kind == core::event_kind::shutdown) shut = true;
            if (s.event.kind == core::event_kind::resize) {
                ASSERT_FALSE(shut) << "run " << run << ": a resize fed after the shutdown, line " << s.line;
                ++runs_with_a_resize_fed;
            }
        }
        ASSERT_TRUE(shut);
        work.reset();
        p.reset();
        runner.join();
    }
    std::filesystem::remove_all(dir);
    EXPECT_GT(runs_with_a_resize_fed, 0);
}

// --- Per-handle statistics -------------------------------------------------------------

TEST_F(isolation, handle_stats_count_exactly_a_scripted_sequence) {
    auto o = options(2, 2);
    o.max_waiters = 1;
    o.mailbox_capacity = 1;  // two acquires outstanding at most: the third is busy
    auto pool = make_pool(o);
    settle();
    auto t = pool->make_handle(capped(0, "t"));
    EXPECT_EQ(t.name(), "t");
    EXPECT_EQ(t.stats(), handle_stats{});

    outcome g1, g2;  // two immediate grants: waits 0, two out
    t.async_acquire(record(g1));
    t.async_acquire(record(g2));
    settle();
    ASSERT_TRUE(g1.lease && g2.lease);
    outcome timed;  // queued 10 ms, then timeout
    t.async_acquire(10ms, record(timed));
    settle();
    advance(10ms);
    EXPECT_EQ(timed.ec, make_error_code(error::timeout));
    outcome cancelled;  // queued, then cancelled
    boost::asio::cancellation_signal signal;
    t.async_acquire(boost::asio::bind_cancellation_slot(signal.slot(), record(cancelled)));
    settle();
    signal.emit(boost::asio::cancellation_type::terminal);
    settle();
    EXPECT_EQ(cancelled.ec, boost::asio::error::operation_aborted);
    outcome waited, saturated, busy;  // one queued; one beyond max_waiters; one beyond the mailbox
    t.async_acquire(record(waited));
    t.async_acquire(record(saturated));
    t.async_acquire(record(busy));
    settle();
    EXPECT_EQ(saturated.ec, make_error_code(error::saturated));
    EXPECT_EQ(busy.ec, make_error_code(error::busy));
    advance(7ms);
    g1.lease.mark_dirty();
    g1.lease.release();  // dirty: the slot retires; a fresh one is spawned for the waiter
    settle();
    ASSERT_TRUE(waited.lease);
    handle_stats expected;
    expected.acquires = 6;  // busy never reached the scheduler
    expected.grants = 3;
    expected.rejected_timeout = 1;
    expected.rejected_cancelled = 1;
    expected.rejected_saturated = 1;
    expected.rejected_busy = 1;
    expected.leases_out = 2;
    expected.leases_out_max = 2;
    expected.wait_total_ns = 7'000'000;  // the queued waiter's: from its acquire to the spawn replacing the dirty slot
    expected.wait_max_ns = 7'000'000;
    EXPECT_EQ(t.stats(), expected);

    // Deregistered: a queued waiter of the handle, rejected when it goes; its leases
    // out still count back into its block, read through an observer.
    outcome orphan;
    t.async_acquire(record(orphan));
    settle();
    const handle_observer watch = t.observer();
    t.reset();
    settle();
    EXPECT_EQ(orphan.ec, make_error_code(error::deregistered));
    EXPECT_EQ(t.stats(), handle_stats{});  // an empty handle
    expected.acquires = 7;
    expected.rejected_deregistered = 1;
    EXPECT_EQ(watch.stats(), expected);
    EXPECT_EQ(watch.name(), "t");
    g2.lease.release();
    waited.lease.mark_dirty();
    waited.lease.release();
    settle();
    expected.leases_out = 0;
    EXPECT_EQ(watch.stats(), expected) << "leases that outlived their handle counted back";
}

TEST_F(isolation, a_lease_outliving_everything_but_its_observer_counts_back) {
    auto pool = make_pool(options(1, 1));
    settle();
    handle_observer watch;
    test_lease kept;
    {
        auto h = pool->make_handle(capped(1, "h"));
        watch = h.observer();
        outcome o;
        h.async_acquire(record(o));
        settle();
        kept = std::move(o.lease);
    }
    settle();
    EXPECT_EQ(watch.stats().leases_out, 1u);
    kept.release();
    settle();
    EXPECT_EQ(watch.stats().leases_out, 0u);
    EXPECT_EQ(watch.stats().leases_out_max, 1u);
    EXPECT_EQ(watch.stats().grants, 1u);
}

// A lease counts back to its handle once. The slot's next lease here goes to no handle
// (pool.async_acquire): its release must leave the first handle's count alone, though
// the actor still keeps that handle's block for the slot (slot_keeping.hpp).
TEST_F(isolation, a_slots_next_lease_without_a_handle_counts_nothing_back_to_the_last_one) {
    auto pool = make_pool(options(1, 1));
    settle();
    auto h = pool->make_handle(capped(0, "h"));
    outcome mine;
    h.async_acquire(record(mine));
    settle();
    ASSERT_TRUE(mine.lease);
    EXPECT_EQ(h.stats().leases_out, 1u);
    mine.lease.release();
    settle();
    EXPECT_EQ(h.stats().leases_out, 0u);
    outcome anonymous;
    pool->async_acquire(record(anonymous));
    settle();
    ASSERT_TRUE(anonymous.lease);
    EXPECT_EQ(anonymous.lease.slot(), 0u);  // the slot h's lease had
    anonymous.lease.release();
    settle();
    handle_stats expected;
    expected.acquires = 1;
    expected.grants = 1;
    expected.leases_out = 0;
    expected.leases_out_max = 1;
    EXPECT_EQ(h.stats(), expected);
}

TEST_F(isolation, the_prometheus_text_of_two_named_handles) {
    auto pool = make_pool(options(1, 1));
    settle();
    auto a = pool->make_handle(capped(1, "alpha"));
    auto b = pool->make_handle(capped(0, "b\"eta"));
    outcome a1, b1, b2;
    a.async_acquire(record(a1));
    settle();
    b.async_acquire(record(b1));
    b.async_acquire(1500ns, record(b2));
    settle();
    advance(1500ns);  // b2 times out
    advance(1s + 250us);
    a1.lease.release();  // b1 waited 1.0002515 s
    settle();
    ASSERT_TRUE(b1.lease);
    // What a scrape gets: the pool's families, then its handles'.
    const std::string text = prometheus_text(*pool, "db", {a.observer(), b.observer()});
    EXPECT_EQ(text, core::prometheus_text(pool->diagnostics().scheduler, "db") +
                        R"(# HELP fairpool_handle_acquires_total Acquires of the handle that reached the scheduler.
# TYPE fairpool_handle_acquires_total counter
fairpool_handle_acquires_total{pool="db",tenant="alpha"} 1
fairpool_handle_acquires_total{pool="db",tenant="b\"eta"} 2
# HELP fairpool_handle_grants_total Acquires of the handle granted a resource.
# TYPE fairpool_handle_grants_total counter
fairpool_handle_grants_total{pool="db",tenant="alpha"} 1
fairpool_handle_grants_total{pool="db",tenant="b\"eta"} 1
# HELP fairpool_handle_rejections_total Acquires of the handle rejected, by reason.
# TYPE fairpool_handle_rejections_total counter
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="saturated"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="timeout"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="cancelled"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="deregistered"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="closed"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="busy"} 0
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="saturated"} 0
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="timeout"} 1
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="cancelled"} 0
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="deregistered"} 0
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="closed"} 0
fairpool_handle_rejections_total{pool="db",tenant="b\"eta",reason="busy"} 0
# HELP fairpool_handle_leases_out Leases of the handle out now.
# TYPE fairpool_handle_leases_out gauge
fairpool_handle_leases_out{pool="db",tenant="alpha"} 0
fairpool_handle_leases_out{pool="db",tenant="b\"eta"} 1
# HELP fairpool_handle_leases_out_max The most leases of the handle out at once.
# TYPE fairpool_handle_leases_out_max gauge
fairpool_handle_leases_out_max{pool="db",tenant="alpha"} 1
fairpool_handle_leases_out_max{pool="db",tenant="b\"eta"} 1
# HELP fairpool_handle_wait_seconds_total Time from acquire to grant, summed over the handle's grants.
# TYPE fairpool_handle_wait_seconds_total counter
fairpool_handle_wait_seconds_total{pool="db",tenant="alpha"} 0
fairpool_handle_wait_seconds_total{pool="db",tenant="b\"eta"} 1.0002515
# HELP fairpool_handle_wait_seconds_max The longest time from acquire to grant of one of the handle's grants.
# TYPE fairpool_handle_wait_seconds_max gauge
fairpool_handle_wait_seconds_max{pool="db",tenant="alpha"} 0
fairpool_handle_wait_seconds_max{pool="db",tenant="b\"eta"} 1.0002515
)");
}

// Two pools' handles in one exposition: each family's # HELP and # TYPE once (a scrape
// with a family twice is refused), then the first pool's samples, then the second's.
TEST(isolation_prometheus, two_pools_handles_give_each_family_once) {
    handle_stats alpha, beta, gamma;
    alpha.acquires = 3, alpha.grants = 2, alpha.rejected_busy = 1, alpha.leases_out = 1, alpha.leases_out_max = 2;
    alpha.wait_total_ns = 1'500'000'000, alpha.wait_max_ns = 1'000'000'000;
    beta.acquires = 1, beta.rejected_timeout = 1;
    gamma.acquires = 5, gamma.grants = 5, gamma.leases_out_max = 1, gamma.wait_total_ns = 250, gamma.wait_max_ns = 100;
    const detail::prometheus_handle db[] = {{"alpha", alpha}, {"beta", beta}};
    const detail::prometheus_handle cache[] = {{"gamma", gamma}};
    const detail::prometheus_pool_handles pools[] = {{"db", db}, {"cache", cache}};
    std::string text;
    detail::append_prometheus_handles(text, pools);
    EXPECT_EQ(text, R"(# HELP fairpool_handle_acquires_total Acquires of the handle that reached the scheduler.
# TYPE fairpool_handle_acquires_total counter
fairpool_handle_acquires_total{pool="db",tenant="alpha"} 3
fairpool_handle_acquires_total{pool="db",tenant="beta"} 1
fairpool_handle_acquires_total{pool="cache",tenant="gamma"} 5
# HELP fairpool_handle_grants_total Acquires of the handle granted a resource.
# TYPE fairpool_handle_grants_total counter
fairpool_handle_grants_total{pool="db",tenant="alpha"} 2
fairpool_handle_grants_total{pool="db",tenant="beta"} 0
fairpool_handle_grants_total{pool="cache",tenant="gamma"} 5
# HELP fairpool_handle_rejections_total Acquires of the handle rejected, by reason.
# TYPE fairpool_handle_rejections_total counter
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="saturated"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="timeout"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="cancelled"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="deregistered"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="closed"} 0
fairpool_handle_rejections_total{pool="db",tenant="alpha",reason="busy"} 1
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="saturated"} 0
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="timeout"} 1
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="cancelled"} 0
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="deregistered"} 0
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="closed"} 0
fairpool_handle_rejections_total{pool="db",tenant="beta",reason="busy"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="saturated"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="timeout"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="cancelled"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="deregistered"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="closed"} 0
fairpool_handle_rejections_total{pool="cache",tenant="gamma",reason="busy"} 0
# HELP fairpool_handle_leases_out Leases of the handle out now.
# TYPE fairpool_handle_leases_out gauge
fairpool_handle_leases_out{pool="db",tenant="alpha"} 1
fairpool_handle_leases_out{pool="db",tenant="beta"} 0
fairpool_handle_leases_out{pool="cache",tenant="gamma"} 0
# HELP fairpool_handle_leases_out_max The most leases of the handle out at once.
# TYPE fairpool_handle_leases_out_max gauge
fairpool_handle_leases_out_max{pool="db",tenant="alpha"} 2
fairpool_handle_leases_out_max{pool="db",tenant="beta"} 0
fairpool_handle_leases_out_max{pool="cache",tenant="gamma"} 1
# HELP fairpool_handle_wait_seconds_total Time from acquire to grant, summed over the handle's grants.
# TYPE fairpool_handle_wait_seconds_total counter
fairpool_handle_wait_seconds_total{pool="db",tenant="alpha"} 1.5
fairpool_handle_wait_seconds_total{pool="db",tenant="beta"} 0
fairpool_handle_wait_seconds_total{pool="cache",tenant="gamma"} 0.00000025
# HELP fairpool_handle_wait_seconds_max The longest time from acquire to grant of one of the handle's grants.
# TYPE fairpool_handle_wait_seconds_max gauge
fairpool_handle_wait_seconds_max{pool="db",tenant="alpha"} 1
fairpool_handle_wait_seconds_max{pool="db",tenant="beta"} 0
fairpool_handle_wait_seconds_max{pool="cache",tenant="gamma"} 0.0000001
)");
    // One pool through the span is the single-pool overload's text.
    std::string one;
    detail::append_prometheus_handles(one, "db", db);
    std::string through_span;
    detail::append_prometheus_handles(through_span, std::span(pools, 1));
    EXPECT_EQ(one, through_span);
}

// --- Recording -------------------------------------------------------------------------

// Capped handles (an option and the config's), a resize that grows and one that shrinks
// beside leases out: recorded, replayed in process and by the tool with identical effects.
TEST_F(isolation, a_recording_with_caps_and_resizes_replays_identically) {
    scratch_directory dumps;
    auto o = options(1, 1);
    o.slot_capacity = 3;
    o.max_leases_per_handle = 2;
    o.recording = whole_test_in_memory();
    auto pool = make_pool(o);
    settle();
    auto capped_one = pool->make_handle(capped(1));
    auto by_config = pool->make_handle();
    outcome c1, c2, p1, p2, p3;
    capped_one.async_acquire(record(c1));
    capped_one.async_acquire(record(c2));
    ASSERT_FALSE(pool->resize(3, 2));
    by_config.async_acquire(record(p1));
    by_config.async_acquire(record(p2));
    by_config.async_acquire(record(p3));
    settle();
    EXPECT_TRUE(c1.lease && p1.lease && p2.lease);
    EXPECT_FALSE(c2.done || p3.done);
    ASSERT_FALSE(pool->resize(1, 0));
    settle();  // (a drain serves releases before a resize)
    c1.lease.release();  // surplus: retired; c2 waits for a slot
    p1.lease.release();
    settle();
    run_due();
    p2.lease.release();
    settle();
    run_due();
    EXPECT_TRUE(c2.lease) << "the capped handle rejoined the rotation first";
    EXPECT_FALSE(p3.done);
    const auto dir = dumps / "caps";
    ASSERT_FALSE(pool->dump_recording(dir));
    EXPECT_EQ(pool->diagnostics().scheduler, counters_of_recording(dir));
    const auto files = segment_files(dir);
    ASSERT_EQ(files.size(), 1u);
    const std::string text = recording_text(files.front());
    for (const char* record : {" resize max_slots=3 min_slots=2", " resize max_slots=1 min_slots=0", "max_leases=1",
                               "reason=resize", "max_leases_per_handle=2", "slot_capacity=3"})
        EXPECT_NE(text.find(record), std::string::npos) << "the recording has no " << record;
    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    expect_replays_identically(tool, files.front());
}

}  // namespace
}  // namespace fairpool::testing
