// Resource health in the Boost.Asio adapter (docs/CONTRACT.md: check, checked, reset,
// reset_done): the check and reset hooks of resource_hooks, run off the actor and
// reported through the mailbox; their failures, throws and timeouts; keepalive with no
// request at all; shutdown while a hook runs; options that need a missing hook; and a
// recording with checks and resets that replays with `fairpool-replay --check`.
//
// Every request must complete exactly once, whatever its check or reset did. A timed
// out hook is cancelled, and its resource is closed only after the hook has returned:
// the hooks here log when they start, when they see the cancellation and when they
// return, and the close hook logs the close, so the order is asserted, not assumed.
// Time is the manual clock's: a timeout expires when the test advances past it.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

// What a check or reset hook does with one resource.
enum class verdict {
    pass,   // true at once
    fail,   // false at once
    raise,  // throws
    slow,   // true after health::slow_time of manual time
    hang,   // waits until cancelled, then takes health::linger more before it returns true
};

struct hook_log {
    std::map<int, verdict> check, reset;  // by resource id; pass when absent
    std::vector<std::string> events;      // "check 1", "check 1 cancelled", "check 1 returned", "close 1", ...
    manual_clock::duration slow_time = 20ms;
    manual_clock::duration linger = 0ns;
};

boost::asio::awaitable<bool> run_hook(std::shared_ptr<hook_log> log, std::string what, verdict v) {
    constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    const auto ex = co_await boost::asio::this_coro::executor;
    log->events.push_back(what);
    bool result = v != verdict::fail;
    if (v == verdict::raise) {
        log->events.push_back(what + " threw");
        throw std::runtime_error("hook failed");
    }
    if (v == verdict::slow) {
        manual_timer t(ex, log->slow_time);
        co_await t.async_wait(use_tuple);
    }
    if (v == verdict::hang) {
        manual_timer never(ex, manual_clock::time_point::max());
        auto [ec] = co_await never.async_wait(use_tuple);
        if (ec == boost::asio::error::operation_aborted) log->events.push_back(what + " cancelled");
        if (log->linger > 0ns) {  // a hook slow to wind down: the resource must wait for it
            co_await boost::asio::this_coro::reset_cancellation_state();
            manual_timer t(ex, log->linger);
            co_await t.async_wait(use_tuple);
        }
    }
    log->events.push_back(what + " returned");
    co_return result;  // too late to count after a timeout, true or not
}

class health : public adapter {
protected:
    pool_options health_options(std::uint64_t max_slots, std::uint64_t min_slots) {
        pool_options o = options(max_slots, min_slots);
        o.check_timeout = 1s;
        o.reset_timeout = 1s;
        return o;
    }

    resource_hooks<resource> hooks() {
        auto log = log_;
        auto h = hooks_;
        return {
            .create = [log]() -> boost::asio::awaitable<resource> {
                if (log->fail_creation) throw std::runtime_error("backend down");
                co_return resource(++log->created, log);
            },
            .close = [log, h](resource& r) -> boost::asio::awaitable<void> {
                ++log->closed;
                h->events.push_back("close " + std::to_string(r.id()));
                co_return;
            },
            .check = [h](resource& r) { return run_hook(h, "check " + std::to_string(r.id()), verdict_of(h->check, r)); },
            .reset = [h](resource& r) { return run_hook(h, "reset " + std::to_string(r.id()), verdict_of(h->reset, r)); },
        };
    }

    std::unique_ptr<test_pool> make_health_pool(const pool_options& o) {
        return std::make_unique<test_pool>(io.get_executor(), o, hooks());
    }

    // A one-slot pool, warm, whose resource 1 went stale (check_after_idle: 10 ms).
    std::unique_ptr<test_pool> one_stale_slot() {
        pool_options o = health_options(1, 1);
        o.check_after_idle = 10ms;
        auto pool = make_health_pool(o);
        settle();
        advance(10ms);
        return pool;
    }

    static verdict verdict_of(const std::map<int, verdict>& m, const resource& r) {
        const auto it = m.find(r.id());
        return it == m.end() ? verdict::pass : it->second;
    }

    [[nodiscard]] std::vector<std::string> events() const { return hooks_->events; }

    std::shared_ptr<hook_log> hooks_ = std::make_shared<hook_log>();
};

using strings = std::vector<std::string>;

// --- Checks on checkout ------------------------------------------------------------

