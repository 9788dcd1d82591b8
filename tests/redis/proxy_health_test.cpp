// Backend health in the pooled Redis proxy, against a real redis-server: PING as the
// pool's check, RESET as its reset. Redis itself kills the pooled connections while they
// are idle (CLIENT KILL from an admin connection): with check_after_idle the requests
// that follow never see a dead connection, and without it one does (so the check is
// what makes the difference); with keepalive_interval the dead connections are replaced
// before any request arrives. A Redis whose RESET is disabled makes every reset fail:
// each connection is retired after one request, and every request still succeeds.
//
// Nothing asserts on time: waits poll Redis (CLIENT LIST) or the pool's counters a
// bounded number of times, and the one sleep only makes sure that the killed
// connections are older than check_after_idle (a sleep lasts at least that long).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace fairpool::demo::testing {
namespace {

using namespace std::chrono_literals;

class health : public ::testing::Test {
protected:
    void start_redis(std::vector<std::string> extra = {}) {
        start_redis_server(redis_, std::move(extra));
        if (HasFatalFailure()) return;
        admin_ = std::make_unique<client>(redis_->port());
        admin_id_ = admin_->call({"CLIENT", "ID"}).integer;
    }

    // The ids of Redis's clients other than the admin connection: the proxy's.
    std::set<std::int64_t> backend_connections() {
        std::set<std::int64_t> ids;
        for (const auto& c : client_list(*admin_))
            if (c.id != admin_id_) ids.insert(c.id);
        return ids;
    }

    // Polls (every 20 ms, at most `tries` times) until `done`; returns its last value.
    template <class F>
    static bool poll(F done, int tries = 500) {
        for (int i = 0; i < tries; ++i) {
            if (done()) return true;
            std::this_thread::sleep_for(20ms);
        }
        return done();
    }

