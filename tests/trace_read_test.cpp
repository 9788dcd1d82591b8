// The trace reader (docs/CONTRACT.md section 7): what the writer prints reads back to
// the same trace; fields in any order, comments, blank lines, tabs and CRs are
// accepted; every kind of malformed input is refused with its exact line and message,
// never a crash. The corpus in tests/traces/malformed is checked file by file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::trace {
namespace {

using core::effect;
using core::event;
using core::event_error;

const std::string contract_example = R"(fairpool-trace v1
config max_slots=2 min_slots=1 acquire_timeout=5000000
@0 start
= spawn slot=0
@10 spawned slot=0
@20 acquire waiter=1 handle=7
= grant waiter=1 slot=0 lease=1
@30 acquire waiter=2 handle=8 deadline=1000
= spawn slot=1
@1000 tick
= reject waiter=2 reason=timeout
@1200 release slot=0 lease=1 outcome=dirty
= retire slot=0 reason=dirty
@1250 release slot=0 lease=1 outcome=clean
! stale_lease
@1300 acquire waiter=3 handle=7 deadline=1300
= reject waiter=3 reason=timeout
)";

const std::string canonical_example =
    "fairpool-trace v1\n"
    "config max_slots=2 min_slots=1 max_waiters=1024 max_waiters_per_handle=1024 policy=round_robin "
    "idle_order=lifo acquire_timeout=5000000 idle_timeout=0 max_lifetime=0 max_uses=0 "
    "spawn_backoff_initial=100000000 spawn_backoff_max=30000000000 max_concurrent_spawns=2 "
    "leak_threshold=0 check_after_idle=0 keepalive_interval=0 max_concurrent_checks=1 reset_on_release=false "
    "max_lifetime_jitter=0 jitter_seed=0\n"
    "@0 start\n"
    "= spawn slot=0\n"
    "@10 spawned slot=0\n"
    "@20 acquire waiter=1 handle=7\n"
    "= grant waiter=1 slot=0 lease=1\n"
    "@30 acquire waiter=2 handle=8 deadline=1000\n"
    "= spawn slot=1\n"
    "@1000 tick\n"
    "= reject waiter=2 reason=timeout\n"
    "@1200 release slot=0 lease=1 outcome=dirty\n"
    "= retire slot=0 reason=dirty\n"
    "@1250 release slot=0 lease=1 outcome=clean\n"
    "! stale_lease\n"
    "@1300 acquire waiter=3 handle=7 deadline=1300\n"
    "= reject waiter=3 reason=timeout\n";

// The header and a bare config: events start on line 3.
const std::string head = "fairpool-trace v1\nconfig\n";

// Reads `text` both as a string and as a stream; the two must agree.
read_result read_both(const std::string& text) {
    read_result from_string = read(text);
    std::istringstream in(text);
    const read_result from_stream = read(in);
    if (from_string.index() != from_stream.index()) {
        ADD_FAILURE() << "string and stream readers disagree on:\n" << text;
    } else if (const auto* a = std::get_if<read_error>(&from_string)) {
        const auto& b = std::get<read_error>(from_stream);
        EXPECT_EQ(a->describe("x"), b.describe("x")) << "string and stream readers disagree";
    }
    return from_string;
}

// "LINE: message", or "no error" when `text` reads fine.
std::string error(const std::string& text) {
    const read_result r = read_both(text);
    if (const auto* e = std::get_if<read_error>(&r)) return std::to_string(e->line) + ": " + e->message;
    return "no error";
}

// The trace `text` holds; a failure if it is malformed.
trace parsed(const std::string& text) {
    read_result r = read_both(text);
    if (auto* e = std::get_if<read_error>(&r)) {
        ADD_FAILURE() << "unexpected read error " << e->describe("<text>") << " in:\n" << text;
        return {};
    }
    return std::get<trace>(std::move(r));
}

std::string written(const trace& t) {
    std::ostringstream out;
    write(out, t);
    return out.str();
}

std::vector<effect> effects_of(const step& s) {
    std::vector<effect> out;
    for (const recorded_effect& r : s.effects) out.push_back(r.effect);
    return out;
}

// ---- Round trip ----------------------------------------------------------------------

TEST(trace_read, contract_example_reads_into_its_config_steps_effects_errors_and_lines) {
    const trace t = parsed(contract_example);
    core::config expected_config;
    expected_config.max_slots = 2;
    expected_config.min_slots = 1;
    expected_config.acquire_timeout = 5'000'000;
    EXPECT_EQ(t.config, expected_config);  // optional keys stay unset unless given
    ASSERT_EQ(t.steps.size(), 8u);

    EXPECT_EQ(t.steps[0].event, event::start(0));
    EXPECT_EQ(t.steps[0].line, 3u);
    EXPECT_EQ(effects_of(t.steps[0]), std::vector<effect>{effect::spawn(0)});
    EXPECT_EQ(t.steps[0].effects[0].line, 4u);
    EXPECT_FALSE(t.steps[0].error);

    EXPECT_EQ(t.steps[2].event, event::acquire(20, 1, 7));
    EXPECT_EQ(effects_of(t.steps[2]), std::vector<effect>{effect::grant(1, 0, 1)});
    EXPECT_EQ(t.steps[3].event, event::acquire(30, 2, 8, 1000));
    EXPECT_EQ(t.steps[4].event, event::tick(1000));
    EXPECT_EQ(effects_of(t.steps[4]),
              std::vector<effect>{effect::reject(2, core::reject_reason::timeout)});
    EXPECT_EQ(t.steps[5].event, event::release(1200, 0, 1, core::release_outcome::dirty));
    EXPECT_EQ(effects_of(t.steps[5]),
              std::vector<effect>{effect::retire(0, core::retire_reason::dirty)});

    EXPECT_EQ(t.steps[6].event, event::release(1250, 0, 1, core::release_outcome::clean));
    EXPECT_TRUE(t.steps[6].effects.empty());
    EXPECT_EQ(t.steps[6].line, 14u);
    EXPECT_EQ(t.steps[6].error, event_error::stale_lease);
    EXPECT_EQ(t.steps[6].error_line, 15u);

    EXPECT_EQ(t.steps[7].event, event::acquire(1300, 3, 7, 1300));
    EXPECT_EQ(t.steps[7].line, 16u);
    EXPECT_EQ(t.steps[7].effects[0].line, 17u);
}

TEST(trace_read, writing_what_was_read_gives_the_canonical_trace) {
    EXPECT_EQ(written(parsed(contract_example)), canonical_example);
}

TEST(trace_read, canonical_trace_is_a_fixed_point) {
    EXPECT_EQ(written(parsed(canonical_example)), canonical_example);
}

TEST(trace_read, bare_config_means_all_defaults) {
    const trace t = parsed("fairpool-trace v1\nconfig\n");
    EXPECT_EQ(t.config, core::config{});
    EXPECT_TRUE(t.steps.empty());
}