TEST_F(health, a_fresh_idle_resource_is_granted_without_a_check) {
    auto pool = one_stale_slot();
    outcome a, b;
    pool->async_acquire(record(a));
    settle();  // checked: verified now
    ASSERT_TRUE(a.lease);
    a.lease.release();
    settle();
    advance(10ms - 1ns);
    pool->async_acquire(record(b));
    settle();
    ASSERT_EQ(b.completions, 1);
    EXPECT_FALSE(b.ec);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 returned"})) << "the second grant, 1 ns fresh, was checked";
    EXPECT_EQ(pool->stats().grants_immediate, 1u);
    EXPECT_EQ(pool->stats().checks_started, 1u);
}

TEST_F(health, a_stale_resource_that_passes_its_check_is_granted) {
    auto pool = one_stale_slot();
    hooks_->check[1] = verdict::slow;
    outcome a;
    pool->async_acquire(record(a));
    settle();
    EXPECT_FALSE(a.done) << "granted before its check came back";
    EXPECT_EQ(pool->stats().slots_checking, 1u);
    advance(20ms);
    ASSERT_EQ(a.completions, 1);
    EXPECT_FALSE(a.ec);
    ASSERT_TRUE(a.lease);
    EXPECT_EQ(a.lease->id(), 1);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 returned"}));
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.checks_started, 1u);
    EXPECT_EQ(s.checks_passed, 1u);
    EXPECT_EQ(s.checks_failed, 0u);
    EXPECT_EQ(s.grants_after_wait, 1u);  // a grant after a check is a grant after waiting
    EXPECT_EQ(log_->created, 1);
}

// A dead resource is closed and replaced; its waiter is granted the new one.
void expect_replaced_after_a_dead_check(const test_pool& pool, const outcome& a, const resource_log& log) {
    ASSERT_EQ(a.completions, 1);
    EXPECT_FALSE(a.ec);
    ASSERT_TRUE(a.lease);
    EXPECT_EQ(a.lease->id(), 2) << "the waiter got the resource that failed its check";
    EXPECT_EQ(log.created, 2);
    EXPECT_EQ(log.closed, 1);
    EXPECT_EQ(log.destroyed, 1);
    const pool_stats s = pool.stats();
    EXPECT_EQ(s.checks_failed, 1u);
    EXPECT_EQ(s.checks_passed, 0u);
    EXPECT_EQ(s.retired_died, 1u);
}

TEST_F(health, a_resource_that_fails_its_check_is_closed_and_the_waiter_gets_a_fresh_one) {
    auto pool = one_stale_slot();
    hooks_->check[1] = verdict::fail;
    outcome a;
    pool->async_acquire(record(a));
    settle();
    expect_replaced_after_a_dead_check(*pool, a, *log_);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 returned", "close 1"}));
}

TEST_F(health, a_check_that_throws_is_a_dead_resource) {
    auto pool = one_stale_slot();
    hooks_->check[1] = verdict::raise;
    outcome a;
    pool->async_acquire(record(a));
    settle();
    expect_replaced_after_a_dead_check(*pool, a, *log_);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 threw", "close 1"}));
}

TEST_F(health, a_check_that_times_out_is_cancelled_and_its_resource_closed_only_after_it_returned) {
    auto pool = one_stale_slot();
    hooks_->check[1] = verdict::hang;
    hooks_->linger = 30ms;
    outcome a;
    pool->async_acquire(record(a));
    settle();
    advance(1s - 1ns);  // check_timeout: 1 s
    EXPECT_EQ(events(), (strings{"check 1"})) << "cancelled before its timeout";
    advance(1ns);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 cancelled"}));
    EXPECT_EQ(log_->closed, 0) << "closed while its check still ran";
    EXPECT_EQ(pool->stats().slots_checking, 1u);
    EXPECT_FALSE(a.done);
    advance(30ms);  // the hook returns (true, too late): dead
    expect_replaced_after_a_dead_check(*pool, a, *log_);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 cancelled", "check 1 returned", "close 1"}));
}

