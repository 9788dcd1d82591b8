// The 0.2 surface a user types: flat options with chrono durations and finite
// defaults, forever for "no bound" and 0 refused, each option reaching its core::config
// key; one error enum and the overloaded condition; a default completion token on every
// async_*; the named try-acquire; pool_stats' named fields; diagnostics apart; one
// prometheus_text entry point with an append hook; the version; the assertion on an
// empty lease.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/errc.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fairpool/asio.hpp"
#include "fixture.hpp"

namespace fairpool::testing {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string invalid(const pool_options& o) { return validate(o).value_or("valid"); }

TEST(options, the_defaults_bound_every_wait_and_the_factory_and_switch_nothing_else_on) {
    const pool_options o;
    EXPECT_EQ(o.acquire_timeout, seconds(30));
    EXPECT_EQ(o.create_timeout, seconds(30));
    EXPECT_EQ(o.retire_grace, seconds(1));
    EXPECT_EQ(o.idle_timeout, forever);
    EXPECT_EQ(o.max_lifetime, forever);
    EXPECT_EQ(o.leak_threshold, forever);
    EXPECT_EQ(o.check_after_idle, forever);
    EXPECT_EQ(o.keepalive_interval, forever);
    EXPECT_EQ(o.policy, fairness_policy::round_robin);
    EXPECT_EQ(o.idle_order, idle_order::lifo);
    EXPECT_FALSE(validate(o));
    // In the scheduler's config: 30 s as nanoseconds, forever as the core's 0 ("off").
    const core::config c = scheduler_config(o);
    EXPECT_EQ(c.acquire_timeout, 30'000'000'000u);
    EXPECT_EQ(c.idle_timeout, 0u);
    EXPECT_EQ(c.max_lifetime, 0u);
    EXPECT_EQ(c.leak_threshold, 0u);
    EXPECT_EQ(c.check_after_idle, 0u);
    EXPECT_EQ(c.keepalive_interval, 0u);
    EXPECT_EQ(c.spawn_backoff_initial, 100'000'000u);
    EXPECT_EQ(c.spawn_backoff_max, 30'000'000'000u);
}

TEST(options, each_field_reaches_its_scheduler_key_in_nanoseconds) {
    const pool_options o{.max_slots = 6,
                         .min_slots = 2,
                         .max_waiters = 50,
                         .max_waiters_per_handle = 10,
                         .slot_capacity = 9,
                         .policy = fairness_policy::fifo,
                         .idle_order = idle_order::fifo,
                         .max_leases_per_handle = 3,
                         .acquire_timeout = milliseconds(250),
                         .spawn_backoff_initial = milliseconds(5),
                         .spawn_backoff_max = seconds(2),
                         .max_concurrent_spawns = 4,
                         .idle_timeout = seconds(60),
                         .max_lifetime = std::chrono::minutes(30),
                         .max_lifetime_jitter = seconds(10),
                         .jitter_seed = 17,
                         .max_uses = 1000,
                         .check_after_idle = seconds(5),
                         .keepalive_interval = seconds(20),
                         .max_concurrent_checks = 2,
                         .reset_on_release = true,
                         .leak_threshold = seconds(90)};
    ASSERT_FALSE(validate(o)) << *validate(o);
    const core::config c = scheduler_config(o);
    EXPECT_EQ(c.max_slots, 6u);
    EXPECT_EQ(c.min_slots, 2u);
    EXPECT_EQ(c.max_waiters, 50u);
    EXPECT_EQ(c.max_waiters_per_handle, 10u);
    EXPECT_EQ(c.slot_capacity, 9u);
    EXPECT_EQ(c.policy, core::fairness_policy::fifo);
    EXPECT_EQ(c.idle_order, core::idle_order::fifo);
    EXPECT_EQ(c.max_leases_per_handle, 3u);
    EXPECT_EQ(c.acquire_timeout, 250'000'000u);
    EXPECT_EQ(c.spawn_backoff_initial, 5'000'000u);
    EXPECT_EQ(c.spawn_backoff_max, 2'000'000'000u);
    EXPECT_EQ(c.max_concurrent_spawns, 4u);
    EXPECT_EQ(c.idle_timeout, 60'000'000'000u);
    EXPECT_EQ(c.max_lifetime, 1'800'000'000'000u);
    EXPECT_EQ(c.max_lifetime_jitter, 10'000'000'000u);
    EXPECT_EQ(c.jitter_seed, 17u);
    EXPECT_EQ(c.max_uses, 1000u);
    EXPECT_EQ(c.check_after_idle, 5'000'000'000u);
    EXPECT_EQ(c.keepalive_interval, 20'000'000'000u);
    EXPECT_EQ(c.max_concurrent_checks, 2u);
    EXPECT_TRUE(c.reset_on_release);
    EXPECT_EQ(c.leak_threshold, 90'000'000'000u);
}

// 0 would be the core's "off" for these: refused, with the spelling that means it.
TEST(options, a_zero_where_forever_is_meant_is_refused_naming_the_field) {
    const auto zero_in = [](std::chrono::nanoseconds pool_options::*field) {
        pool_options o;
        o.*field = std::chrono::nanoseconds(0);
        return invalid(o);
    };
    EXPECT_EQ(zero_in(&pool_options::acquire_timeout),
              "acquire_timeout: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::create_timeout),
              "create_timeout: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::idle_timeout), "idle_timeout: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::max_lifetime), "max_lifetime: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::check_after_idle),
              "check_after_idle: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::keepalive_interval),
              "keepalive_interval: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::leak_threshold),
              "leak_threshold: must be positive, got 0 ns (fairpool::forever: no bound)");
    EXPECT_EQ(zero_in(&pool_options::check_timeout), "check_timeout: must be positive, got 0 ns");
    EXPECT_EQ(zero_in(&pool_options::reset_timeout), "reset_timeout: must be positive, got 0 ns");
    EXPECT_EQ(zero_in(&pool_options::spawn_backoff_initial), "spawn_backoff_initial: must be positive, got 0 ns");
    EXPECT_EQ(zero_in(&pool_options::retire_grace), "valid");  // 0: no graceful close waited for
    pool_options negative;
    negative.acquire_timeout = -milliseconds(1);
    EXPECT_EQ(invalid(negative), "acquire_timeout: must be positive, got -1000000 ns (fairpool::forever: no bound)");
}

TEST(options, the_scheduler_names_its_own_bad_fields_without_a_prefix) {
    pool_options o;
    o.max_slots = 0;
    EXPECT_EQ(invalid(o), "max_slots: 0 is out of range 1..65535");
    o.max_slots = 2;
    o.min_slots = 3;
    EXPECT_EQ(invalid(o), "min_slots: 3 is out of range 0..max_slots (2)");
    pool_options jitter;
    jitter.max_lifetime_jitter = seconds(1);  // with max_lifetime forever
    EXPECT_EQ(invalid(jitter),
              "max_lifetime_jitter: must be 0..max_lifetime (0 when max_lifetime is forever), got 1000000000 ns");
    EXPECT_THROW((void)scheduler_config(o), config_error);
    try {
        asio::io_context io;
        pool<int> p(io.get_executor(), o, []() -> asio::awaitable<int> { co_return 1; });
        ADD_FAILURE() << "a pool of invalid options was made";
    } catch (const config_error& e) {
        EXPECT_STREQ(e.what(), "invalid pool options: min_slots: 3 is out of range 0..max_slots (2)");
    }
}

TEST(options, a_setting_whose_hook_is_missing_is_refused_naming_it) {
    asio::io_context io;
    pool_options o;
    o.check_after_idle = seconds(1);
    try {
        pool<int> p(io.get_executor(), o, []() -> asio::awaitable<int> { co_return 1; });
        ADD_FAILURE() << "a pool that checks without a check hook was made";
    } catch (const config_error& e) {
        EXPECT_STREQ(e.what(),
                     "invalid pool options: check_after_idle: is set, but the pool has no check hook "
                     "(resource_hooks::check)");
    }
}

TEST(errors, one_code_per_outcome_with_its_conditions) {
    using boost::system::errc::errc_t;
    EXPECT_EQ(make_error_code(error::timeout), boost::system::errc::timed_out);
    EXPECT_EQ(make_error_code(error::busy), boost::system::errc::resource_unavailable_try_again);
    for (error e : {error::saturated, error::busy, error::timeout})
        EXPECT_EQ(make_error_code(e), condition::overloaded) << make_error_code(e).message();
    for (error e : {error::deregistered, error::closed, error::not_recording, error::bad_size})
        EXPECT_NE(make_error_code(e), condition::overloaded) << make_error_code(e).message();
    EXPECT_NE(boost::system::error_code(asio::error::operation_aborted), condition::overloaded);
    EXPECT_NE(boost::system::error_code(boost::system::errc::timed_out, boost::system::generic_category()),
              condition::overloaded);  // another library's timeout is not fairpool's overload
    EXPECT_STREQ(make_error_condition(condition::overloaded).category().name(), "fairpool.condition");
    EXPECT_EQ(static_cast<int>(error::bad_size), 7);  // the codes are 1..7, none undelivered
}

class surface : public adapter {};

TEST_F(surface, co_await_without_a_token_acquires_and_closes) {
    auto p = make_pool(options(1, 1));
    settle();
    int seen = 0;
    bool closed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto lease = co_await p->async_acquire();
            seen = lease->id();
            lease.release();
            auto tenant = p->make_handle();
            auto again = co_await tenant.async_acquire(1s);
            EXPECT_EQ(again->id(), seen);
            again.release();
            const close_report report = co_await p->async_close();
            closed = report.closed;
        },
        asio::detached);
    settle();
    EXPECT_EQ(seen, 1);
    EXPECT_TRUE(closed);
}

TEST_F(surface, a_try_acquire_takes_an_idle_resource_or_fails_at_once_with_timeout) {
    auto p = make_pool(options(1, 1));
    settle();
    outcome first, second, through_handle;
    p->async_try_acquire(record(first));
    settle();
    ASSERT_TRUE(first.lease);
    p->async_try_acquire(record(second));
    auto tenant = p->make_handle();
    tenant.async_try_acquire(record(through_handle));
    settle();  // no time passes: both fail now, neither waits
    EXPECT_EQ(second.ec, error::timeout);
    EXPECT_EQ(through_handle.ec, error::timeout);
    EXPECT_EQ(second.ec, condition::overloaded);
    EXPECT_EQ(p->stats().rejected_timeout, 2u);
    EXPECT_EQ(p->stats().queued_waiters, 0u);
}

// The default acquire_timeout is in force: with nothing idle, an acquire given no
// timeout fails after 30 s of the pool's clock, not before.
TEST_F(surface, an_acquire_without_a_timeout_waits_at_most_the_default_30_seconds) {
    outcome holder, waiter;
    auto p = one_slot_held(holder);
    p->async_acquire(record(waiter));
    settle();
    advance(29s);
    EXPECT_FALSE(waiter.done);
    advance(1s);
    EXPECT_EQ(waiter.ec, error::timeout);
    EXPECT_EQ(waiter.completions, 1);
}

// forever per call: only the pool's acquire_timeout bounds it (the earlier deadline
// wins), and with the pool's forever too it waits until served.
TEST_F(surface, a_per_call_forever_leaves_the_pool_timeout_in_force) {
    auto o = options(1, 1);
    o.acquire_timeout = 5s;
    auto p = make_pool(o);
    settle();
    outcome holder, waiter;
    p->async_acquire(record(holder));
    settle();
    p->async_acquire(forever, record(waiter));
    settle();
    advance(5s);
    EXPECT_EQ(waiter.ec, error::timeout);

    auto unbounded = options(1, 1);
    unbounded.acquire_timeout = forever;
    auto q = make_pool(unbounded);
    settle();
    outcome held, patient;
    q->async_acquire(record(held));
    settle();
    q->async_acquire(forever, record(patient));
    settle();
    advance(std::chrono::hours(24 * 365));
    EXPECT_FALSE(patient.done);
    held.lease.release();
    settle();
    EXPECT_TRUE(patient.lease);
}

// The factory's timer is made late (only for a factory that did not finish at once,
// resources.hpp), its expiry counted from the spawn's start: saturating, so a timeout
// near nanoseconds::max() never wraps around to a time long past (a spawn failed at once).
TEST_F(surface, a_create_timeout_near_forever_does_not_wrap_around) {
    auto o = options(1, 1);
    o.create_timeout = forever - 1ns;
    test_pool p(io.get_executor(), o, []() -> asio::awaitable<resource> {
        manual_timer never(co_await asio::this_coro::executor, manual_clock::time_point::max());
        co_await never.async_wait(asio::use_awaitable);
        throw std::runtime_error("the backend never answers");
    });
    settle();
    advance(std::chrono::hours(1));
    EXPECT_EQ(p.stats().spawn_failures, 0u);
    EXPECT_EQ(p.stats().slots_spawning, 1u);
}

TEST_F(surface, pool_stats_names_every_count_and_held_counts_every_occupied_slot) {
    auto o = options(3, 2);
    o.max_waiters = 1;
    auto p = make_pool(o);
    settle();
    outcome a, b, c, d;
    p->async_acquire(record(a));
    p->async_acquire(record(b));
    settle();
    p->async_acquire(record(c));  // spawns the third
    settle();
    p->async_acquire(record(d));  // all three leased: queues
    outcome e;
    p->async_acquire(record(e));  // the queue holds one: saturated
    settle();
    EXPECT_EQ(e.ec, error::saturated);
    const pool_stats full = p->stats();
    EXPECT_EQ(full.queued_waiters, 1u);
    EXPECT_EQ(full.slots_leased, 3u);
    EXPECT_EQ(full.held, 3u);
    a.lease.mark_dirty();
    a.lease.release();  // a's resource retires dirty; d gets its replacement
    settle();
    const pool_stats s = p->stats();
    EXPECT_EQ(s.acquires, 5u);
    EXPECT_EQ(s.grants, s.grants_immediate + s.grants_after_wait);
    EXPECT_EQ(s.grants, 4u);
    EXPECT_EQ(s.grants_after_wait, 2u);  // c waited for the third spawn, d for a's replacement
    EXPECT_EQ(s.rejected_saturated, 1u);
    EXPECT_EQ(s.retired_dirty, 1u);
    EXPECT_EQ(s.spawns, 4u);
    EXPECT_EQ(s.queued_waiters, 0u);
    EXPECT_EQ(s.slots_leased, 3u);
    EXPECT_EQ(s.held, s.slots_spawning + s.slots_idle + s.slots_leased + s.slots_checking + s.slots_resetting +
                          s.slots_retiring);
    EXPECT_EQ(s.held, 3u);
}

TEST_F(surface, diagnostics_count_the_drains_and_observe_the_state) {
    auto p = make_pool(options(1, 1));
    settle();
    outcome a;
    p->async_acquire(record(a));
    settle();
    const pool_diagnostics d = p->diagnostics();
    EXPECT_GE(d.drains_run, 2u);
    EXPECT_GE(d.commands_fed, 3u);  // start, spawned, acquire
    EXPECT_EQ(d.scheduler.acquires, 1u);
    EXPECT_FALSE(d.lifetime.expired());
    const std::weak_ptr<const void> lifetime = d.lifetime;
    a.lease.release();
    p.reset();
    settle();
    EXPECT_TRUE(lifetime.expired());
}

TEST_F(surface, one_prometheus_text_for_the_pool_its_handles_and_appended_series) {
    auto p = make_pool(options(1, 1));
    settle();
    handle_options named;
    named.name = "alpha";
    auto alpha = p->make_handle(named);
    outcome a;
    alpha.async_acquire(record(a));
    settle();
    const std::string text = prometheus_text(*p, "db", {alpha.observer()}, [](std::string& out) {
        out += "# HELP extra_total A component's own series.\n# TYPE extra_total counter\nextra_total 3\n";
    });
    EXPECT_NE(text.find("fairpool_acquires_total{pool=\"db\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("fairpool_handle_grants_total{pool=\"db\",tenant=\"alpha\"} 1\n"), std::string::npos) << text;
    EXPECT_EQ(text.substr(text.size() - std::string_view("extra_total 3\n").size()), "extra_total 3\n");
    // Two pools in one scrape: each family once.
    auto q = make_pool(options(1, 1));
    settle();
    const prometheus_pool pools[] = {{*p, "db", {alpha.observer()}}, {*q, "cache"}};
    const std::string both = prometheus_text(pools);
    const auto count = [&](std::string_view needle) {
        std::size_t n = 0;
        for (auto at = both.find(needle); at != std::string::npos; at = both.find(needle, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("# TYPE fairpool_acquires_total counter\n"), 1u);
    EXPECT_EQ(count("fairpool_acquires_total{pool=\"cache\"} 0\n"), 1u);
    EXPECT_EQ(count("# TYPE fairpool_handle_grants_total counter\n"), 1u);
    // No handles: no handle families.
    EXPECT_EQ(prometheus_text(*q, "cache").find("fairpool_handle_"), std::string::npos);
}

TEST(version, the_header_says_what_meson_says) {
    EXPECT_EQ(version, "0.2.0");
    EXPECT_STREQ(FAIRPOOL_VERSION, "0.2.0");
    static_assert(FAIRPOOL_VERSION_NUMBER == FAIRPOOL_VERSION_MAJOR * 10000 + FAIRPOOL_VERSION_MINOR * 100 +
                                                 FAIRPOOL_VERSION_PATCH);
}

#ifndef NDEBUG
TEST(lease_death, dereferencing_an_empty_lease_asserts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    lease<int> empty;
    EXPECT_DEATH((void)*empty, "empty lease");
    EXPECT_DEATH((void)empty.operator->(), "empty lease");
}
#endif

}  // namespace
}  // namespace fairpool::testing
