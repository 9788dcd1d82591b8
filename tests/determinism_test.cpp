// Same events in, same effects out, byte for byte: two fresh schedulers with different
// hash seeds (so different table layouts) and the reference model produce identical
// effect streams for the same random event sequence.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/reference_model.hpp"
#include "fairpool/trace/write.hpp"
#include "support/event_generator.hpp"
#include "support/seeded_choices.hpp"

namespace fairpool::testing {
namespace {

core::config busy_config() {
    core::config c;
    c.max_slots = 6;
    c.min_slots = 1;
    c.max_waiters = 40;
    c.acquire_timeout = 700;
    c.idle_timeout = 200;
    c.max_lifetime = 3000;
    c.max_uses = 7;
    c.spawn_backoff_initial = 20;
    c.spawn_backoff_max = 500;
    c.leak_threshold = 600;
    return c;
}

// busy_config with every health feature on (issue 13): checks on checkout and keepalive,
// resets, jittered lifetimes.
core::config health_config() {
    core::config c = busy_config();
    c.check_after_idle = 60;
    c.keepalive_interval = 250;
    c.max_concurrent_checks = 2;
    c.reset_on_release = true;
    c.max_lifetime_jitter = 1500;
    c.jitter_seed = 0x5eed;
    return c;
}

// Records the events the generator draws against one scheduler.
std::vector<core::event> record_events(const core::config& c, std::uint64_t seed, int steps) {
    core::scheduler s(c, 1);
    event_generator generator(c, static_cast<std::uint64_t>(steps));
    seeded_choices choices(seed);
    std::vector<core::event> events;
    for (int i = 0; i < steps; ++i) {
        events.push_back(generator.next(s, choices));
        generator.observe(events.back(), s.step(events.back()));
    }
    return events;
}

template <class Machine>
std::string replay(Machine machine, const std::vector<core::event>& events) {
    std::ostringstream text;
    for (const core::event& e : events) {
        const core::step_result r = machine.step(e);
        trace::write_step(text, e, r.effects, r.error);
    }
    return text.str();
}

TEST(determinism, same_events_give_byte_identical_effects) {
    const core::config c = busy_config();
    const auto events = record_events(c, 2024, 50'000);
    const std::string first = replay(core::scheduler(c, 0x1234), events);
    const std::string second = replay(core::scheduler(c, 0xfeedface), events);
    EXPECT_GT(first.size(), 1'000'000u);
    EXPECT_EQ(first, second);
    EXPECT_EQ(first, replay(model::reference_model(c), events));
}

TEST(determinism, same_events_give_byte_identical_effects_with_health_checks) {
    const core::config c = health_config();
    const auto events = record_events(c, 2025, 30'000);
    const std::string first = replay(core::scheduler(c, 0x1234), events);
    const std::string second = replay(core::scheduler(c, 0xfeedface), events);
    EXPECT_NE(first.find("= check slot="), std::string::npos);
    EXPECT_NE(first.find("= reset slot="), std::string::npos);
    EXPECT_EQ(first, second);
    EXPECT_EQ(first, replay(model::reference_model(c), events));
}

TEST(determinism, different_seeds_give_different_workloads) {
    const core::config c = busy_config();
    const std::string a = replay(core::scheduler(c), record_events(c, 1, 2000));
    const std::string b = replay(core::scheduler(c), record_events(c, 2, 2000));
    EXPECT_NE(a, b);
}

}  // namespace
}  // namespace fairpool::testing