TEST(trace_read, every_event_effect_reason_and_error_code_round_trips) {
    constexpr std::uint64_t max = UINT64_MAX;
    trace t;
    t.config.max_slots = 65535;
    t.config.min_slots = 3;
    t.config.max_waiters = 1'000'000;
    t.config.max_waiters_per_handle = 7;
    t.config.policy = core::fairness_policy::fifo;
    t.config.idle_order = core::idle_order::fifo;
    t.config.acquire_timeout = max;
    t.config.idle_timeout = 1;
    t.config.max_lifetime = 2;
    t.config.max_uses = 3;
    t.config.spawn_backoff_initial = 4;
    t.config.spawn_backoff_max = max;
    t.config.max_concurrent_spawns = 9;
    t.config.leak_threshold = 5;
    t.config.check_after_idle = 6;
    t.config.keepalive_interval = max;
    t.config.max_concurrent_checks = max;
    t.config.reset_on_release = true;
    t.config.max_lifetime_jitter = 2;
    t.config.jitter_seed = max;

    const std::vector<event> events = {
        event::start(0),
        event::acquire(1, max, max),
        event::acquire(2, 0, 0, 0),
        event::acquire(3, 1, 2, {}, 0),
        event::acquire(4, 1, 2, max, max),
        event::cancel(5, max),
        event::deregister(6, max),
        event::release(7, 65535, max, core::release_outcome::clean),
        event::release(8, 0, 0, core::release_outcome::dirty),
        event::spawned(9, 65535),
        event::spawn_failed(10, 1),
        event::retired(11, 2),
        event::died(12, 3),
        event::checked(13, 4, core::check_outcome::alive),
        event::checked(13, 65535, core::check_outcome::dead),
        event::reset_done(14, 0, core::reset_outcome::ok),
        event::reset_done(14, 5, core::reset_outcome::failed),
        event::tick(max),
        event::shutdown(max),
    };
    std::vector<effect> effects = {effect::grant(max, 65535, max), effect::spawn(0),
                                   effect::leak_suspected(65535, max), effect::check(65535),
                                   effect::reset(0),                   effect::closed()};
    for (int r = 0; r < core::reject_reason_count; ++r)
        effects.push_back(effect::reject(r, static_cast<core::reject_reason>(r)));
    for (int r = 0; r < core::retire_reason_count; ++r)
        effects.push_back(effect::retire(static_cast<std::uint32_t>(r), static_cast<core::retire_reason>(r)));

    // Spread the effects and the error codes (all but `ok`) over the events.
    for (std::size_t i = 0; i < events.size(); ++i) {
        step s;
        s.event = events[i];
        if (i < effects.size()) s.effects.push_back({effects[i], 0});
        if (i + 1 < static_cast<std::size_t>(core::event_error_count))
            s.error = static_cast<event_error>(i + 1);
        t.steps.push_back(s);
    }
    for (std::size_t i = events.size(); i < effects.size(); ++i) t.steps.back().effects.push_back({effects[i], 0});

    const std::string text = written(t);
    const trace back = parsed(text);
    EXPECT_EQ(back.config.resolved(), t.config.resolved());
    ASSERT_EQ(back.steps.size(), t.steps.size());
    std::size_t line = 3;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        SCOPED_TRACE(format_line(t.steps[i].event));
        EXPECT_EQ(back.steps[i].event, t.steps[i].event);
        EXPECT_EQ(back.steps[i].line, line++);
        EXPECT_EQ(effects_of(back.steps[i]), effects_of(t.steps[i]));
        for (const recorded_effect& r : back.steps[i].effects) EXPECT_EQ(r.line, line++);
        EXPECT_EQ(back.steps[i].error, t.steps[i].error);
        EXPECT_EQ(back.steps[i].error_line, t.steps[i].error ? line++ : 0u);
    }
    EXPECT_EQ(written(back), text);
}

// ---- Leniency --------------------------------------------------------------------------

TEST(trace_read, fields_in_any_order_read_as_in_table_order) {
    const std::string shuffled = R"(fairpool-trace v1
config acquire_timeout=5000000 min_slots=1 max_slots=2
@0 start
= spawn slot=0
@10 spawned slot=0
@20 acquire handle=7 waiter=1
= grant lease=1 slot=0 waiter=1
@30 acquire deadline=1000 handle=8 waiter=2
= spawn slot=1
@1000 tick
= reject reason=timeout waiter=2
@1200 release outcome=dirty lease=1 slot=0
= retire reason=dirty slot=0
@1250 release lease=1 outcome=clean slot=0
! stale_lease
@1300 acquire deadline=1300 waiter=3 handle=7
= reject reason=timeout waiter=3
)";
    EXPECT_EQ(written(parsed(shuffled)), canonical_example);
    EXPECT_EQ(parsed(head + "@5 acquire weight=3 deadline=9 handle=2 waiter=1\n").steps.at(0).event,
              event::acquire(5, 1, 2, 9, 3));
    EXPECT_EQ(effects_of(parsed(head + "@5 tick\n= leak_suspected lease=4 slot=1\n").steps.at(0)),
              std::vector<effect>{effect::leak_suspected(1, 4)});
}

TEST(trace_read, comments_blank_lines_tabs_and_carriage_returns_are_ignored) {
    const std::string messy =
        "# a recorded run\r\n"
        "\r\n"
        "   \t  \n"
        "  fairpool-trace \t v1   # the header\n"
        "# the config comes next\n"
        "\tconfig\tmax_slots=2  min_slots=1\t\tacquire_timeout=5000000\t\r\n"
        "@0 start#no space before the comment\n"
        "=\tspawn\tslot=0\r\n"
        "\n"
        "@10 spawned slot=0 # slot 0 is up\n"
        "@20 acquire waiter=1 handle=7\r\n"
        "  = grant waiter=1 slot=0 lease=1\n"
        "@30 acquire waiter=2 handle=8 deadline=1000#1 us\n"
        "= spawn slot=1\n"
        "# a comment between an event and its effects\n"
        "@1000 tick\n"
        "= reject waiter=2 reason=timeout\n"
        "@1200\trelease slot=0 lease=1 outcome=dirty\n"
        "= retire slot=0 reason=dirty\n"
        "@1250 release slot=0 lease=1 outcome=clean\n"
        "!   stale_lease  # the lease was already returned\n"
        "@1300 acquire waiter=3 handle=7 deadline=1300\n"
        "= reject waiter=3 reason=timeout\r\n"
        "# the end\n"
        "\n";
    EXPECT_EQ(written(parsed(messy)), canonical_example);
}

TEST(trace_read, lines_are_counted_with_comments_and_blank_lines) {
    const trace t = parsed("# c\n\nfairpool-trace v1\n\n# c\nconfig\n\n@1 start\n# c\n\n= spawn slot=0\n\n! bad_slot\n");
    ASSERT_EQ(t.steps.size(), 1u);
    EXPECT_EQ(t.steps[0].line, 8u);
    EXPECT_EQ(t.steps[0].effects.at(0).line, 11u);
    EXPECT_EQ(t.steps[0].error_line, 13u);
}

TEST(trace_read, last_line_needs_no_newline) {
    const trace t = parsed(head + "@1 start\n= closed");
    ASSERT_EQ(t.steps.size(), 1u);
    EXPECT_EQ(effects_of(t.steps[0]), std::vector<effect>{effect::closed()});
}

