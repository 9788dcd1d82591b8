// The allocator script's rules (docs/CONTRACT.md section 12), one refresh at a time
// against a real redis-server: weighted max-min fair shares, a lowered grant freeing
// capacity only once the member reports it has shrunk, Σ committed <= B on every run,
// silent members reserved for lease + grace (and their fallback until forgotten),
// learning after lost state, leave, and bad input refused with nothing changed.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "script_driver.hpp"

namespace fairpool::budget::testing {
namespace {

using namespace std::chrono_literals;
using fairpool::demo::testing::start_redis_server;

class allocator : public ::testing::Test {
protected:
    void SetUp() override {
        start_redis_server(redis_);
        if (HasFatalFailure()) return;
        driver_ = std::make_unique<script_driver>(redis_->port(), budget_args{});
        established();
    }
    // A budget past its first learning period (a new epoch learns for lease + grace:
    // lost_state_starts_learning... tests that), with no member yet.
    void established() {
        ASSERT_EQ(d().run({.id = "init"}).error, "");
        d().redis().call({"HSET", "{b}:meta", "learning_until", "0"});
        d().redis().call({"HDEL", "{b}:members", "init"});
    }
    script_driver& d() { return *driver_; }
    // Every member refreshes, in order, `rounds` times.
    void rounds(std::vector<member_report*> members, int n) {
        for (int i = 0; i < n; ++i)
            for (auto* m : members) d().refresh(*m);
    }
    std::string member_record(const std::string& id) {
        return d().redis().call({"HGET", "{b}:members", id}).text;
    }

    std::unique_ptr<fairpool::demo::redis_process> redis_;
    std::unique_ptr<script_driver> driver_;
};

TEST_F(allocator, equal_weights_converge_to_max_min_fair_grants) {
    member_report a{.id = "a", .demand = 20}, b{.id = "b", .demand = 4}, c{.id = "c", .demand = 2};
    // The first member alone takes what it wants; the others get only what is free
    // until it reports that it has shrunk to its share.
    EXPECT_EQ(d().refresh(a).grant, 12u);
    EXPECT_EQ(d().refresh(b).grant, 0u) << "a's grant of 12 is still committed";
    EXPECT_EQ(d().refresh(c).grant, 0u);
    EXPECT_EQ(d().refresh(a).grant, 6u) << "a's target among three";
    EXPECT_EQ(d().refresh(b).grant, 0u) << "a has not yet reported holding 6";
    EXPECT_EQ(d().refresh(c).grant, 0u);
    rounds({&a, &b, &c}, 1);
    EXPECT_EQ(a.limit, 6u);
    EXPECT_EQ(b.limit, 4u);
    EXPECT_EQ(c.limit, 2u);
    const auto g = d().refresh(a);
    EXPECT_EQ(g.target, 6u);
    EXPECT_EQ(g.live, 3u);
    EXPECT_EQ(g.committed, 12u);
    EXPECT_EQ(g.violations, 0u);
}

TEST_F(allocator, weights_divide_what_demand_leaves) {
    member_report a{.id = "a", .demand = 10, .weight = 3}, b{.id = "b", .demand = 10, .weight = 1};
    d().redis().call({"FLUSHALL"});
    d().args().budget = 8;
    established();
    rounds({&a, &b}, 3);
    EXPECT_EQ(a.limit, 6u);
    EXPECT_EQ(b.limit, 2u);
    // Remainders go to the larger fractional share, then to the smaller id.
    member_report c{.id = "c", .demand = 10, .weight = 1};
    rounds({&a, &b, &c}, 4);
    EXPECT_EQ(a.limit, 5u) << "24/5 = 4.8 rounds up";
    EXPECT_EQ(b.limit + c.limit, 3u);
    EXPECT_EQ(b.limit, 2u) << "b's 1.6 and c's 1.6 tie: the smaller id first";
}

TEST_F(allocator, zero_demand_takes_no_share) {
    member_report a{.id = "a", .demand = 0}, b{.id = "b", .demand = 30};
    rounds({&a, &b}, 2);
    EXPECT_EQ(a.limit, 0u);
    EXPECT_EQ(b.limit, 12u);
}

TEST_F(allocator, a_lowered_grant_frees_capacity_only_once_the_member_has_shrunk) {
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 0};
    rounds({&a, &b}, 1);
    ASSERT_EQ(a.limit, 12u);
    ASSERT_EQ(a.held, 12u);
    b.demand = 12;
    d().refresh(b);
    // a is told 6, applies it, but its six surplus leases are still out.
    EXPECT_EQ(d().refresh(a, /*keep_surplus=*/true).grant, 6u);
    EXPECT_EQ(a.held, 12u);
    EXPECT_EQ(d().refresh(b).grant, 0u) << "a still holds 12";
    a.held = 9;  // three came back and were retired
    d().refresh(a, true);
    EXPECT_EQ(d().refresh(b).grant, 3u);
    a.held = 6;
    d().refresh(a, true);
    EXPECT_EQ(d().refresh(b).grant, 6u);
    EXPECT_EQ(d().refresh(a).violations, 0u);
}

TEST_F(allocator, a_grant_whose_reply_was_lost_stays_committed) {
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 12};
    // a's first grant of 12 never reaches it: it reports limit 0 and version 0 again.
    EXPECT_EQ(d().run(a).grant, 12u);
    EXPECT_EQ(d().refresh(b).grant, 0u) << "a may be acting on the grant it never confirmed";
}

