// The Prometheus exposition of core::stats (core/src/prometheus.cpp, docs/METRICS.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fairpool/core/prometheus.hpp"

namespace fairpool::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every field distinct, so a value in the wrong series shows. Waits: 60 of 0 ns, 10 in
// [1024, 2048) ns, 15 in [2^22, 2^23) ns, 5 in [2^39, 2^40) ns (beyond the largest
// finite le, so only in +Inf).
stats known_stats() {
    stats s;
    s.acquires = 101;
    s.grants_immediate = 60;
    s.grants_after_wait = 30;
    s.rejections = {1, 2, 3, 4, 5};
    s.spawns = 7;
    s.spawn_failures = 2;
    s.retirements = {11, 12, 13, 14, 15, 16, 17, 18};
    s.resizes = 36;
    s.waiters_behind_cap = 37;
    s.handles_at_cap = 38;
    s.leaks_suspected = 3;
    s.checks_started = 31;
    s.checks_passed = 32;
    s.checks_failed = 33;
    s.resets_started = 34;
    s.resets_failed = 35;
    s.busy_rejections = 8;
    s.queued_waiters = 9;
    s.active_handles = 4;
    s.active_weight = 39;
    s.slots = {21, 22, 23, 24, 25, 26, 27};
    s.wait_histogram[0] = 60;
    s.wait_histogram[11] = 10;
    s.wait_histogram[23] = 15;
    s.wait_histogram[40] = 5;
    return s;
}

// _sum: each wait at the middle of its bucket: 10 * 1535.5 + 15 * 6291455.5
// + 5 * 824633720831.5 ns = 4123262991345 ns.
constexpr const char* golden = R"(# HELP fairpool_acquires_total Valid acquire requests, whatever their outcome.
# TYPE fairpool_acquires_total counter
fairpool_acquires_total{pool="db"} 101
# HELP fairpool_grants_total Acquires granted a resource, at once (immediate) or after queueing (after_wait).
# TYPE fairpool_grants_total counter
fairpool_grants_total{pool="db",kind="immediate"} 60
fairpool_grants_total{pool="db",kind="after_wait"} 30
# HELP fairpool_rejections_total Acquires rejected, by reason.
# TYPE fairpool_rejections_total counter
fairpool_rejections_total{pool="db",reason="saturated"} 1
fairpool_rejections_total{pool="db",reason="timeout"} 2
fairpool_rejections_total{pool="db",reason="cancelled"} 3
fairpool_rejections_total{pool="db",reason="deregistered"} 4
fairpool_rejections_total{pool="db",reason="closed"} 5
# HELP fairpool_busy_rejections_total Acquires refused with busy before they reached the scheduler (the adapter's mailbox was full).
# TYPE fairpool_busy_rejections_total counter
fairpool_busy_rejections_total{pool="db"} 8
# HELP fairpool_spawns_total Resources the pool asked to create.
# TYPE fairpool_spawns_total counter
fairpool_spawns_total{pool="db"} 7
# HELP fairpool_spawn_failures_total Resource creations that failed.
# TYPE fairpool_spawn_failures_total counter
fairpool_spawn_failures_total{pool="db"} 2
# HELP fairpool_retirements_total Resources retired, by reason.
# TYPE fairpool_retirements_total counter
fairpool_retirements_total{pool="db",reason="dirty"} 11
fairpool_retirements_total{pool="db",reason="max_uses"} 12
fairpool_retirements_total{pool="db",reason="max_lifetime"} 13
fairpool_retirements_total{pool="db",reason="idle"} 14
fairpool_retirements_total{pool="db",reason="died"} 15
fairpool_retirements_total{pool="db",reason="shutdown"} 16
fairpool_retirements_total{pool="db",reason="reset_failed"} 17
fairpool_retirements_total{pool="db",reason="resize"} 18
# HELP fairpool_leaks_suspected_total Leases held longer than leak_threshold (each reported once).
# TYPE fairpool_leaks_suspected_total counter
fairpool_leaks_suspected_total{pool="db"} 3
# HELP fairpool_checks_started_total Health checks started (before a grant of a stale resource, or keepalive).
# TYPE fairpool_checks_started_total counter
fairpool_checks_started_total{pool="db"} 31
# HELP fairpool_checks_total Health checks finished, by outcome.
# TYPE fairpool_checks_total counter
fairpool_checks_total{pool="db",outcome="alive"} 32
fairpool_checks_total{pool="db",outcome="dead"} 33
# HELP fairpool_resets_started_total Resets of released resources started.
# TYPE fairpool_resets_started_total counter
fairpool_resets_started_total{pool="db"} 34
# HELP fairpool_resets_failed_total Resets that failed (the resource was retired).
# TYPE fairpool_resets_failed_total counter
fairpool_resets_failed_total{pool="db"} 35
# HELP fairpool_resizes_total Runtime resizes of the pool (resize events).
# TYPE fairpool_resizes_total counter
fairpool_resizes_total{pool="db"} 36
# HELP fairpool_slots Slots by state.
# TYPE fairpool_slots gauge
fairpool_slots{pool="db",state="empty"} 21
fairpool_slots{pool="db",state="spawning"} 22
fairpool_slots{pool="db",state="idle"} 23
fairpool_slots{pool="db",state="leased"} 24
fairpool_slots{pool="db",state="retiring"} 25
fairpool_slots{pool="db",state="checking"} 26
fairpool_slots{pool="db",state="resetting"} 27
# HELP fairpool_waiters Acquires queued, waiting for a resource.
# TYPE fairpool_waiters gauge
fairpool_waiters{pool="db"} 9
# HELP fairpool_active_handles Handles with at least one queued waiter.
# TYPE fairpool_active_handles gauge
fairpool_active_handles{pool="db"} 4
# HELP fairpool_active_weight Sum of the weights of the handles with at least one queued waiter.
# TYPE fairpool_active_weight gauge
fairpool_active_weight{pool="db"} 39
# HELP fairpool_waiters_behind_cap Queued acquires of handles holding their max_leases (not eligible until a lease comes back).
# TYPE fairpool_waiters_behind_cap gauge
fairpool_waiters_behind_cap{pool="db"} 37
# HELP fairpool_handles_at_cap Handles holding their max_leases leases.
# TYPE fairpool_handles_at_cap gauge
fairpool_handles_at_cap{pool="db"} 38
# HELP fairpool_acquire_wait_seconds Time from acquire to grant, immediate grants included (_sum is estimated from the buckets).
# TYPE fairpool_acquire_wait_seconds histogram
fairpool_acquire_wait_seconds_bucket{pool="db",le="0"} 60
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000001023"} 60
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000002047"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000004095"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000008191"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000016383"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000032767"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000065535"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000131071"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000262143"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.000524287"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.001048575"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.002097151"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.004194303"} 70
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.008388607"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.016777215"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.033554431"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.067108863"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.134217727"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.268435455"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="0.536870911"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="1.073741823"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="2.147483647"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="4.294967295"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="8.589934591"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="17.179869183"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="34.359738367"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="68.719476735"} 85
fairpool_acquire_wait_seconds_bucket{pool="db",le="+Inf"} 90
fairpool_acquire_wait_seconds_sum{pool="db"} 4123.262991345
fairpool_acquire_wait_seconds_count{pool="db"} 90
)";

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