TEST(trace_read, leading_zeros_are_accepted) {
    const trace t = parsed("fairpool-trace v1\nconfig max_slots=0002\n@000 acquire waiter=007 handle=00 weight=01\n"
                           "= grant waiter=7 slot=00000 lease=0001\n");
    EXPECT_EQ(t.config.max_slots, 2u);
    EXPECT_EQ(t.steps.at(0).event, event::acquire(0, 7, 0, {}, 1));
    EXPECT_EQ(effects_of(t.steps.at(0)), std::vector<effect>{effect::grant(7, 0, 1)});
    EXPECT_EQ(parsed(head + "@1 cancel waiter=00000000000000000000000018446744073709551615\n").steps.at(0).event,
              event::cancel(1, UINT64_MAX));
}

TEST(trace_read, largest_numbers_are_accepted) {
    const trace t = parsed(head + "@18446744073709551615 acquire waiter=18446744073709551615 "
                                  "handle=18446744073709551615 deadline=18446744073709551615 "
                                  "weight=18446744073709551615\n");
    EXPECT_EQ(t.steps.at(0).event, event::acquire(UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX));
}

TEST(trace_read, slot_below_65536_but_not_below_max_slots_is_left_to_the_core) {
    const trace t = parsed(head + "@1 died slot=65535\n= spawn slot=4\n@2 spawned slot=4\n! bad_slot\n");
    EXPECT_EQ(t.steps.at(0).event, event::died(1, 65535));
    EXPECT_EQ(effects_of(t.steps.at(0)), std::vector<effect>{effect::spawn(4)});
    EXPECT_EQ(t.steps.at(1).event, event::spawned(2, 4));
}

TEST(trace_read, any_weight_is_left_to_the_core) {
    EXPECT_EQ(parsed(head + "@1 acquire waiter=1 handle=1 weight=0\n").steps.at(0).event,
              event::acquire(1, 1, 1, {}, 0));
    EXPECT_EQ(parsed(head + "@1 acquire waiter=1 handle=1 weight=65536\n").steps.at(0).event,
              event::acquire(1, 1, 1, {}, 65536));
}

// The event holds a weight in 32 bits: a larger one saturates at 2^32-1, so that it stays
// out of range (bad_weight) instead of wrapping into it (2^32+1 would truncate to 1).
TEST(trace_read, a_weight_past_32_bits_saturates_and_stays_bad_weight) {
    for (const char* w : {"4294967297", "4294967296", "18446744073709551615"}) {
        SCOPED_TRACE(w);
        const trace t = parsed(head + "@0 start\n@1 acquire waiter=1 handle=1 weight=" + w + "\n");
        const event& e = t.steps.at(1).event;
        EXPECT_EQ(e.weight, std::optional<std::uint32_t>(UINT32_MAX));
        core::scheduler s{core::config{}};
        EXPECT_TRUE(s.step(t.steps.at(0).event).ok());
        EXPECT_EQ(s.step(e).error, event_error::bad_weight);
    }
    EXPECT_EQ(event::acquire(1, 1, 1, {}, (std::uint64_t{1} << 32) + 1).weight,
              std::optional<std::uint32_t>(UINT32_MAX));
    EXPECT_EQ(event::acquire(1, 1, 1, {}, UINT32_MAX - 1).weight, std::optional<std::uint32_t>(UINT32_MAX - 1));
}

// Max_leases and a resize's sizes share the event's words: each reads back as written,
// up to 2^64-1, and an acquire without max_leases reads back without it.
TEST(trace_read, max_leases_and_resize_sizes_read_back_in_full) {
    const trace t = parsed(head + "@1 acquire waiter=1 handle=2 max_leases=18446744073709551615\n"
                                  "@2 acquire waiter=3 handle=4 max_leases=0\n@3 acquire waiter=5 handle=6\n"
                                  "@4 resize max_slots=18446744073709551615 min_slots=18446744073709551614\n");
    EXPECT_EQ(t.steps.at(0).event.max_leases(), std::optional<std::uint64_t>(UINT64_MAX));
    EXPECT_EQ(t.steps.at(0).event, event::acquire(1, 1, 2, {}, {}, UINT64_MAX));
    EXPECT_EQ(t.steps.at(1).event.max_leases(), std::optional<std::uint64_t>(0));
    EXPECT_EQ(t.steps.at(2).event.max_leases(), std::nullopt);
    EXPECT_EQ(t.steps.at(3).event.max_slots(), UINT64_MAX);
    EXPECT_EQ(t.steps.at(3).event.min_slots(), UINT64_MAX - 1);
    EXPECT_EQ(t.steps.at(3).event, event::resize(4, UINT64_MAX, UINT64_MAX - 1));
    const std::string text = written(t);
    EXPECT_EQ(text.substr(text.find('@')), "@1 acquire waiter=1 handle=2 max_leases=18446744073709551615\n"
                                           "@2 acquire waiter=3 handle=4 max_leases=0\n@3 acquire waiter=5 handle=6\n"
                                           "@4 resize max_slots=18446744073709551615 min_slots=18446744073709551614\n");
}

TEST(trace_read, events_without_effects_are_valid_input) {
    const trace t = parsed(head + "@0 start\n@1 acquire waiter=1 handle=1\n@2 shutdown\n");
    ASSERT_EQ(t.steps.size(), 3u);
    for (const step& s : t.steps) {
        EXPECT_TRUE(s.effects.empty());
        EXPECT_FALSE(s.error);
    }
}

TEST(trace_read, stream_with_exceptions_enabled_neither_throws_nor_changes_the_result) {
    std::istringstream good(canonical_example);
    good.exceptions(std::ios::failbit | std::ios::badbit | std::ios::eofbit);
    read_result r;
    EXPECT_NO_THROW(r = read(good));
    ASSERT_TRUE(std::holds_alternative<trace>(r));
    EXPECT_EQ(written(std::get<trace>(r)), canonical_example);

    std::istringstream bad(head + "@x start\n");
    bad.exceptions(std::ios::failbit | std::ios::badbit);
    EXPECT_NO_THROW(r = read(bad));
    ASSERT_TRUE(std::holds_alternative<read_error>(r));
    EXPECT_EQ(std::get<read_error>(r).line, 3u);
}

// ---- Header and config -------------------------------------------------------------