// Σ committed <= B after every run, whatever the members do within a pool's rules:
// demand changes at random, held moves up to the limit, a surplus above a lowered limit
// drains at random, replies are lost, members fall silent. Checked by the script's own
// count and by recomputing Σ committed from the stored records.
RC_GTEST_FIXTURE_PROP(allocator, committed_never_exceeds_the_budget, ()) {
    d().redis().call({"FLUSHALL"});
    const auto B = *rc::gen::inRange<std::uint64_t>(1, 20);
    d().args().budget = B;
    established();
    const auto n = *rc::gen::inRange<std::size_t>(1, 6);
    std::vector<member_report> m(n);
    for (std::size_t i = 0; i < n; ++i) m[i].id = "m" + std::to_string(i);
    const auto steps = *rc::gen::inRange(10, 60);
    for (int s = 0; s < steps; ++s) {
        auto& x = m[*rc::gen::inRange<std::size_t>(0, n)];
        x.demand = *rc::gen::inRange<std::uint64_t>(0, 25);
        x.weight = *rc::gen::inRange<std::uint64_t>(1, 4);
        const bool lost = *rc::gen::inRange(0, 6) == 0;
        const auto g = d().run(x);
        RC_ASSERT(g.error == "");
        RC_ASSERT(g.violations == 0u);
        RC_ASSERT(g.committed <= B);
        RC_ASSERT(g.grant <= B);
        if (!lost) {
            x.limit = g.grant, x.epoch = g.epoch, x.version = g.version;
        }
        // The pool: up to its limit; above a lowered limit only as leases come back.
        const std::uint64_t may = std::min(x.limit, x.demand);
        x.held = x.held > x.limit ? *rc::gen::inRange<std::uint64_t>(x.limit, x.held + 1) : may;
        std::uint64_t sum = 0;
        const auto all = d().redis().call({"HGETALL", "{b}:members"});
        for (std::size_t i = 1; i < all.elements.size(); i += 2) {
            std::istringstream f(all.elements[i].text);
            std::uint64_t grant, gv, av, held, limit;
            f >> grant >> gv >> av >> held >> limit;
            std::uint64_t c = std::max(held, limit);
            if (av < gv) c = std::max(c, grant);
            sum += c;
        }
        RC_ASSERT(sum <= B);
    }
}

TEST_F(allocator, a_silent_member_is_reserved_for_lease_and_grace_then_reused) {
    d().args().lease_ms = 200;
    d().args().grace_ms = 200;
    d().args().forget_ms = 400;
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 12};
    rounds({&a}, 1);
    std::this_thread::sleep_for(250ms);  // past a's lease, within its grace
    auto g = d().refresh(b);
    EXPECT_EQ(g.grant, 0u) << "a is silent but still reserved";
    EXPECT_EQ(g.live, 1u) << "a takes no share of the targets";
    std::this_thread::sleep_for(200ms);  // past lease + grace
    g = d().refresh(b);
    EXPECT_EQ(g.grant, 12u);
    EXPECT_EQ(d().redis().call({"HEXISTS", "{b}:members", "a"}).integer, 0) << "forgotten at forget_after";
}

TEST_F(allocator, a_silent_member_keeps_its_fallback_until_forgotten) {
    d().args().lease_ms = 200;
    d().args().grace_ms = 100;
    d().args().forget_ms = 800;
    d().args().fallback = 4;
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 12};
    rounds({&a}, 1);
    ASSERT_EQ(a.limit, 12u);
    std::this_thread::sleep_for(400ms);  // past lease + grace: a has fallen back to min(12, 4)
    EXPECT_EQ(d().refresh(b).grant, 8u);
    std::this_thread::sleep_for(500ms);  // past forget_after: a has dropped to 0
    EXPECT_EQ(d().refresh(b).grant, 12u);
}

TEST_F(allocator, a_member_that_leaves_holding_nothing_frees_its_share_at_once) {
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 12};
    rounds({&a}, 1);
    a.held = 3;
    EXPECT_EQ(d().run({.id = "a", .held = 3, .limit = 0, .epoch = a.epoch, .version = a.version}, "leave").error, "");
    EXPECT_EQ(d().redis().call({"HEXISTS", "{b}:members", "a"}).integer, 1) << "still holding 3: reserved";
    EXPECT_EQ(d().refresh(b).grant, 9u);
    d().run({.id = "a", .held = 0, .limit = 0, .epoch = a.epoch, .version = a.version}, "leave");
    EXPECT_EQ(d().redis().call({"HEXISTS", "{b}:members", "a"}).integer, 0);
    EXPECT_EQ(d().refresh(b).grant, 12u);
}

