// The fleet suite: replica processes sharing one budget of B = 12 connections to a real
// PostgreSQL through a real Redis, each scenario watched by sampling pg_stat_activity
// every 2 ms. With the fence off the budget alone must hold B (S1-S3, S5, S6); with it
// on, PostgreSQL refuses no login in those; a paused member (S4) overshoots B without
// the fence and not with it; the negative controls (S7) overshoot, which shows that the
// watcher would see an overshoot.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "scenarios.hpp"

namespace fairpool::fleet {
namespace {

world& the_world() {
    static const std::unique_ptr<world> w = [] {
        const char* program = std::getenv("FAIRPOOL_FLEET_REPLICA");
        if (!program || !*program) throw std::runtime_error("FAIRPOOL_FLEET_REPLICA is not set");
        return std::make_unique<world>(program, 12);
    }();
    return *w;
}

void expect_within_budget(const figures& f) {
    std::printf("%s fence %s: max %llu of %llu, time to fair %.3f s, violations %llu, refused logins %llu\n",
                f.scenario.c_str(), f.fence ? "on" : "off", static_cast<unsigned long long>(f.max_connections),
                static_cast<unsigned long long>(f.budget), f.seconds_to_fair,
                static_cast<unsigned long long>(f.violations), static_cast<unsigned long long>(f.refused_logins));
    EXPECT_TRUE(f.converged) << f.scenario << ": " << f.detail;
    EXPECT_LE(f.max_connections, f.budget) << f.scenario << ": " << f.detail;
    EXPECT_GT(f.samples, 100u) << f.scenario << ": the watcher must have sampled";
    EXPECT_EQ(f.violations, 0u) << f.scenario;
    if (f.fence) {
        EXPECT_EQ(f.refused_logins, 0u) << f.scenario << ": the fence refused a login";
    }
}

class fleet : public ::testing::TestWithParam<bool> {};

TEST_P(fleet, steady_state_join_and_kill_stay_within_the_budget) {
    const auto all = run_s1_s2_s3(the_world(), GetParam());
    ASSERT_EQ(all.size(), 3u);
    for (const auto& f : all) expect_within_budget(f);
    EXPECT_GE(all[0].utilisation, 0.95) << all[0].detail;
    EXPECT_GT(all[0].max_connections, 0u);
}

TEST_P(fleet, redis_restarted_empty_falls_back_then_learns_within_the_budget) {
    const auto f = run_s5_redis_restart(the_world(), GetParam());
    expect_within_budget(f);
    EXPECT_TRUE(f.saw_fallback) << f.detail;
}

TEST_P(fleet, a_rolling_deploy_stays_within_the_budget) { expect_within_budget(run_s6_rolling_deploy(the_world(), GetParam())); }

TEST_P(fleet, a_paused_member_overshoots_without_the_fence_and_not_with_it) {
    const auto f = run_s4_pause(the_world(), GetParam());
    EXPECT_TRUE(f.converged) << f.detail;
    if (GetParam()) {
        EXPECT_LE(f.max_connections, f.budget) << f.detail;
        EXPECT_GT(f.refused_logins, 0u) << "the others' spawns past B are refused logins";
    } else {
        EXPECT_GT(f.max_connections, f.budget) << "the Kleppmann case: only a fence holds B here; " << f.detail;
    }
}

INSTANTIATE_TEST_SUITE_P(fence, fleet, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "fence_on" : "fence_off"; });

TEST(fleet_controls, the_static_split_overshoots_under_a_deploy_surge) {
    const auto f = run_s7a_static_split(the_world());
    EXPECT_GT(f.max_connections, f.budget) << f.detail;
}

TEST(fleet_controls, an_allocator_that_frees_a_lowered_grant_at_once_overshoots) {
    const auto f = run_s7b_immediate_shrink(the_world());
    EXPECT_TRUE(f.converged) << f.detail;
    EXPECT_GT(f.max_connections, f.budget) << f.detail;
}

}  // namespace
}  // namespace fairpool::fleet