TEST(trace_read, missing_header_is_reported_on_the_line_after_the_last) {
    EXPECT_EQ(error(""), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found end of file");
    EXPECT_EQ(error("\n"), "2: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found end of file");
    EXPECT_EQ(error("# nothing but a comment\n\n"), "3: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found end of file");
    EXPECT_EQ(error("# no newline at the end"), "2: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found end of file");
}

TEST(trace_read, wrong_header_is_refused) {
    EXPECT_EQ(error("config\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'config'");
    EXPECT_EQ(error("# c\nfairpool-trace v3\nconfig\n"),
              "2: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'fairpool-trace v3'");
    EXPECT_EQ(error("fairpool-trace\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'fairpool-trace'");
    EXPECT_EQ(error("fairpool-trace v1 v1\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'fairpool-trace v1 v1'");
    EXPECT_EQ(error("Fairpool-Trace V1\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'Fairpool-Trace V1'");
    EXPECT_EQ(error("fairpool-trace-v1\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found 'fairpool-trace-v1'");
    EXPECT_EQ(error("@0 start\n"), "1: expected header 'fairpool-trace v1' or 'fairpool-trace v2', found '@0 start'");
}

TEST(trace_read, missing_config_is_refused) {
    EXPECT_EQ(error("fairpool-trace v1\n"), "2: expected 'config' record, found end of file");
    EXPECT_EQ(error("fairpool-trace v1"), "2: expected 'config' record, found end of file");
    EXPECT_EQ(error("fairpool-trace v1\n# c\n\n"), "4: expected 'config' record, found end of file");
    EXPECT_EQ(error("fairpool-trace v1\n@0 start\n"), "2: expected 'config' record, found '@0 start'");
    EXPECT_EQ(error("fairpool-trace v1\nconfigure max_slots=1\n"),
              "2: expected 'config' record, found 'configure max_slots=1'");
    EXPECT_EQ(error("fairpool-trace v1\nfairpool-trace v1\n"),
              "2: expected 'config' record, found 'fairpool-trace v1'");
}

TEST(trace_read, bad_config_keys_and_values_are_refused_on_the_config_line) {
    const std::string h = "fairpool-trace v1\n# comment\n";
    EXPECT_EQ(error(h + "config max_slot=2\n"), "3: unknown config key 'max_slot'");
    EXPECT_EQ(error(h + "config MAX_SLOTS=2\n"), "3: unknown config key 'MAX_SLOTS'");
    EXPECT_EQ(error(h + "config max_slots=2 min_slots=0 max_slots=2\n"), "3: repeated key 'max_slots'");
    EXPECT_EQ(error(h + "config max_slots=two\n"), "3: bad number 'two' for 'max_slots'");
    EXPECT_EQ(error(h + "config max_slots=\n"), "3: bad number '' for 'max_slots'");
    EXPECT_EQ(error(h + "config leak_threshold=-1\n"), "3: bad number '-1' for 'leak_threshold'");
    EXPECT_EQ(error(h + "config idle_timeout=18446744073709551616\n"),
              "3: number '18446744073709551616' too large for 'idle_timeout' (max 18446744073709551615)");
    EXPECT_EQ(error(h + "config policy=random\n"),
              "3: bad value 'random' for 'policy', expected round_robin or fifo");
    EXPECT_EQ(error(h + "config idle_order=newest\n"), "3: bad value 'newest' for 'idle_order', expected lifo or fifo");
    EXPECT_EQ(error(h + "config reset_on_release=1\n"),
              "3: bad value '1' for 'reset_on_release', expected false or true");
    EXPECT_EQ(error(h + "config reset_on_release=True\n"),
              "3: bad value 'True' for 'reset_on_release', expected false or true");
    EXPECT_EQ(error(h + "config max_slots\n"), "3: expected key=value, found 'max_slots'");
    EXPECT_EQ(error(h + "config =2\n"), "3: expected key=value, found '=2'");
    EXPECT_EQ(error(h + "config max_slots = 2\n"), "3: expected key=value, found 'max_slots'");
}

TEST(trace_read, every_config_key_of_the_contract_is_accepted) {
    const trace t = parsed(
        "fairpool-trace v1\nconfig jitter_seed=19 max_lifetime_jitter=9 reset_on_release=true max_concurrent_checks=17 "
        "keepalive_interval=16 check_after_idle=15 leak_threshold=14 max_concurrent_spawns=13 spawn_backoff_max=12 "
        "spawn_backoff_initial=11 max_uses=10 max_lifetime=9 idle_timeout=8 acquire_timeout=7 idle_order=fifo "
        "policy=fifo max_waiters_per_handle=4 max_waiters=30 min_slots=2 max_slots=16\n");
    core::config c;
    c.max_slots = 16;
    c.min_slots = 2;
    c.max_waiters = 30;
    c.max_waiters_per_handle = 4;
    c.policy = core::fairness_policy::fifo;
    c.idle_order = core::idle_order::fifo;
    c.acquire_timeout = 7;
    c.idle_timeout = 8;
    c.max_lifetime = 9;
    c.max_uses = 10;
    c.spawn_backoff_initial = 11;
    c.spawn_backoff_max = 12;
    c.max_concurrent_spawns = 13;
    c.leak_threshold = 14;
    c.check_after_idle = 15;
    c.keepalive_interval = 16;
    c.max_concurrent_checks = 17;
    c.reset_on_release = true;
    c.max_lifetime_jitter = 9;
    c.jitter_seed = 19;
    EXPECT_EQ(t.config, c);
}

TEST(trace_read, invalid_config_is_refused_on_the_config_line_with_the_validators_message) {
    EXPECT_EQ(error("fairpool-trace v1\nconfig max_slots=0\n@0 start\n"),
              "2: invalid config: max_slots: 0 is out of range 1..65535");
    EXPECT_EQ(error("fairpool-trace v1\n\n# c\nconfig max_slots=65536\n"),
              "4: invalid config: max_slots: 65536 is out of range 1..65535");
    EXPECT_EQ(error("fairpool-trace v1\nconfig min_slots=5\n"),
              "2: invalid config: min_slots: 5 is out of range 0..max_slots (4)");
    EXPECT_EQ(error("fairpool-trace v1\nconfig max_waiters=10 max_waiters_per_handle=11\n"),
              "2: invalid config: max_waiters_per_handle: 11 is out of range 1..max_waiters (10)");
    EXPECT_EQ(error("fairpool-trace v1\nconfig spawn_backoff_initial=0\n"),
              "2: invalid config: spawn_backoff_initial: 0 is out of range 1..2^64-1");
    EXPECT_EQ(error("fairpool-trace v1\nconfig max_concurrent_spawns=0\n"),
              "2: invalid config: max_concurrent_spawns: 0 is out of range 1..2^64-1");
    EXPECT_EQ(error("fairpool-trace v1\nconfig max_concurrent_checks=0\n"),
              "2: invalid config: max_concurrent_checks: 0 is out of range 1..2^64-1");
    EXPECT_EQ(error("fairpool-trace v1\nconfig max_lifetime=5 max_lifetime_jitter=6\n"),
              "2: invalid config: max_lifetime_jitter: 6 is out of range 0..max_lifetime (5)");
}

TEST(trace_read, second_header_or_config_is_refused) {
    EXPECT_EQ(error(head + "@0 start\nconfig max_slots=2\n"), "4: repeated config record (first on line 2)");
    EXPECT_EQ(error("# c\n" + head + "fairpool-trace v1\n"), "4: repeated header (first on line 2)");
}

// ---- Events ----------------------------------------------------------------------------

TEST(trace_read, unknown_event_is_refused) {
    EXPECT_EQ(error(head + "@0 start\n@1 aquire waiter=1 handle=1\n"), "4: unknown event 'aquire'");
    EXPECT_EQ(error(head + "@0 START\n"), "3: unknown event 'START'");
    EXPECT_EQ(error(head + "@0 ok\n"), "3: unknown event 'ok'");
    EXPECT_EQ(error(head + "@0\n"), "3: missing event after '@0'");
}

TEST(trace_read, bad_time_is_refused) {
    EXPECT_EQ(error(head + "@x start\n"), "3: bad time 'x' after '@'");
    EXPECT_EQ(error(head + "@ 0 start\n"), "3: bad time '' after '@'");
    EXPECT_EQ(error(head + "@-1 start\n"), "3: bad time '-1' after '@'");
    EXPECT_EQ(error(head + "@+1 start\n"), "3: bad time '+1' after '@'");
    EXPECT_EQ(error(head + "@1.5 start\n"), "3: bad time '1.5' after '@'");
    EXPECT_EQ(error(head + "@0x10 start\n"), "3: bad time '0x10' after '@'");
    EXPECT_EQ(error(head + "@@1 start\n"), "3: bad time '@1' after '@'");
    EXPECT_EQ(error(head + "@18446744073709551616 start\n"),
              "3: time '18446744073709551616' too large (max 18446744073709551615)");
    EXPECT_EQ(error(head + "@99999999999999999999999 start\n"),
              "3: time '99999999999999999999999' too large (max 18446744073709551615)");
    EXPECT_EQ(error(head + "@99999999999999999999x start\n"), "3: bad time '99999999999999999999x' after '@'");
}

TEST(trace_read, unknown_key_for_the_event_is_refused) {
    EXPECT_EQ(error(head + "@0 release slott=0 lease=1 outcome=clean\n"), "3: unknown key 'slott' for event release");
    EXPECT_EQ(error(head + "@0 tick waiter=1\n"), "3: unknown key 'waiter' for event tick");
    EXPECT_EQ(error(head + "@0 cancel waiter=1 handle=1\n"), "3: unknown key 'handle' for event cancel");
    EXPECT_EQ(error(head + "@0 deregister handle=1 weight=1\n"), "3: unknown key 'weight' for event deregister");
    EXPECT_EQ(error(head + "@0 spawned slot=1 lease=1\n"), "3: unknown key 'lease' for event spawned");
    EXPECT_EQ(error(head + "@0 acquire waiter=1 handle=1 reason=timeout\n"),
              "3: unknown key 'reason' for event acquire");
    EXPECT_EQ(error(head + "@0 start now=0\n"), "3: unknown key 'now' for event start");
}

TEST(trace_read, missing_field_for_the_event_is_refused) {
    EXPECT_EQ(error(head + "@0 release slot=0 outcome=clean\n"), "3: missing field 'lease' for event release");
    EXPECT_EQ(error(head + "@0 release lease=1 slot=0\n"), "3: missing field 'outcome' for event release");
    EXPECT_EQ(error(head + "@0 release\n"), "3: missing field 'slot' for event release");
    EXPECT_EQ(error(head + "@0 acquire handle=1 deadline=5\n"), "3: missing field 'waiter' for event acquire");
    EXPECT_EQ(error(head + "@0 acquire waiter=1\n"), "3: missing field 'handle' for event acquire");
    EXPECT_EQ(error(head + "@0 cancel\n"), "3: missing field 'waiter' for event cancel");
    EXPECT_EQ(error(head + "@0 deregister\n"), "3: missing field 'handle' for event deregister");
    for (const char* kind : {"spawned", "spawn_failed", "retired", "died"})
        EXPECT_EQ(error(head + "@0 " + kind + "\n"), std::string("3: missing field 'slot' for event ") + kind);
    EXPECT_EQ(error(head + "@0 checked outcome=alive\n"), "3: missing field 'slot' for event checked");
    EXPECT_EQ(error(head + "@0 checked slot=0\n"), "3: missing field 'outcome' for event checked");
    EXPECT_EQ(error(head + "@0 reset_done outcome=ok\n"), "3: missing field 'slot' for event reset_done");
    EXPECT_EQ(error(head + "@0 reset_done slot=0\n"), "3: missing field 'outcome' for event reset_done");
}

TEST(trace_read, repeated_key_is_refused) {
    EXPECT_EQ(error(head + "@0 acquire waiter=1 handle=2 waiter=1\n"), "3: repeated key 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1 handle=2 deadline=1 deadline=2\n"), "3: repeated key 'deadline'");
    EXPECT_EQ(error(head + "@0 spawned slot=1 slot=1\n"), "3: repeated key 'slot'");
    EXPECT_EQ(error(head + "@0 tick\n= grant waiter=1 slot=0 lease=1 lease=1\n"), "4: repeated key 'lease'");
}

TEST(trace_read, numbers_must_be_plain_decimal_u64) {
    EXPECT_EQ(error(head + "@0 acquire waiter=x12 handle=1\n"), "3: bad number 'x12' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=-1 handle=1\n"), "3: bad number '-1' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=+1 handle=1\n"), "3: bad number '+1' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter= handle=1\n"), "3: bad number '' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1e3 handle=1\n"), "3: bad number '1e3' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=0x1 handle=1\n"), "3: bad number '0x1' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1_000 handle=1\n"), "3: bad number '1_000' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1=1 handle=1\n"), "3: bad number '1=1' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=\xd9\xa1 handle=1\n"), "3: bad number '\\xd9\\xa1' for 'waiter'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1 handle=1 weight=-1\n"), "3: bad number '-1' for 'weight'");
    EXPECT_EQ(error(head + "@0 acquire waiter=1 2 handle=1\n"), "3: expected key=value, found '2'");
    EXPECT_EQ(error(head + "@0 acquire waiter =1 handle=1\n"), "3: expected key=value, found 'waiter'");
}