    // Kills every connection but the admin's, from Redis's side, and waits until Redis
    // lists none of them (new ones may appear meanwhile). Returns the ids killed.
    std::set<std::int64_t> kill_backend_connections() {
        const std::set<std::int64_t> before = backend_connections();
        const auto killed = admin_->call({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
        EXPECT_EQ(killed.type, resp::type::integer) << killed.text;
        EXPECT_EQ(killed.integer, static_cast<std::int64_t>(before.size()));
        EXPECT_TRUE(poll([&] { return none_open(before); })) << "Redis still lists a killed connection";
        return before;
    }

    // None of `ids` is among Redis's clients.
    bool none_open(const std::set<std::int64_t>& ids) {
        const auto open = backend_connections();
        return std::none_of(ids.begin(), ids.end(), [&](std::int64_t id) { return open.count(id) != 0; });
    }

    // Warms `warm` backend connections (min_slots), kills them all while idle, waits past
    // check_after_idle, then sends `requests` INCRs one after another through one client.
    // Returns how many did not get an integer reply.
    int failures_after_killing_idle_connections(proxy_options o, int warm, int requests) {
        o.pool.max_slots = static_cast<std::size_t>(warm);
        o.pool.min_slots = static_cast<std::size_t>(warm);
        proxy_harness proxy(o);
        EXPECT_TRUE(poll([&] { return backend_connections().size() == static_cast<std::size_t>(warm); }))
            << "the pool did not warm " << warm << " connections";
        kill_backend_connections();
        std::this_thread::sleep_for(20ms);  // every pooled connection is now idle 20 ms or more
        client cl(proxy.port());
        int failures = 0;
        for (int i = 0; i < requests; ++i) {
            const auto r = cl.call({"INCR", "health:count"});
            if (r.type != resp::type::integer) ++failures;
        }
        last_stats_ = proxy.proxy().pool_stats();
        return failures;
    }

    std::unique_ptr<redis_process> redis_;
    std::unique_ptr<client> admin_;
    std::int64_t admin_id_ = 0;
    fairpool::pool_stats last_stats_;
};

TEST_F(health, with_check_after_idle_every_request_after_the_idle_connections_were_killed_succeeds) {
    start_redis();
    if (HasFatalFailure()) return;
    auto o = test_options(redis_->endpoint());
    o.pool.check_after_idle = 5ms;
    EXPECT_EQ(failures_after_killing_idle_connections(o, 4, 200), 0);
    EXPECT_GE(last_stats_.checks_failed, 1u) << "no check found a killed connection dead";
    EXPECT_GE(last_stats_.retired_died, 1u);
    EXPECT_EQ(last_stats_.retired_dirty, 0u)
        << "a request ran on a killed connection";
}

TEST_F(health, without_checks_a_request_after_the_idle_connections_were_killed_fails) {
    start_redis();
    if (HasFatalFailure()) return;
    const auto o = test_options(redis_->endpoint());
    ASSERT_EQ(o.pool.check_after_idle, fairpool::forever);
    EXPECT_GE(failures_after_killing_idle_connections(o, 4, 200), 1) << "the check above proves nothing";
    EXPECT_EQ(last_stats_.checks_started, 0u);
}

TEST_F(health, keepalive_replaces_killed_idle_connections_before_any_request) {
    start_redis();
    if (HasFatalFailure()) return;
    auto o = test_options(redis_->endpoint());
    o.pool.max_slots = 4;
    o.pool.min_slots = 2;
    o.pool.keepalive_interval = 50ms;
    proxy_harness proxy(o);
    ASSERT_TRUE(poll([&] { return backend_connections().size() == 2; })) << "the pool did not warm 2 connections";
    const std::set<std::int64_t> killed = kill_backend_connections();
    const auto replaced = [&] {
        const auto s = proxy.proxy().pool_stats();
        return backend_connections().size() == 2 && none_open(killed) &&
               s.slots_idle == 2;
    };
    EXPECT_TRUE(poll(replaced)) << "the killed connections were not replaced by fresh ones";
    const auto s = proxy.proxy().pool_stats();
    EXPECT_EQ(s.acquires, 0u) << "no request was sent: keepalive alone found them";
    EXPECT_GE(s.checks_failed, 2u);
    EXPECT_GE(s.retired_died, 2u);
    client cl(proxy.port());
    const auto id = cl.call({"CLIENT", "ID"});
    ASSERT_EQ(id.type, resp::type::integer) << id.text;
    EXPECT_EQ(killed.count(id.integer), 0u);
}

// CLIENT ID through the proxy, `n` times one after another: the backend connections'
// ids, in order. Every reply must be an integer.
std::vector<std::int64_t> client_ids(std::uint16_t port, int n) {
    client cl(port);
    std::vector<std::int64_t> ids;
    for (int i = 0; i < n; ++i) {
        const auto id = cl.call({"CLIENT", "ID"});
        EXPECT_EQ(id.type, resp::type::integer) << "request " << i << ": " << id.text;
        ids.push_back(id.integer);
    }
    return ids;
}

TEST_F(health, reset_on_release_resets_a_connection_and_reuses_it) {
    start_redis();
    if (HasFatalFailure()) return;
    auto o = test_options(redis_->endpoint());
    o.pool.max_slots = 1;
    o.pool.min_slots = 1;
    o.pool.reset_on_release = true;
    proxy_harness proxy(o);
    const auto ids = client_ids(proxy.port(), 20);
    EXPECT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), 1u) << "a reset connection was not reused";
    EXPECT_TRUE(poll([&] { return proxy.proxy().pool_stats().resets_started == 20; }));
    EXPECT_EQ(proxy.proxy().pool_stats().resets_failed, 0u);
}

TEST_F(health, a_reset_that_fails_retires_the_connection_and_the_next_request_succeeds_on_another) {
    start_redis({"--rename-command", "RESET", ""});  // RESET is now an unknown command
    if (HasFatalFailure()) return;
    auto o = test_options(redis_->endpoint());
    o.pool.max_slots = 2;
    o.pool.min_slots = 1;
    o.pool.reset_on_release = true;
    proxy_harness proxy(o);
    const auto ids = client_ids(proxy.port(), 20);
    EXPECT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), 20u)
        << "a connection whose reset failed served again";
    const auto retired_all = [&] {
        const auto s = proxy.proxy().pool_stats();
        return s.resets_failed == 20 && s.retired_reset_failed == 20;
    };
    EXPECT_TRUE(poll(retired_all)) << "resets failed: " << proxy.proxy().pool_stats().resets_failed;
    EXPECT_TRUE(poll([&] { return none_open({ids.begin(), ids.end()}); }))
        << "a connection whose reset failed is still open";
}

}  // namespace
}  // namespace fairpool::demo::testing