struct bucket_sample {
    std::string le;
    std::uint64_t count;
};

// The _bucket samples of the histogram, in order, then the _count.
std::vector<bucket_sample> buckets_of(const std::string& text, std::uint64_t& count) {
    std::vector<bucket_sample> buckets;
    for (const auto& line : lines_of(text)) {
        if (line.starts_with("#")) continue;
        const auto value = std::stoull(line.substr(line.rfind(' ') + 1));
        if (line.starts_with("fairpool_acquire_wait_seconds_bucket{")) {
            const auto le = line.find("le=\"") + 4;
            buckets.push_back({line.substr(le, line.find('"', le) - le), value});
        } else if (line.starts_with("fairpool_acquire_wait_seconds_count{")) {
            count = value;
        }
    }
    return buckets;
}

TEST(prometheus, known_stats_render_exactly_the_golden_text) {
    EXPECT_EQ(prometheus_text(known_stats(), "db"), golden);
}

TEST(prometheus, append_adds_to_what_is_there_and_matches_prometheus_text) {
    std::string out = "# before\n";
    append_prometheus_text(out, known_stats(), "db");
    EXPECT_EQ(out, std::string("# before\n") + golden);
}

TEST(prometheus, zero_stats_still_list_every_reason_and_state) {
    const std::string text = prometheus_text(stats{}, "p");
    for (int i = 0; i < reject_reason_count; ++i)
        EXPECT_THAT(text, HasSubstr(std::string("fairpool_rejections_total{pool=\"p\",reason=\"") +
                                    to_string(static_cast<reject_reason>(i)) + "\"} 0\n"));
    for (int i = 0; i < retire_reason_count; ++i)
        EXPECT_THAT(text, HasSubstr(std::string("fairpool_retirements_total{pool=\"p\",reason=\"") +
                                    to_string(static_cast<retire_reason>(i)) + "\"} 0\n"));
    for (int i = 0; i < slot_state_count; ++i)
        EXPECT_THAT(text, HasSubstr(std::string("fairpool_slots{pool=\"p\",state=\"") +
                                    to_string(static_cast<slot_state>(i)) + "\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("fairpool_acquire_wait_seconds_bucket{pool=\"p\",le=\"+Inf\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("fairpool_acquire_wait_seconds_sum{pool=\"p\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("fairpool_acquire_wait_seconds_count{pool=\"p\"} 0\n"));
}

TEST(prometheus, label_value_escapes_backslash_quote_and_newline) {
    const std::string text = prometheus_text(stats{}, "a\\b\"c\nd");
    EXPECT_THAT(text, HasSubstr("fairpool_acquires_total{pool=\"a\\\\b\\\"c\\nd\"} 0\n"));
    // No raw newline inside a sample: every line is a comment or starts with a name.
    for (const auto& line : lines_of(text)) EXPECT_TRUE(line.starts_with("# ") || line.starts_with("fairpool_")) << line;
}

TEST(prometheus, label_value_keeps_other_bytes_as_they_are) {
    const std::string text = prometheus_text(stats{}, "t\xc3\xa9nant {x}=1,'y' \t");
    EXPECT_THAT(text, HasSubstr("fairpool_waiters{pool=\"t\xc3\xa9nant {x}=1,'y' \t\"} 0\n"));
}

TEST(prometheus, buckets_are_cumulative_and_inf_equals_count) {
    stats s;
    for (int i = 0; i < wait_histogram_buckets; ++i)
        s.wait_histogram[static_cast<std::size_t>(i)] = 1u + static_cast<unsigned>(i) % 3;
    std::uint64_t total = 0;
    for (auto n : s.wait_histogram) total += n;
    std::uint64_t count = 0;
    const auto buckets = buckets_of(prometheus_text(s, "p"), count);
    ASSERT_EQ(buckets.size(), 29u);  // le="0", 2^10-1 .. 2^36-1 ns, +Inf
    EXPECT_EQ(buckets.front().le, "0");
    EXPECT_EQ(buckets.back().le, "+Inf");
    for (std::size_t i = 1; i < buckets.size(); ++i) {
        EXPECT_LE(buckets[i - 1].count, buckets[i].count) << buckets[i].le;
        if (i + 1 < buckets.size()) {
            EXPECT_LT(std::stod(buckets[i - 1].le), std::stod(buckets[i].le));
        }
    }
    EXPECT_EQ(buckets.back().count, total);
    EXPECT_EQ(count, total);
}

TEST(prometheus, a_bucket_bound_is_inclusive_of_the_largest_wait_its_core_bucket_holds) {
    stats s;
    s.wait_histogram[static_cast<std::size_t>(wait_bucket(1023))] = 1;  // le 1023 ns
    s.wait_histogram[static_cast<std::size_t>(wait_bucket(1024))] = 1;  // le 2047 ns
    const std::string text = prometheus_text(s, "p");
    EXPECT_THAT(text, HasSubstr("le=\"0.000001023\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("le=\"0.000002047\"} 2\n"));
}

TEST(prometheus, several_pools_share_one_help_and_type_per_family) {
    const stats a = known_stats();
    const stats b{};
    const prometheus_pool pools[] = {{&a, "a"}, {&b, "b"}};
    std::string text;
    append_prometheus_text(text, pools);
    std::size_t types = 0;
    for (const auto& line : lines_of(text)) {
        if (line.starts_with("# TYPE ")) ++types;
    }
    EXPECT_EQ(types, 20u);  // one per family (4 of them health: checks started, checks, resets started, resets failed)
    EXPECT_THAT(text, HasSubstr("fairpool_acquires_total{pool=\"a\"} 101\nfairpool_acquires_total{pool=\"b\"} 0\n"));
    EXPECT_THAT(text, HasSubstr("fairpool_acquire_wait_seconds_count{pool=\"a\"} 90\n"));
    EXPECT_THAT(text, HasSubstr("fairpool_acquire_wait_seconds_count{pool=\"b\"} 0\n"));
    EXPECT_THAT(text, Not(HasSubstr("\n\n")));
}

}  // namespace
}  // namespace fairpool::core