TEST(trace_read, numbers_above_u64_are_refused) {
    EXPECT_EQ(error(head + "@0 acquire waiter=18446744073709551616 handle=1\n"),
              "3: number '18446744073709551616' too large for 'waiter' (max 18446744073709551615)");
    EXPECT_EQ(error(head + "@0 acquire waiter=1 handle=1 deadline=20000000000000000000\n"),
              "3: number '20000000000000000000' too large for 'deadline' (max 18446744073709551615)");
    EXPECT_EQ(error(head + "@0 release slot=0 lease=99999999999999999999999999999999999999999999 outcome=clean\n"),
              "3: number '9999999999999999999999999999999999999999...' too large for 'lease' "
              "(max 18446744073709551615)");
}

TEST(trace_read, slots_from_65536_are_refused) {
    EXPECT_EQ(error(head + "@0 spawned slot=65536\n"), "3: slot 65536 out of range 0..65535");
    EXPECT_EQ(error(head + "@0 release slot=4294967296 lease=1 outcome=clean\n"),
              "3: slot 4294967296 out of range 0..65535");  // not truncated to 32 bits
    EXPECT_EQ(error(head + "@0 died slot=000065536\n"), "3: slot 65536 out of range 0..65535");
    EXPECT_EQ(error(head + "@0 tick\n= spawn slot=65536\n"), "4: slot 65536 out of range 0..65535");
    EXPECT_EQ(error(head + "@0 retired slot=18446744073709551616\n"),
              "3: number '18446744073709551616' too large for 'slot' (max 18446744073709551615)");
}