TEST_F(health, a_waiter_that_times_out_or_is_cancelled_during_its_check_completes_once_and_is_never_granted) {
    pool_options o = health_options(1, 1);
    o.check_after_idle = 10ms;
    auto pool = make_health_pool(o);
    settle();
    advance(10ms);
    hooks_->check[1] = verdict::slow;  // 20 ms
    outcome timed, cancelled;
    boost::asio::cancellation_signal cancel;
    pool->async_acquire(5ms, record(timed));
    pool->async_acquire(boost::asio::bind_cancellation_slot(cancel.slot(), record(cancelled)));
    settle();
    EXPECT_EQ(pool->stats().checks_started, 1u);  // the one slot: the second waiter waits for it
    cancel.emit(boost::asio::cancellation_type::terminal);
    settle();
    EXPECT_EQ(cancelled.completions, 1);
    EXPECT_EQ(cancelled.ec, boost::asio::error::operation_aborted);
    advance(5ms);
    EXPECT_EQ(timed.completions, 1);
    EXPECT_EQ(timed.ec, make_error_code(error::timeout));
    advance(1h);  // every check came back alive; the resource is idle, granted to nobody
    EXPECT_EQ(timed.completions, 1);
    EXPECT_EQ(cancelled.completions, 1);
    EXPECT_FALSE(timed.lease);
    EXPECT_FALSE(cancelled.lease);
    EXPECT_EQ(pool->stats().slots_idle, 1u);
    EXPECT_EQ(pool->stats().checks_passed, pool->stats().checks_started);
    EXPECT_EQ(log_->created, 1);
}

// --- Keepalive -----------------------------------------------------------------------

TEST_F(health, keepalive_replaces_a_dead_idle_resource_before_any_request) {
    pool_options o = health_options(2, 2);
    o.keepalive_interval = 100ms;
    auto pool = make_health_pool(o);
    settle();
    ASSERT_EQ(log_->created, 2);
    hooks_->check[1] = verdict::fail;
    advance(100ms - 1ns);
    EXPECT_TRUE(events().empty()) << "checked before its keepalive interval";
    advance(1ns);
    strings seen = events();
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (strings{"check 1", "check 1 returned", "check 2", "check 2 returned", "close 1"}));
    EXPECT_EQ(log_->created, 3) << "min_slots restored";
    EXPECT_EQ(log_->destroyed, 1);
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.acquires, 0u);
    EXPECT_EQ(s.checks_failed, 1u);
    EXPECT_EQ(s.checks_passed, 1u);
    EXPECT_EQ(s.retired_died, 1u);
    EXPECT_EQ(pool->stats().slots_idle, 2u);
    advance(100ms);  // resource 2 and the new 3 are kept alive: checked, not replaced
    EXPECT_EQ(log_->created, 3);
    EXPECT_EQ(pool->stats().checks_passed, 3u);
    outcome a;
    pool->async_acquire(record(a));
    settle();
    EXPECT_EQ(a.completions, 1);
    EXPECT_TRUE(a.lease);
}

// --- Resets on release ------------------------------------------------------------------

class reset_on_release : public health {
protected:
    // A one-slot pool that resets on release; `holder` has resource 1, `waiter` queues.
    std::unique_ptr<test_pool> held_with_a_waiter(outcome& holder, outcome& waiter) {
        pool_options o = health_options(1, 1);
        o.reset_on_release = true;
        auto pool = make_health_pool(o);
        settle();
        pool->async_acquire(record(holder));
        pool->async_acquire(record(waiter));
        settle();
        EXPECT_TRUE(holder.lease);
        EXPECT_FALSE(waiter.done);
        return pool;
    }
};

TEST_F(reset_on_release, a_reset_that_succeeds_hands_the_resource_on) {
    outcome holder, waiter;
    auto pool = held_with_a_waiter(holder, waiter);
    hooks_->reset[1] = verdict::slow;
    holder.lease.release();
    settle();
    EXPECT_FALSE(waiter.done) << "granted before its reset came back";
    EXPECT_EQ(pool->stats().slots_resetting, 1u);
    advance(20ms);
    ASSERT_EQ(waiter.completions, 1);
    ASSERT_TRUE(waiter.lease);
    EXPECT_EQ(waiter.lease->id(), 1);
    EXPECT_EQ(events(), (strings{"reset 1", "reset 1 returned"}));
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.resets_started, 1u);
    EXPECT_EQ(s.resets_failed, 0u);
    EXPECT_EQ(log_->created, 1);
}

void expect_retired_after_a_failed_reset(const test_pool& pool, const outcome& waiter, const resource_log& log) {
    ASSERT_EQ(waiter.completions, 1);
    EXPECT_FALSE(waiter.ec);
    ASSERT_TRUE(waiter.lease);
    EXPECT_EQ(waiter.lease->id(), 2) << "the waiter got the resource whose reset failed";
    EXPECT_EQ(log.created, 2);
    EXPECT_EQ(log.closed, 1);
    const pool_stats s = pool.stats();
    EXPECT_EQ(s.resets_started, 1u);
    EXPECT_EQ(s.resets_failed, 1u);
    EXPECT_EQ(s.retired_reset_failed, 1u);
}

