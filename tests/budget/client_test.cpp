// The budget client against a real redis-server and a real fairpool::pool: it starts
// the pool at 0, applies grants with resize, falls back to min(last grant, fallback)
// past its lease and never grows without a grant, authenticates, survives a flushed
// script cache, refuses bad options and a foreign budget, and leaves.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

#include "fairpool/asio.hpp"
#include "fairpool/budget/client.hpp"
#include "fixture.hpp"

namespace fairpool::budget::testing {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using fairpool::demo::testing::client;
using fairpool::demo::testing::eventually;
using fairpool::demo::testing::start_redis_server;
using int_pool = fairpool::pool<int>;

budget_options test_options(std::uint16_t redis_port, std::string name = "t", std::uint64_t budget = 4) {
    budget_options o;
    o.name = std::move(name);
    o.budget = budget;
    o.member_id = "m1";
    o.redis = {asio::ip::make_address("127.0.0.1"), redis_port};
    o.refresh_interval = 100ms;
    o.min_refresh_gap = 20ms;
    o.lease = 600ms;
    o.grace = 200ms;
    o.lease_margin = 100ms;
    o.forget_after = 5s;
    o.call_timeout = 100ms;
    o.connect_timeout = 100ms;
    o.reconnect_backoff_initial = 20ms;
    o.reconnect_backoff_max = 100ms;
    return o;
}

fairpool::pool_options small_pool() {
    fairpool::pool_options o;
    o.max_slots = 1;
    o.slot_capacity = 8;
    o.min_slots = 0;
    o.acquire_timeout = 5s;
    return o;
}

// A budget past its first learning period (the allocator tests cover learning).
void establish(client& redis, const std::string& name, std::uint64_t budget) {
    const std::string tag = "{" + name + "}";
    redis.call({"HSET", tag + ":meta", "budget", std::to_string(budget), "epoch", "1", "version", "0",
                "learning_until", "0"});
}

class budget_client_test : public ::testing::Test {
protected:
    void SetUp() override {
        start_redis_server(redis_);
        if (HasFatalFailure()) return;
        admin_ = std::make_unique<client>(redis_->port());
        thread_ = std::thread([this] { io_.run(); });
    }
    void TearDown() override {
        work_.reset();
        thread_.join();
    }
    int_pool make_pool() {
        return int_pool(io_.get_executor(), small_pool(), []() -> asio::awaitable<int> { co_return 7; });
    }