TEST(trace_read, bad_outcome_is_refused) {
    EXPECT_EQ(error(head + "@0 release slot=0 lease=1 outcome=broken\n"),
              "3: bad value 'broken' for 'outcome', expected clean or dirty");
    EXPECT_EQ(error(head + "@0 release slot=0 lease=1 outcome=\n"),
              "3: bad value '' for 'outcome', expected clean or dirty");
    // Each event spells its own outcomes.
    EXPECT_EQ(error(head + "@0 checked slot=0 outcome=clean\n"),
              "3: bad value 'clean' for 'outcome', expected alive or dead");
    EXPECT_EQ(error(head + "@0 reset_done slot=0 outcome=alive\n"),
              "3: bad value 'alive' for 'outcome', expected ok or failed");
    EXPECT_EQ(error(head + "@0 release slot=0 lease=1 outcome=ok\n"),
              "3: bad value 'ok' for 'outcome', expected clean or dirty");
}

TEST(trace_read, first_problem_on_a_line_is_reported) {
    // Left to right; missing fields only after every field present was read.
    EXPECT_EQ(error(head + "@0 release outcome=bad slott=0\n"),
              "3: bad value 'bad' for 'outcome', expected clean or dirty");
    EXPECT_EQ(error(head + "@0 release slott=0 outcome=bad\n"), "3: unknown key 'slott' for event release");
    EXPECT_EQ(error(head + "@0 release slot=x\n"), "3: bad number 'x' for 'slot'");
    // And the first bad line of the file.
    EXPECT_EQ(error(head + "@0 tick\n@1 aquire\n@x tick\n"), "4: unknown event 'aquire'");
}

// ---- Effects ---------------------------------------------------------------------------

TEST(trace_read, effect_before_any_event_is_refused) {
    EXPECT_EQ(error(head + "= spawn slot=0\n@0 start\n"), "3: effect before any event");
    EXPECT_EQ(error(head + "= nonsense\n"), "3: effect before any event");
}

TEST(trace_read, bad_effects_are_refused) {
    const std::string h = head + "@0 start\n";
    EXPECT_EQ(error(h + "= grnt waiter=1 slot=0 lease=1\n"), "4: unknown effect 'grnt'");
    EXPECT_EQ(error(h + "= start\n"), "4: unknown effect 'start'");
    EXPECT_EQ(error(h + "=\n"), "4: missing effect after '='");
    EXPECT_EQ(error(h + "= grant waiter=1 slot=0\n"), "4: missing field 'lease' for effect grant");
    EXPECT_EQ(error(h + "= grant slot=0 lease=1\n"), "4: missing field 'waiter' for effect grant");
    EXPECT_EQ(error(h + "= reject waiter=1\n"), "4: missing field 'reason' for effect reject");
    EXPECT_EQ(error(h + "= spawn\n"), "4: missing field 'slot' for effect spawn");
    EXPECT_EQ(error(h + "= retire slot=1\n"), "4: missing field 'reason' for effect retire");
    EXPECT_EQ(error(h + "= leak_suspected slot=1\n"), "4: missing field 'lease' for effect leak_suspected");
    EXPECT_EQ(error(h + "= closed slot=1\n"), "4: unknown key 'slot' for effect closed");
    EXPECT_EQ(error(h + "= spawn slot=1 reason=idle\n"), "4: unknown key 'reason' for effect spawn");
    EXPECT_EQ(error(h + "= grant waiter=1 slot=0 lease=1 outcome=clean\n"), "4: unknown key 'outcome' for effect grant");
    EXPECT_EQ(error(h + "= reject waiter=1 reason=late\n"),
              "4: bad value 'late' for 'reason', expected saturated, timeout, cancelled, deregistered or closed");
    EXPECT_EQ(error(h + "= reject waiter=1 reason=idle\n"),
              "4: bad value 'idle' for 'reason', expected saturated, timeout, cancelled, deregistered or closed");
    EXPECT_EQ(error(h + "= retire slot=0 reason=timeout\n"),
              "4: bad value 'timeout' for 'reason', expected dirty, max_uses, max_lifetime, idle, died, shutdown, "
              "reset_failed or resize");
    EXPECT_EQ(error(h + "= check\n"), "4: missing field 'slot' for effect check");
    EXPECT_EQ(error(h + "= reset slot=0 reason=dirty\n"), "4: unknown key 'reason' for effect reset");
    EXPECT_EQ(error(h + "= spawn slot=-0\n"), "4: bad number '-0' for 'slot'");
    EXPECT_EQ(error(h + "= closed extra\n"), "4: expected key=value, found 'extra'");
}

TEST(trace_read, effect_after_the_error_of_its_event_is_refused) {
    EXPECT_EQ(error(head + "@0 tick\n! not_started\n= closed\n"), "5: effect after the error of the event on line 3");
    EXPECT_EQ(error(head + "@0 tick\n= closed\n! not_started\n\n= closed\n"),
              "7: effect after the error of the event on line 3");
    // The next event starts afresh.
    EXPECT_EQ(error(head + "@0 tick\n! not_started\n@1 start\n= closed\n! bad_slot\n"), "no error");
}

// ---- Errors ------------------------------------------------------------------------------

TEST(trace_read, error_before_any_event_is_refused) {
    EXPECT_EQ(error(head + "! not_started\n"), "3: error before any event");
}

TEST(trace_read, second_error_for_one_event_is_refused) {
    EXPECT_EQ(error(head + "@0 tick\n! not_started\n! not_started\n"),
              "5: second error for the event on line 3 (first on line 4)");
    EXPECT_EQ(error(head + "@0 tick\n! not_started\n# c\n! bad_slot\n"),
              "6: second error for the event on line 3 (first on line 4)");
}

TEST(trace_read, bad_error_codes_are_refused) {
    const std::string h = head + "@0 tick\n";
    EXPECT_EQ(error(h + "! ok\n"), "4: error code 'ok' is not allowed (an event without error has no '!' record)");
    EXPECT_EQ(error(h + "! oops\n"), "4: unknown error code 'oops'");
    EXPECT_EQ(error(h + "! timeout\n"), "4: unknown error code 'timeout'");
    EXPECT_EQ(error(h + "!\n"), "4: missing error code after '!'");
    EXPECT_EQ(error(h + "! stale_lease extra\n"), "4: unexpected field 'extra' after error code");
    EXPECT_EQ(error(h + "! code=stale_lease\n"), "4: unknown error code 'code=stale_lease'");
}

TEST(trace_read, every_error_code_but_ok_is_accepted) {
    for (int i = 1; i < core::event_error_count; ++i) {
        const auto code = static_cast<event_error>(i);
        const trace t = parsed(head + "@0 tick\n! " + core::to_string(code) + "\n");
        EXPECT_EQ(t.steps.at(0).error, code);
    }
}

// ---- Other records -------------------------------------------------------------------------

