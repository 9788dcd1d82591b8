// Hooks racing their timeouts on an io_context run by two threads.
//
// The adapter bounds four hooks by a timer with Asio's || operator: create by
// create_timeout, close by retire_grace, check by check_timeout, reset by reset_timeout.
// When the hook finishes just as its timer fires, one branch completes and cancels the
// other through Asio's cancellation slots, which are not thread-safe: both branches must
// run serially (each hook's coroutine runs on a strand of its own). Run straight on the
// pool's executor, the two branches completed on two threads at once, and every run
// here crashed (use-after-free in cancellation_signal::emit or the timer queue).
//
// Each run keeps 8 slots churning through one hook whose duration is drawn around its
// timeout (60-140%), until the hook has run `races` times, then closes the pool. Checked:
// the hook ran that often and both outcomes happened (it finished first, its timer ran
// out first: the race was run, not avoided), the close completes, and every resource
// made was destroyed. Nothing asserts on time: a run ends after a count of hooks, and a
// run that does not get there in 120 s fails with what it got to.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <random>
#include <thread>

#include "fairpool/asio/pool.hpp"

namespace fairpool::testing {

// Outside the anonymous namespace: the pool's coroutine frames hold it (-Wsubobject-linkage).
// Counts the resources alive (made and not yet destroyed).
struct counted {
    explicit counted(std::atomic<int>& live) : live_(&live) { live_->fetch_add(1, std::memory_order_relaxed); }
    counted(counted&& other) noexcept : live_(std::exchange(other.live_, nullptr)) {}
    counted& operator=(counted&&) = delete;
    ~counted() {
        if (live_ != nullptr) live_->fetch_sub(1, std::memory_order_relaxed);
    }
    std::atomic<int>* live_;
};

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr auto timeout = 500us;

// What one run counts, from the hooks (any thread).
struct race_log {
    std::atomic<int> live{0};
    std::atomic<int> hooks{0};     // hooks of the raced kind that started
    std::atomic<int> finished{0};  // ... and finished their work before they were cancelled
    std::atomic<int> cancelled{0};  // ... and saw their cancellation first
};

// Waits about the timeout (60-140%), then counts how it ended.
asio::awaitable<bool> around_the_timeout(race_log& log) {
    thread_local std::mt19937 random{std::random_device{}()};
    const auto wait = std::chrono::microseconds(std::uniform_int_distribution<int>(300, 700)(random));
    log.hooks.fetch_add(1, std::memory_order_relaxed);
    asio::steady_timer t(co_await asio::this_coro::executor, wait);
    const auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    (ec ? log.cancelled : log.finished).fetch_add(1, std::memory_order_relaxed);
    co_return true;
}

enum class raced { create, close, check, reset };

// A pool of 8 slots whose hook of the given kind races its timeout, churning until that
// hook has started `races` times; then closed. Returns the close's error.
boost::system::error_code run(raced kind, race_log& log, int races) {
    asio::io_context io;
    pool_options o;
    o.max_slots = 8;
    o.min_slots = 8;
    o.spawn_backoff_initial = 1ns;
    o.spawn_backoff_max = 1ns;
    resource_hooks<counted> hooks;
    hooks.create = [&log]() -> asio::awaitable<counted> { co_return counted(log.live); };
    switch (kind) {
        case raced::create:
            o.create_timeout = timeout;
            o.max_lifetime = 200us;  // slots retire and are made again
            hooks.create = [&log]() -> asio::awaitable<counted> {
                co_await around_the_timeout(log);
                co_return counted(log.live);
            };
            break;
        case raced::close:
            o.retire_grace = timeout;
            o.max_lifetime = 200us;
            hooks.close = [&log](counted&) -> asio::awaitable<void> { co_await around_the_timeout(log); };
            break;
        case raced::check:
            o.check_timeout = timeout;
            o.keepalive_interval = 100us;  // idle slots are checked again and again
            o.max_concurrent_checks = 8;
            hooks.check = [&log](counted&) { return around_the_timeout(log); };
            break;
        case raced::reset:
            o.reset_timeout = timeout;
            o.reset_on_release = true;
            hooks.reset = [&log](counted&) { return around_the_timeout(log); };
            break;
    }
    auto p = std::make_unique<pool<counted>>(io.get_executor(), o, hooks);
    std::promise<boost::system::error_code> closed;
    std::atomic<bool> stopping{false};
    const auto close = [&] {
        if (stopping.exchange(true)) return;
        p->async_close(10s, [&](boost::system::error_code ec, auto) { closed.set_value(ec); });
    };
    if (kind == raced::reset)  // 8 workers acquire and release: every release is reset
        for (int w = 0; w < 8; ++w)
            asio::co_spawn(io, [&]() -> asio::awaitable<void> {
                while (!stopping.load()) {
                    auto [ec, l] = co_await p->async_acquire(asio::as_tuple(asio::use_awaitable));
                    if (ec) co_return;
                    if (log.hooks.load(std::memory_order_relaxed) >= races) asio::post(io, close);
                }
            }, asio::detached);
    // Watches the count from the io_context; no wall-clock assertion, only a bound.
    asio::steady_timer watch(io);
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    std::function<void()> look = [&] {
        if (log.hooks.load(std::memory_order_relaxed) >= races || std::chrono::steady_clock::now() > give_up)
            return close();
        watch.expires_after(1ms);
        watch.async_wait([&](boost::system::error_code) { look(); });
    };
    look();
    std::thread second([&] { io.run(); });
    io.run();
    second.join();
    p.reset();
    auto done = closed.get_future();
    return done.wait_for(0s) == std::future_status::ready ? done.get() : asio::error::timed_out;
}

class hook_race : public ::testing::TestWithParam<raced> {};

TEST_P(hook_race, a_hook_finishing_as_its_timeout_fires_on_two_threads_is_reported_once_and_closes_cleanly) {
    const int races = std::getenv("FAIRPOOL_HOOK_RACES") ? std::atoi(std::getenv("FAIRPOOL_HOOK_RACES")) : 5000;
    race_log log;
    const boost::system::error_code ec = run(GetParam(), log, races);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_GE(log.hooks.load(), races) << "the run gave up after 120 s";
    EXPECT_GT(log.finished.load(), 0) << "no hook beat its timer: the race did not run";
    EXPECT_GT(log.cancelled.load(), 0) << "no timer beat its hook: the race did not run";
    EXPECT_EQ(log.live.load(), 0) << "resources made and never destroyed";
}

INSTANTIATE_TEST_SUITE_P(kinds, hook_race, ::testing::Values(raced::create, raced::close, raced::check, raced::reset),
                         [](const auto& info) {
                             switch (info.param) {
                                 case raced::create: return "create_against_create_timeout";
                                 case raced::close: return "close_against_retire_grace";
                                 case raced::check: return "check_against_check_timeout";
                                 case raced::reset: return "reset_against_reset_timeout";
                             }
                             return "unknown";
                         });

}  // namespace
}  // namespace fairpool::testing