    std::unique_ptr<fairpool::demo::redis_process> redis_;
    std::unique_ptr<client> admin_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
    std::thread thread_;
};

TEST_F(budget_client_test, starts_the_pool_at_zero_and_grows_it_to_the_grant) {
    establish(*admin_, "t", 4);
    auto pool = make_pool();
    budget_client member(io_.get_executor(), test_options(redis_->port()), target_of(pool));
    member.start();
    EXPECT_EQ(member.stats().limit, 0u) << "sized to 0 before anything runs";
    auto h = pool.make_handle();
    std::vector<std::future<int_pool::lease_type>> leases;
    for (int i = 0; i < 3; ++i) leases.push_back(h.async_acquire(asio::use_future));
    std::vector<int_pool::lease_type> held;
    for (auto& f : leases) held.push_back(f.get());
    for (auto& l : held) EXPECT_EQ(*l, 7);
    const auto s = member.stats();
    EXPECT_EQ(s.state, member_state::granted);
    EXPECT_GE(s.grant, 3u);
    EXPECT_EQ(pool.stats().spawns, 3u);
    EXPECT_TRUE(eventually([&] { return member.stats().demand == 3 && member.stats().held == 3; }))
        << member.stats().demand << " " << member.stats().held << " " << pool.stats().demand << " " << pool.stats().held;
    held.clear();
    // Nothing leased or waiting: the next refresh grants 0 and the idle three retire.
    EXPECT_TRUE(eventually([&] { return member.stats().limit == 0 && pool.stats().held == 0; }));
    member.stop();
    EXPECT_TRUE(eventually([&] { return member.stats().state == member_state::stopped; }));
}

TEST_F(budget_client_test, a_member_never_granted_stays_at_zero_and_acquires_time_out) {
    auto pool = make_pool();
    auto o = test_options(fairpool::demo::free_port());  // nobody listens there
    budget_client member(io_.get_executor(), o, target_of(pool));
    member.start();
    auto h = pool.make_handle();
    auto f = h.async_acquire(100ms, asio::use_future);
    try {
        (void)f.get();
        ADD_FAILURE() << "granted without a budget grant";
    } catch (const boost::system::system_error& e) {
        EXPECT_EQ(e.code(), fairpool::error::timeout);
    }
    EXPECT_TRUE(eventually([&] { return member.stats().connect_failures >= 2; }));
    const auto s = member.stats();
    EXPECT_EQ(s.state, member_state::joining);
    EXPECT_EQ(s.limit, 0u);
    EXPECT_NE(s.last_error.find("connect to Redis"), std::string::npos) << s.last_error;
    EXPECT_EQ(pool.stats().spawns, 0u);
}

TEST_F(budget_client_test, start_at_fallback_opts_out_of_failing_closed) {
    auto pool = make_pool();
    auto o = test_options(fairpool::demo::free_port());
    o.fallback = 2;
    o.start_at_fallback = true;
    budget_client member(io_.get_executor(), o, target_of(pool));
    member.start();
    EXPECT_EQ(member.stats().limit, 2u);
    auto h = pool.make_handle();
    auto a = h.async_acquire(asio::use_future), b = h.async_acquire(asio::use_future);
    EXPECT_EQ(*a.get(), 7);
    EXPECT_EQ(*b.get(), 7);
}

TEST_F(budget_client_test, past_its_lease_without_redis_a_member_falls_back_and_never_grows) {
    establish(*admin_, "t", 6);
    auto pool = make_pool();
    auto o = test_options(redis_->port(), "t", 6);
    o.fallback = 2;
    budget_client member(io_.get_executor(), o, target_of(pool));
    member.start();
    auto h = pool.make_handle();
    std::vector<std::future<int_pool::lease_type>> leases;
    for (int i = 0; i < 5; ++i) leases.push_back(h.async_acquire(asio::use_future));
    for (auto& f : leases) (void)f.get();
    ASSERT_TRUE(eventually([&] { return member.stats().grant == 6; }));
    redis_->stop();
    ASSERT_TRUE(eventually([&] { return member.stats().state == member_state::fallback; }));
    EXPECT_EQ(member.stats().limit, 2u) << "min(last grant 6, fallback 2)";
    // More demand: still 2, whatever waits.
    leases.clear();
    std::vector<std::future<int_pool::lease_type>> more;
    for (int i = 0; i < 4; ++i) more.push_back(h.async_acquire(asio::use_future));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(member.stats().limit, 2u);
    EXPECT_LE(pool.stats().held, 2u);
    EXPECT_GE(member.stats().refresh_failures + member.stats().connect_failures, 1u);
    // Redis back, empty: learning confirms what the member holds, then the fair share.
    redis_->start();
    EXPECT_TRUE(eventually([&] { return member.stats().state == member_state::learning; }));
    EXPECT_LE(member.stats().limit, 2u) << "learning confirms what it holds";
    EXPECT_TRUE(eventually([&] { return member.stats().state == member_state::granted && member.stats().limit == 4; }))
        << "4 waiting";
    for (auto& f : more) (void)f.get();
}

TEST_F(budget_client_test, authenticates_as_an_acl_user_and_reports_a_refused_password) {
    redis_.reset();
    start_redis_server(redis_, {"--user", "fp", "on", ">secret", "~*", "+@all"});
    ASSERT_FALSE(HasFatalFailure());
    admin_ = std::make_unique<client>(redis_->port());
    establish(*admin_, "t", 4);
    auto pool = make_pool();
    auto good = test_options(redis_->port());
    good.user = "fp";
    good.password = "secret";
    budget_client member(io_.get_executor(), good, target_of(pool));
    member.start();
    EXPECT_TRUE(eventually([&] { return member.stats().state == member_state::granted; }));
    auto other = make_pool();
    auto bad = good;
    bad.member_id = "m2";
    bad.password = "wrong";
    budget_client refused(io_.get_executor(), bad, target_of(other));
    refused.start();
    EXPECT_TRUE(eventually([&] { return refused.stats().connect_failures >= 1; }));
    EXPECT_NE(refused.stats().last_error.find("Redis refused AUTH: WRONGPASS"), std::string::npos)
        << refused.stats().last_error;
    EXPECT_EQ(refused.stats().limit, 0u);
}

TEST_F(budget_client_test, a_flushed_script_cache_is_answered_by_eval) {
    establish(*admin_, "t", 4);
    auto pool = make_pool();
    budget_client member(io_.get_executor(), test_options(redis_->port()), target_of(pool));
    member.start();
    ASSERT_TRUE(eventually([&] { return member.stats().refreshes >= 2; }));
    admin_->call({"SCRIPT", "FLUSH"});
    const auto before = member.stats();
    EXPECT_TRUE(eventually([&] { return member.stats().refreshes >= before.refreshes + 3; }));
    EXPECT_EQ(member.stats().refresh_failures, before.refresh_failures);
}

TEST_F(budget_client_test, pools_in_one_process_join_budgets_of_their_own) {
    establish(*admin_, "x", 2);
    establish(*admin_, "y", 3);
    auto p1 = make_pool(), p2 = make_pool();
    budget_client m1(io_.get_executor(), test_options(redis_->port(), "x", 2), target_of(p1));
    budget_client m2(io_.get_executor(), test_options(redis_->port(), "y", 3), target_of(p2));
    m1.start();
    m2.start();
    auto h1 = p1.make_handle(), h2 = p2.make_handle();
    std::vector<std::future<int_pool::lease_type>> held;
    for (int i = 0; i < 5; ++i) held.push_back(h1.async_acquire(asio::use_future));
    for (int i = 0; i < 5; ++i) held.push_back(h2.async_acquire(asio::use_future));
    EXPECT_TRUE(eventually([&] { return m1.stats().limit == 2 && m2.stats().limit == 3; }));
    EXPECT_TRUE(eventually([&] { return p1.stats().held == 2 && p2.stats().held == 3; }));
    std::string text;
    const budget_client* both[] = {&m1, &m2};
    append_prometheus(text, both);
    EXPECT_NE(text.find("fairpool_budget_limit{budget=\"x\",member=\"m1\"} 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("fairpool_budget_limit{budget=\"y\",member=\"m1\"} 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("fairpool_budget_state{budget=\"x\",member=\"m1\",state=\"granted\"} 1\n"), std::string::npos);
    EXPECT_EQ(text.find("# TYPE fairpool_budget_limit gauge"), text.rfind("# TYPE fairpool_budget_limit gauge"))
        << "each family once";
    m1.stop();
    m2.stop();
}

TEST_F(budget_client_test, a_foreign_budget_under_its_keys_is_refused_and_grants_nothing) {
    establish(*admin_, "t", 9);  // another fleet's B under the same name
    auto pool = make_pool();
    budget_client member(io_.get_executor(), test_options(redis_->port(), "t", 4), target_of(pool));
    member.start();
    EXPECT_TRUE(eventually([&] { return member.stats().refresh_failures >= 2; }));
    const auto s = member.stats();
    EXPECT_NE(s.last_error.find("{t}:meta holds budget 9, this member was given 4"), std::string::npos) << s.last_error;
    EXPECT_EQ(s.limit, 0u);
    EXPECT_EQ(s.state, member_state::joining);
}

TEST_F(budget_client_test, a_member_that_leaves_after_its_pool_closed_frees_its_share_at_once) {
    establish(*admin_, "t", 4);
    auto pool = make_pool();
    budget_client member(io_.get_executor(), test_options(redis_->port()), target_of(pool));
    member.start();
    auto h = pool.make_handle();
    (void)h.async_acquire(asio::use_future).get();
    ASSERT_EQ(admin_->call({"HEXISTS", "{t}:members", "m1"}).integer, 1);
    pool.async_close(asio::use_future).get();
    member.leave();
    EXPECT_TRUE(eventually([&] { return member.stats().state == member_state::stopped; }));
    EXPECT_EQ(admin_->call({"HEXISTS", "{t}:members", "m1"}).integer, 0);
}

TEST(budget_options_test, bad_options_are_refused_with_a_clear_error) {
    budget_options o;
    o.name = "orders";
    o.budget = 12;
    o.redis = {asio::ip::make_address("127.0.0.1"), 6379};
    EXPECT_EQ(validate(o), std::nullopt);
    const auto why = [&](auto change) {
        auto bad = o;
        change(bad);
        return validate(bad).value_or("");
    };
    EXPECT_EQ(why([](auto& b) { b.budget = 0; }), "budget must be at least 1");
    EXPECT_EQ(why([](auto& b) { b.fallback = 13; }), "fallback (13) above the budget (12)");
    EXPECT_EQ(why([](auto& b) { b.refresh_interval = b.lease; }), "refresh_interval must be below lease");
    EXPECT_EQ(why([](auto& b) { b.name = "a b"; }), "name must be 1..64 letters, digits or -_.: (got 'a b')");
    EXPECT_EQ(why([](auto& b) { b.name = "a}b"; }), "name must be 1..64 letters, digits or -_.: (got 'a}b')");
    EXPECT_EQ(why([](auto& b) { b.forget_after = b.lease; }), "forget_after must be at least lease + grace");
    EXPECT_EQ(why([](auto& b) { b.user = "fp"; }), "a Redis user needs a password");
    asio::io_context io;
    auto pool = int_pool(io.get_executor(), small_pool(), []() -> asio::awaitable<int> { co_return 1; });
    auto bad = o;
    bad.budget = 0;
    EXPECT_THROW(budget_client(io.get_executor(), bad, target_of(pool)), std::invalid_argument);
}

}  // namespace
}  // namespace fairpool::budget::testing