TEST(trace_read, unknown_record_is_refused) {
    const std::string expected = ", expected '@NOW EVENT', '= EFFECT' or '! CODE'";
    EXPECT_EQ(error(head + "grant waiter=1 slot=0 lease=1\n"), "3: unknown record 'grant'" + expected);
    EXPECT_EQ(error(head + "@0 tick\n=closed\n"), "4: unknown record '=closed'" + expected);
    EXPECT_EQ(error(head + "@0 tick\n!bad_slot\n"), "4: unknown record '!bad_slot'" + expected);
    EXPECT_EQ(error(head + "0 start\n"), "3: unknown record '0'" + expected);
    EXPECT_EQ(error(head + "\x01\x02\xff\x7f\n"), "3: unknown record '\\x01\\x02\\xff\\x7f'" + expected);
    EXPECT_EQ(error(head + "\v@0 start\n"), "3: unknown record '\\x0b@0'" + expected);
    EXPECT_EQ(error(head + std::string("@0 start\x00", 9) + "\n"), "3: unknown event 'start\\x00'");
    EXPECT_EQ(error(head + "@0 start\r\r\n"), "3: unknown event 'start\\x0d'");  // only one CR is dropped
    EXPECT_EQ(error(head + std::string(100, 'z') + "\n"),
              "3: unknown record '" + std::string(40, 'z') + "...'" + expected);
}

// ---- Robustness ----------------------------------------------------------------------------

// Mutated traces (bytes flipped, inserted, deleted, lines duplicated or dropped) never
// crash the reader, and every error names a line of the input or the one after it.
TEST(trace_read, mutated_traces_never_crash_and_errors_name_a_line) {
    std::mt19937_64 rng(20240601);
    const std::string alphabet = "@=!# \t\r\n=0123456789-+xslotwaiter";
    for (int round = 0; round < 20000; ++round) {
        std::string text = canonical_example;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits && !text.empty(); ++k) {
            const std::size_t at = rng() % text.size();
            switch (rng() % 4) {
                case 0: text[at] = static_cast<char>(rng() & 0xff); break;
                case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
                case 2: text.erase(at, 1 + rng() % 8); break;
                default: text.insert(at, text.substr(at, rng() % 40)); break;
            }
        }
        const read_result r = read_both(text);
        if (const auto* e = std::get_if<read_error>(&r)) {
            const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) +
                               (text.empty() || text.back() == '\n' ? 0 : 1);
            ASSERT_GE(e->line, 1u) << text;
            ASSERT_LE(e->line, lines + 1) << text;
            ASSERT_FALSE(e->message.empty()) << text;
            for (char c : e->message) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << e->message;
        } else {
            // Whatever reads fine writes a trace that reads back to the same text.
            const std::string once = written(std::get<trace>(r));
            ASSERT_EQ(written(parsed(once)), once) << text;
        }
    }
}

// ---- The malformed corpus ------------------------------------------------------------------

// tests/traces/malformed: $FAIRPOOL_TRACES_DIR/malformed (or $FAIRPOOL_TRACES_DIR itself
// if it has no `malformed` subdirectory), else the directory next to this source file.
// __FILE__ may be relative to the build directory, so a relative path is also tried
// from every ancestor of the test executable's directory.
std::filesystem::path malformed_dir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (const char* env = std::getenv("FAIRPOOL_TRACES_DIR"); env != nullptr && *env != '\0') {
        const fs::path dir(env);
        return fs::is_directory(dir / "malformed", ec) ? dir / "malformed" : dir;
    }
    const fs::path relative = fs::path(__FILE__).parent_path() / "traces" / "malformed";
    if (relative.is_absolute() || fs::is_directory(relative, ec)) return relative;
    std::error_code exe_ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", exe_ec);
    for (fs::path dir = exe.parent_path(); !exe_ec && !dir.empty(); dir = dir.parent_path()) {
        if (fs::is_directory(dir / relative, ec)) return dir / relative;
        if (dir == dir.root_path()) break;
    }
    return relative;
}

struct expectation {
    std::size_t line = 0;
    std::string message;
};

// "# expect: LINE: message" on the first line of the file.
std::optional<expectation> expectation_of(const std::string& first_line) {
    static const std::string prefix = "# expect: ";
    std::string text = first_line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.rfind(prefix, 0) != 0) return std::nullopt;
    const std::size_t colon = text.find(": ", prefix.size());
    if (colon == std::string::npos || colon == prefix.size()) return std::nullopt;
    expectation e;
    for (std::size_t i = prefix.size(); i < colon; ++i) {
        if (text[i] < '0' || text[i] > '9') return std::nullopt;
        e.line = e.line * 10 + static_cast<std::size_t>(text[i] - '0');
    }
    e.message = text.substr(colon + 2);
    return e;
}

TEST(trace_read, every_malformed_corpus_file_is_refused_with_the_line_and_message_it_expects) {
    namespace fs = std::filesystem;
    const fs::path dir = malformed_dir();
    std::error_code ec;
    ASSERT_TRUE(fs::is_directory(dir, ec)) << dir << " is not a directory (set FAIRPOOL_TRACES_DIR)";
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().extension() == ".trace") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 20u) << "too few corpus files in " << dir;

    for (const fs::path& file : files) {
        SCOPED_TRACE(file.string());
        std::ifstream in(file, std::ios::binary);
        ASSERT_TRUE(in) << "cannot open";
        std::string first;
        std::getline(in, first);
        const std::optional<expectation> expected = expectation_of(first);
        ASSERT_TRUE(expected) << "first line is not '# expect: LINE: message': " << first;

        std::ifstream again(file, std::ios::binary);
        const read_result from_stream = read(again);
        const auto* e = std::get_if<read_error>(&from_stream);
        ASSERT_TRUE(e) << "read without error";
        EXPECT_EQ(std::to_string(e->line) + ": " + e->message,
                  std::to_string(expected->line) + ": " + expected->message);

        std::ifstream whole(file, std::ios::binary);
        const std::string text{std::istreambuf_iterator<char>(whole), std::istreambuf_iterator<char>()};
        EXPECT_EQ(error(text), std::to_string(expected->line) + ": " + expected->message);
    }
}

// ---- Trace format v2: segment, snapshot, gap (section 7.2) -------------------------