TEST_F(reset_on_release, a_reset_that_fails_retires_the_resource_and_the_waiter_gets_a_fresh_one) {
    outcome holder, waiter;
    auto pool = held_with_a_waiter(holder, waiter);
    hooks_->reset[1] = verdict::fail;
    holder.lease.release();
    settle();
    expect_retired_after_a_failed_reset(*pool, waiter, *log_);
    EXPECT_EQ(events(), (strings{"reset 1", "reset 1 returned", "close 1"}));
}

TEST_F(reset_on_release, a_reset_that_throws_fails) {
    outcome holder, waiter;
    auto pool = held_with_a_waiter(holder, waiter);
    hooks_->reset[1] = verdict::raise;
    holder.lease.release();
    settle();
    expect_retired_after_a_failed_reset(*pool, waiter, *log_);
    EXPECT_EQ(events(), (strings{"reset 1", "reset 1 threw", "close 1"}));
}

TEST_F(reset_on_release, a_reset_that_times_out_is_cancelled_and_its_resource_closed_only_after_it_returned) {
    outcome holder, waiter;
    auto pool = held_with_a_waiter(holder, waiter);
    hooks_->reset[1] = verdict::hang;
    hooks_->linger = 30ms;
    holder.lease.release();
    settle();
    advance(1s - 1ns);  // reset_timeout: 1 s
    EXPECT_EQ(events(), (strings{"reset 1"})) << "cancelled before its timeout";
    advance(1ns);
    EXPECT_EQ(events(), (strings{"reset 1", "reset 1 cancelled"}));
    EXPECT_EQ(log_->closed, 0) << "closed while its reset still ran";
    EXPECT_EQ(pool->stats().slots_resetting, 1u);
    EXPECT_FALSE(waiter.done);
    advance(30ms);
    expect_retired_after_a_failed_reset(*pool, waiter, *log_);
    EXPECT_EQ(events(), (strings{"reset 1", "reset 1 cancelled", "reset 1 returned", "close 1"}));
}

TEST_F(reset_on_release, a_dirty_release_is_retired_without_a_reset) {
    outcome holder, waiter;
    auto pool = held_with_a_waiter(holder, waiter);
    holder.lease.mark_dirty();
    holder.lease.release();
    settle();
    ASSERT_EQ(waiter.completions, 1);
    ASSERT_TRUE(waiter.lease);
    EXPECT_EQ(waiter.lease->id(), 2);
    EXPECT_EQ(events(), (strings{"close 1"}));
    EXPECT_EQ(pool->stats().resets_started, 0u);
}

// --- Shutdown while a hook runs -------------------------------------------------------------

TEST_F(health, close_waits_for_a_check_in_flight_and_rejects_its_waiter_once) {
    auto pool = one_stale_slot();
    hooks_->check[1] = verdict::hang;
    outcome a;
    pool->async_acquire(record(a));
    settle();
    close_outcome c;
    pool->async_close(manual_clock::now() + 10ms, c.handler());
    settle();
    EXPECT_EQ(a.completions, 1);
    EXPECT_EQ(a.ec, make_error_code(error::closed));
    advance(10ms);
    ASSERT_EQ(c.completions, 1);
    EXPECT_EQ(c.ec, make_error_code(error::timeout));
    EXPECT_EQ(c.report.slots_checking, 1u);
    EXPECT_EQ(log_->closed, 0);
    bool closed = false;
    pool->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    advance(1s);  // the check times out: the resource is closed, then the pool
    EXPECT_TRUE(closed);
    EXPECT_EQ(a.completions, 1);
    EXPECT_EQ(events(), (strings{"check 1", "check 1 cancelled", "check 1 returned", "close 1"}));
    EXPECT_EQ(log_->destroyed, 1);
}

// --- Configuration --------------------------------------------------------------------------