TEST_F(allocator, lost_state_starts_learning_that_only_confirms_what_members_hold) {
    d().args().lease_ms = 300;
    d().args().grace_ms = 100;
    member_report a{.id = "a", .demand = 12}, b{.id = "b", .demand = 12};
    d().redis().call({"FLUSHALL"});
    auto g = d().refresh(a);
    EXPECT_TRUE(g.learning) << "a new epoch begins in learning";
    EXPECT_EQ(g.grant, 0u) << "a holds nothing: learning confirms 0";
    std::this_thread::sleep_for(450ms);
    rounds({&a, &b}, 3);
    EXPECT_EQ(a.limit, 6u);
    EXPECT_EQ(b.limit, 6u);
    const std::uint64_t epoch = a.epoch;
    // Restarted empty: both members still hold 6 and report it.
    d().redis().call({"FLUSHALL"});
    member_report c{.id = "c", .demand = 12};
    g = d().refresh(a);
    EXPECT_TRUE(g.learning);
    EXPECT_NE(g.epoch, epoch);
    EXPECT_EQ(g.grant, 6u) << "confirmed: what a holds";
    EXPECT_EQ(d().refresh(c).grant, 0u) << "a newcomer gets nothing while learning";
    EXPECT_EQ(d().refresh(b).grant, 6u);
    EXPECT_EQ(d().refresh(c).violations, 0u);
}

TEST_F(allocator, a_member_version_ahead_of_the_store_means_lost_writes) {
    member_report a{.id = "a", .demand = 12};
    rounds({&a}, 2);
    const auto before = a;
    // A failover to a replica that missed the last writes: the stored version is behind.
    d().redis().call({"HSET", "{b}:meta", "version", "0"});
    const auto g = d().refresh(a);
    EXPECT_TRUE(g.learning);
    EXPECT_NE(g.epoch, before.epoch);
    EXPECT_EQ(g.grant, 12u) << "learning confirms what a holds";
}

TEST_F(allocator, bad_state_or_arguments_are_refused_naming_them_and_change_nothing) {
    member_report a{.id = "a", .demand = 12};
    rounds({&a}, 1);
    auto& r = d().redis();
    const auto record = member_record("a");
    const auto meta_version = r.call({"HGET", "{b}:meta", "version"}).text;
    const auto expect_refused = [&](const std::string& fragment) {
        const auto g = d().run(a);
        EXPECT_NE(g.error.find(fragment), std::string::npos) << g.error;
        EXPECT_EQ(member_record("a"), record);
        EXPECT_EQ(r.call({"HGET", "{b}:meta", "version"}).text, meta_version);
    };
    r.call({"HSET", "{b}:members", "x", "1 2 three 4 5 6 7 8 9"});
    expect_refused("{b}:members member x field applied_version");
    r.call({"HSET", "{b}:members", "x", "1 2"});
    expect_refused("{b}:members member x is corrupt");
    r.call({"HDEL", "{b}:members", "x"});
    r.call({"HSET", "{b}:meta", "budget", "13"});
    expect_refused("{b}:meta holds budget 13, this member was given 12");
    r.call({"HSET", "{b}:meta", "budget", "12"});
    r.call({"HDEL", "{b}:meta", "epoch"});
    expect_refused("{b}:meta has no field epoch");
    r.call({"HSET", "{b}:meta", "epoch", "-4"});
    expect_refused("{b}:meta field epoch is not a non-negative integer");
    r.call({"HSET", "{b}:meta", "epoch", std::to_string(a.epoch)});
    r.call({"SET", "{b}:violations", "many"});
    expect_refused("{b}:violations is not a non-negative integer");
    r.call({"DEL", "{b}:violations"});
    r.call({"DEL", "{b}:members"});
    r.call({"SET", "{b}:members", "not a hash"});
    EXPECT_NE(d().run(a).error.find("WRONGTYPE"), std::string::npos);
    r.call({"DEL", "{b}:members"});
    d().args().budget = 0;
    EXPECT_NE(d().run(a).error.find("budget must be at least 1"), std::string::npos);
    d().args().budget = 12;
    d().args().fallback = 13;
    EXPECT_NE(d().run(a).error.find("fallback above the budget"), std::string::npos);
    d().args().fallback = 0;
    EXPECT_NE(d().run(a, "grab").error.find("unknown op grab"), std::string::npos);
    EXPECT_NE(d().run({.id = "has space"}).error.find("bad member id"), std::string::npos);
    EXPECT_EQ(d().run(a).error, "") << "all repaired: served again";
}

}  // namespace
}  // namespace fairpool::budget::testing