TEST(trace_format_v2, every_snapshot_record_is_printed_with_its_fields_in_contract_order) {
    core::snapshot_begin b;
    b.now = 5000, b.started = true, b.last_lease = 7, b.highest_waiter = 12, b.arrivals = 9, b.idle_seq = 6;
    EXPECT_EQ(format(core::snapshot_record(b)),
              "snapshot now=5000 started=true shutting_down=false closed=false last_lease=7 highest_waiter=12 "
              "arrivals=9 spawn_failures_in_a_row=0 backoff_end=0 idle_seq=6 jitter_state=0");
    core::snapshot_slot slot;
    slot.index = 1, slot.state = core::slot_state::checking, slot.idle_since = 4500, slot.idle_seq = 6;
    slot.uses = 2, slot.keepalive_check = true;
    EXPECT_EQ(format(core::snapshot_record(slot)),
              "slot index=1 state=checking expires_at=18446744073709551615 verified_at=0 idle_since=4500 idle_seq=6 "
              "granted_at=0 lease=0 uses=2 leak_unreported=false keepalive_check=true");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_idle{3})), "idle slot=3");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_handle{2, 3, 1})), "handle id=2 weight=3 turn=1");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_waiter{3, 1, 500, 10, 2})),
              "waiter id=3 handle=1 arrived_at=10 arrival=2 deadline=500");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_waiter{3, 1, core::never, 10, 2})),
              "waiter id=3 handle=1 arrived_at=10 arrival=2");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_counter{core::counter::rejections_deregistered, 4})),
              "counter name=rejections_deregistered value=4");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_bucket{64, 9})), "wait_bucket index=64 count=9");
    EXPECT_EQ(format(core::snapshot_record(core::snapshot_end{})), "snapshot_end");
}

TEST(trace_format_v2, every_counter_has_its_contract_name) {
    const char* const names[] = {
        "acquires", "grants_immediate", "grants_after_wait", "rejections_saturated", "rejections_timeout",
        "rejections_cancelled", "rejections_deregistered", "rejections_closed", "spawns", "spawn_failures",
        "retirements_dirty", "retirements_max_uses", "retirements_max_lifetime", "retirements_idle",
        "retirements_died", "retirements_shutdown", "retirements_reset_failed", "retirements_resize",
        "leaks_suspected", "checks_started", "checks_passed", "checks_failed", "resets_started", "resets_failed",
        "resizes"};
    ASSERT_EQ(std::size(names), static_cast<std::size_t>(core::counter_count));
    for (int i = 0; i < core::counter_count; ++i)
        EXPECT_STREQ(core::to_string(static_cast<core::counter>(i)), names[i]);
}

// A v2 trace of the state `events` leave a scheduler with this config in, then `after`.
trace v2_trace_of(const core::config& c, const std::vector<event>& events, const std::vector<event>& after) {
    core::scheduler s(c, 1);
    for (const event& e : events) (void)s.step(e);
    trace t;
    t.version = 2;
    t.config = c;
    t.segment = segment_info{4, events.size(), 0};
    auto put = [&t](const core::snapshot_record& r) { t.snapshot.push_back(snapshot_line{r, 0}); };
    s.snapshot(put);
    for (const event& e : after) {
        const core::step_result r = s.step(e);
        step st;
        st.event = e;
        for (const effect& f : r.effects) st.effects.push_back(recorded_effect{f, 0});
        if (!r.ok()) st.error = r.error;
        t.steps.push_back(st);
    }
    t.gap = gap_info{17, 0};
    return t;
}

// Writes, reads back, and checks every v2 record and its line; writing again gives the same text.
void expect_round_trip(const trace& t) {
    const std::string text = written(t);
    const trace back = parsed(text);
    EXPECT_EQ(back.version, 2);
    ASSERT_TRUE(back.segment);
    EXPECT_EQ(back.segment->number, t.segment->number);
    EXPECT_EQ(back.segment->events_before, t.segment->events_before);
    EXPECT_EQ(back.segment->line, 3u);
    ASSERT_EQ(back.snapshot.size(), t.snapshot.size());
    for (std::size_t i = 0; i < t.snapshot.size(); ++i) {
        EXPECT_TRUE(back.snapshot[i].record == t.snapshot[i].record) << format(t.snapshot[i].record);
        EXPECT_EQ(back.snapshot[i].line, 4 + i);
    }
    ASSERT_EQ(back.steps.size(), t.steps.size());
    ASSERT_TRUE(back.gap);
    EXPECT_EQ(back.gap->events, 17u);
    EXPECT_EQ(back.gap->line, static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
    EXPECT_EQ(written(back), text);
}

bool has_record(const trace& t, std::size_t variant_index) {
    return std::any_of(t.snapshot.begin(), t.snapshot.end(),
                       [&](const snapshot_line& s) { return s.record.index() == variant_index; });
}

TEST(trace_format_v2, a_snapshot_with_idle_and_leased_slots_counters_and_buckets_reads_back_as_written) {
    core::config c;
    c.max_slots = 2, c.min_slots = 2, c.max_lifetime = 1'000'000'000, c.leak_threshold = 1'000'000;
    const trace t = v2_trace_of(c,
                                {event::start(0), event::spawned(10, 0), event::spawned(11, 1),
                                 event::acquire(20, 1, 7)},
                                {event::release(30, 0, 1, core::release_outcome::clean), event::tick(40)});
    for (const std::size_t kind : {0u, 1u, 2u, 5u, 6u, 7u}) EXPECT_TRUE(has_record(t, kind)) << kind;
    expect_round_trip(t);
}

TEST(trace_format_v2, a_snapshot_with_waiters_deadlines_and_turns_reads_back_as_written) {
    core::config c;
    c.max_slots = 1, c.min_slots = 1;
    const trace t = v2_trace_of(c,
                                {event::start(0), event::spawned(10, 0), event::acquire(20, 1, 1),
                                 event::acquire(21, 2, 1, std::nullopt, 2), event::acquire(22, 3, 2, 1000),
                                 event::acquire(23, 4, 1), event::release(30, 0, 1, core::release_outcome::clean)},
                                {event::tick(1000), event::release(1100, 0, 9, core::release_outcome::clean)});
    EXPECT_TRUE(has_record(t, 3) && has_record(t, 4));
    const auto turn = std::find_if(t.snapshot.begin(), t.snapshot.end(), [](const snapshot_line& s) {
        const auto* h = std::get_if<core::snapshot_handle>(&s.record);
        return h && h->turn > 0;
    });
    EXPECT_NE(turn, t.snapshot.end()) << "a handle mid-turn";
    expect_round_trip(t);
}

TEST(trace_format_v2, a_v2_trace_without_snapshot_or_segment_reads_back_as_v2) {
    const std::string text = "fairpool-trace v2\n" + canonical_example.substr(canonical_example.find('\n') + 1);
    const trace t = parsed(text);
    EXPECT_EQ(t.version, 2);
    EXPECT_FALSE(t.segment);
    EXPECT_TRUE(t.snapshot.empty());
    EXPECT_FALSE(t.gap);
    EXPECT_EQ(written(t), text);
}

TEST(trace_format_v2, a_snapshot_the_core_refuses_is_a_read_error_at_the_record_it_names) {
    const std::string head = "fairpool-trace v2\nconfig max_slots=2\n";
    const std::string begin =
        "snapshot now=0 started=true shutting_down=false closed=false last_lease=0 highest_waiter=0 arrivals=0 "
        "spawn_failures_in_a_row=0 backoff_end=0 idle_seq=0 jitter_state=0\n";
    EXPECT_EQ(error(head + begin + "snapshot_end\n@0 start\n"), "no error");
    EXPECT_EQ(error(head + begin + "counter name=spawns value=1\ncounter name=spawns value=2\nsnapshot_end\n"),
              "5: snapshot: counter spawns: out of order or repeated");
}

}  // namespace
}  // namespace fairpool::trace