// The message of the config_error that constructing a pool with these throws, or "".
std::string refusal(boost::asio::io_context& io, const pool_options& o, resource_hooks<resource> h) {
    try {
        test_pool p(io.get_executor(), o, std::move(h));
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

TEST_F(health, a_setting_whose_hook_is_missing_is_refused_naming_it) {
    const auto without = [this](bool check, bool reset) {
        resource_hooks<resource> h = hooks();
        if (!check) h.check = nullptr;
        if (!reset) h.reset = nullptr;
        return h;
    };
    const auto contains = [](const std::string& what, const char* field) {
        return what.find(field) != std::string::npos;
    };
    pool_options o = health_options(1, 0);
    o.check_after_idle = 1ns;
    EXPECT_PRED2(contains, refusal(io, o, without(false, true)), "check_after_idle");
    EXPECT_EQ(refusal(io, o, without(true, false)), "");
    o = health_options(1, 0);
    o.keepalive_interval = 1ns;
    EXPECT_PRED2(contains, refusal(io, o, without(false, true)), "keepalive_interval");
    o = health_options(1, 0);
    o.reset_on_release = true;
    EXPECT_PRED2(contains, refusal(io, o, without(true, false)), "reset_on_release");
    EXPECT_EQ(refusal(io, o, without(false, true)), "");
    o = health_options(1, 0);
    EXPECT_EQ(refusal(io, o, without(false, false)), "") << "no setting needs a hook";
    o.check_timeout = 0ns;
    EXPECT_PRED2(contains, refusal(io, o, hooks()), "check_timeout");
    o = health_options(1, 0);
    o.reset_timeout = -1ns;
    EXPECT_PRED2(contains, refusal(io, o, hooks()), "reset_timeout");
    resource_hooks<resource> no_factory = hooks();
    no_factory.create = nullptr;
    EXPECT_PRED2(contains, refusal(io, health_options(1, 0), no_factory), "hooks.create");
}

TEST_F(health, the_create_and_close_constructor_is_the_hooks_one_without_check_and_reset) {
    auto pool = make_pool(options(1, 1));  // the fixture's: create and close
    settle();
    retire_one_dirty(*pool);
    EXPECT_EQ(log_->closed, 1);
    EXPECT_EQ(log_->created, 2);
}

// --- Recording ------------------------------------------------------------------------------

// Checks on checkout (alive and dead), a timed-out check, keepalive, resets (ok, failed,
// timed out), a dirty release: recorded, with the counters published after every drain
// equal to the recording's, then replayed by the tool with identical effects.
TEST_F(health, a_recording_with_checks_and_resets_replays_identically) {
    scratch_directory dumps;
    pool_options o = health_options(2, 1);
    o.check_after_idle = 10ms;
    o.keepalive_interval = 500ms;
    o.max_concurrent_checks = 2;
    o.reset_on_release = true;
    o.recording = whole_test_in_memory();
    auto pool = make_health_pool(o);
    int dumped = 0;
    const auto published = [&](const char* when) {
        settle();
        const auto dir = dumps / std::to_string(dumped++);
        ASSERT_FALSE(pool->dump_recording(dir)) << when;
        EXPECT_EQ(pool->diagnostics().scheduler, counters_of_recording(dir)) << when;
    };
    published("warm");
    outcome a, b, c, d;
    pool->async_acquire(record(a));
    pool->async_acquire(record(b));
    published("one granted at once, one after a spawn");
    a.lease.release();  // reset ok
    hooks_->reset[2] = verdict::fail;
    b.lease.release();  // reset failed: retired
    published("two resets");
    advance(10ms);
    hooks_->check[1] = verdict::fail;
    pool->async_acquire(record(c));  // a stale slot: a check, dead; then a spawn
    published("a dead check on checkout");
    ASSERT_TRUE(c.lease);
    hooks_->reset[c.lease->id()] = verdict::hang;
    c.lease.release();
    published("a reset hangs");
    advance(1s);  // ... and times out; keepalive checks what is idle meanwhile
    published("a reset timed out, keepalive");
    advance(500ms);
    published("keepalive again");
    hooks_->check.clear();
    advance(10ms);
    pool->async_acquire(record(d));
    published("an alive check on checkout");
    ASSERT_TRUE(d.lease);
    d.lease.mark_dirty();
    d.lease.release();
    bool closed = false;
    pool->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
    published("closed");
    EXPECT_TRUE(closed);
    EXPECT_EQ(a.completions + b.completions + c.completions + d.completions, 4);

    const auto last = dumps / std::to_string(dumped - 1);
    const auto files = segment_files(last);
    ASSERT_EQ(files.size(), 1u);
    const std::string text = recording_text(files.front());
    for (const char* kind : {"\n= check slot=", " checked slot=", "\n= reset slot=", " reset_done slot="})
        EXPECT_NE(text.find(kind), std::string::npos) << "the recording has no" << kind;
    for (const char* outcome : {"outcome=alive", "outcome=dead", "outcome=ok", "outcome=failed", "reason=reset_failed"})
        EXPECT_NE(text.find(outcome), std::string::npos) << "the recording has no " << outcome;
    const pool_stats s = pool->stats();
    EXPECT_GT(s.checks_passed, 0u);
    EXPECT_GT(s.checks_failed, 0u);
    EXPECT_GE(s.resets_failed, 2u);

    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    expect_replays_identically(tool, files.front());
}

}  // namespace
}  // namespace fairpool::testing
