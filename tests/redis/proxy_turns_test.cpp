// Turns through the proxy to a real redis-server: a grant carries the waiting requests
// of several clients of one tenant; blocking commands take turns of their own; a client
// that leaves before its turn has its requests dropped, never sent; a client reading
// ahead past max_client_pipeline is paused, not refused.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace fairpool::demo::testing {
namespace {

using namespace std::chrono_literals;

class turns : public with_redis {
protected:
    // A proxy with `slots` backend connections, all made before it is used.
    [[nodiscard]] proxy_options options(std::size_t slots) const {
        auto o = with_redis::options();
        o.pool.max_slots = o.pool.min_slots = slots;
        o.request_timeout = 3s;  // above every BLPOP's here
        return o;
    }
};

// While the only connection is held by a BLPOP, three clients send an INCR each: when
// the connection comes back, one turn carries all three.
TEST_F(turns, the_waiting_requests_of_several_clients_go_in_one_turn) {
    proxy_harness proxy(options(1));
    ASSERT_TRUE(eventually([&] { return proxy.proxy().pool_stats().slots_idle == 1; }));
    client blocker(proxy.port());
    blocker.send({"BLPOP", "turns:empty", "0.5"});
    ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().turns == 1; }));
    std::vector<client> others;
    for (int i = 0; i < 3; ++i) {
        others.emplace_back(proxy.port());
        others.back().send({"INCR", "turns:n"});
    }
    ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().requests == 4; }));
    EXPECT_EQ(proxy.proxy().totals().turns, 1u) << "an INCR went out while the BLPOP held the connection";
    const auto blpop = blocker.receive();
    ASSERT_TRUE(blpop.has_value());
    EXPECT_EQ(blpop->type, resp::type::null);
    std::vector<std::int64_t> got;
    for (auto& c : others) {
        const auto r = c.receive();
        ASSERT_TRUE(r.has_value());
        got.push_back(r->integer);
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(proxy.proxy().totals().turns, 2u) << "the three INCRs did not share one turn";
    EXPECT_EQ(proxy.proxy().pool_stats().retired_dirty, 0u);
}

// Both connections busy, then a BLPOP and an INCR from two clients wait. As the
// connections come back, the BLPOP gets one to itself and the INCR the other: the INCR
// is answered while the BLPOP still blocks (in one pipeline it would wait behind it).
TEST_F(turns, a_blocking_command_takes_a_turn_of_its_own) {
    proxy_harness proxy(options(2));
    ASSERT_TRUE(eventually([&] { return proxy.proxy().pool_stats().slots_idle == 2; }));
    client busy_1(proxy.port()), busy_2(proxy.port()), blocking(proxy.port()), plain(proxy.port());
    busy_1.send({"BLPOP", "turns:empty", "0.3"});
    busy_2.send({"BLPOP", "turns:empty", "0.3"});
    ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().turns == 2; }));
    blocking.send({"BLPOP", "turns:empty", "2"});
    plain.send({"INCR", "turns:m"});
    ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().requests == 4; }));
    const auto incr = plain.receive();
    ASSERT_TRUE(incr.has_value());
    EXPECT_EQ(incr->integer, 1);
    EXPECT_EQ(proxy.proxy().totals().backend_replies, 3u) << "the INCR came after the long BLPOP's reply";
    EXPECT_EQ(blocking.receive()->type, resp::type::null);
    EXPECT_EQ(proxy.proxy().totals().turns, 4u);
}

// A client that leaves while its requests wait for a turn: they are dropped, never
// sent, and the connection is not retired; the others' are served.
TEST_F(turns, requests_of_a_client_that_left_before_its_turn_are_never_sent) {
    proxy_harness proxy(options(1));
    ASSERT_TRUE(eventually([&] { return proxy.proxy().pool_stats().slots_idle == 1; }));
    client blocker(proxy.port()), stays(proxy.port());
    blocker.send({"BLPOP", "turns:empty", "0.5"});
    ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().turns == 1; }));
    {
        client leaves(proxy.port());
        leaves.send({"INCR", "turns:left"});
        ASSERT_TRUE(eventually([&] { return proxy.proxy().totals().requests == 2; }));
    }
    ASSERT_TRUE(eventually([&] { return proxy.proxy().clients() == 2; }));
    EXPECT_EQ(stays.call({"INCR", "turns:stayed"}).integer, 1);
    ASSERT_TRUE(blocker.receive().has_value());
    client admin(redis_->port());
    EXPECT_EQ(admin.call({"EXISTS", "turns:left"}).integer, 0) << "the request of the client that left was sent";
    EXPECT_EQ(proxy.proxy().pool_stats().retired_dirty, 0u);
}

// A pipeline of 50 with max_client_pipeline 4: the client is read four requests ahead
// at a time, and every reply comes, in order.
TEST_F(turns, a_client_reading_ahead_past_max_client_pipeline_is_paused_not_refused) {
    auto o = options(2);
    o.max_client_pipeline = 4;
    proxy_harness proxy(o);
    client cl(proxy.port());
    std::string pipeline;
    for (int i = 0; i < 50; ++i) pipeline += resp::command({"INCR", "turns:ahead"});
    cl.send_raw(pipeline);
    for (int i = 1; i <= 50; ++i) {
        const auto r = cl.receive();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->integer, i);
    }
    EXPECT_GE(proxy.proxy().totals().turns, 13u) << "a turn carried more than 4 requests of the client";
}

}  // namespace
}  // namespace fairpool::demo::testing
