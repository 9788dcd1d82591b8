// Configuration bounds (docs/CONTRACT.md section 2): every field's lowest and highest
// valid values are accepted; one step outside is refused with a message naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "fairpool/core/config.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/reference_model.hpp"
#include "fairpool/trace/format.hpp"

namespace fairpool::core {
namespace {

using ::testing::HasSubstr;

struct bound_case {
    const char* field;
    std::function<void(config&)> valid;
    std::function<void(config&)> invalid;
};

const std::vector<bound_case>& bound_cases() {
    static const std::vector<bound_case> cases = {
        {"max_slots", [](config& c) { c.max_slots = 1; }, [](config& c) { c.max_slots = 0; }},
        {"max_slots", [](config& c) { c.max_slots = 65535; }, [](config& c) { c.max_slots = 65536; }},
        {"min_slots", [](config& c) { c.min_slots = 4; }, [](config& c) { c.min_slots = 5; }},
        {"max_waiters", [](config& c) { c.max_waiters = 1; }, [](config& c) { c.max_waiters = 0; }},
        {"max_waiters", [](config& c) { c.max_waiters = 1'000'000; },
         [](config& c) { c.max_waiters = 1'000'001; }},
        {"max_waiters_per_handle", [](config& c) { c.max_waiters_per_handle = 1; },
         [](config& c) { c.max_waiters_per_handle = 0; }},
        {"max_waiters_per_handle", [](config& c) { c.max_waiters_per_handle = 1024; },
         [](config& c) { c.max_waiters_per_handle = 1025; }},
        {"policy", [](config& c) { c.policy = fairness_policy::fifo; },
         [](config& c) { c.policy = static_cast<fairness_policy>(2); }},
        {"idle_order", [](config& c) { c.idle_order = idle_order::fifo; },
         [](config& c) { c.idle_order = static_cast<idle_order>(2); }},
        {"spawn_backoff_initial", [](config& c) { c.spawn_backoff_initial = 1; },
         [](config& c) { c.spawn_backoff_initial = 0; }},
        {"spawn_backoff_max", [](config& c) { c.spawn_backoff_max = c.spawn_backoff_initial; },
         [](config& c) { c.spawn_backoff_max = c.spawn_backoff_initial - 1; }},
        {"max_concurrent_spawns", [](config& c) { c.max_concurrent_spawns = 1; },
         [](config& c) { c.max_concurrent_spawns = 0; }},
        {"max_concurrent_checks", [](config& c) { c.max_concurrent_checks = 1; },
         [](config& c) { c.max_concurrent_checks = 0; }},
        {"max_lifetime_jitter", [](config& c) { c.max_lifetime = 10, c.max_lifetime_jitter = 10; },
         [](config& c) { c.max_lifetime = 10, c.max_lifetime_jitter = 11; }},
        {"max_lifetime_jitter", [](config& c) { c.max_lifetime_jitter = 0; },
         [](config& c) { c.max_lifetime_jitter = 1; }},  // max_lifetime 0: no jitter either
    };
    return cases;
}

TEST(config, defaults_are_valid_and_resolve_dependent_fields) {
    EXPECT_EQ(validate(config{}), std::nullopt);
    const config c = config{}.resolved();
    EXPECT_EQ(c.max_waiters_per_handle, 1024u);
    EXPECT_EQ(c.max_concurrent_spawns, 4u);
    EXPECT_EQ(trace::format_canonical(config{}),
              "config max_slots=4 min_slots=0 max_waiters=1024 max_waiters_per_handle=1024 policy=round_robin "
              "idle_order=lifo acquire_timeout=0 idle_timeout=0 max_lifetime=0 max_uses=0 "
              "spawn_backoff_initial=100000000 spawn_backoff_max=30000000000 max_concurrent_spawns=4 "
              "leak_threshold=0 check_after_idle=0 keepalive_interval=0 max_concurrent_checks=1 "
              "reset_on_release=false max_lifetime_jitter=0 jitter_seed=0");
}

// max_concurrent_spawns follows slot_capacity (resizes may grow into it), which follows
// max_slots: a config without slot_capacity resolves as before caps and resizes.
TEST(config, max_concurrent_spawns_defaults_to_slot_capacity) {
    config c;
    c.max_slots = 2;
    EXPECT_EQ(c.resolved().max_concurrent_spawns, 2u);
    c.slot_capacity = 6;
    EXPECT_EQ(c.resolved().max_concurrent_spawns, 6u);
    c.max_concurrent_spawns = 3;
    EXPECT_EQ(c.resolved().max_concurrent_spawns, 3u);
}

TEST(config, slot_capacity_is_refused_below_max_slots_and_above_65535) {
    config c;
    c.max_slots = 5;
    c.slot_capacity = 4;
    EXPECT_EQ(validate(c), std::optional<std::string>("slot_capacity: 4 is out of range max_slots (5)..65535"));
    c.slot_capacity = 65536;
    EXPECT_EQ(validate(c), std::optional<std::string>("slot_capacity: 65536 is out of range max_slots (5)..65535"));
    c.slot_capacity = 5;
    EXPECT_EQ(validate(c), std::nullopt);
    c.slot_capacity = 65535;
    EXPECT_EQ(validate(c), std::nullopt);
}

// A slot_capacity of 0 is named as itself, not as max_concurrent_spawns, which the caller
// left unset and which takes slot_capacity's value.
TEST(config, a_zero_slot_capacity_is_named_as_itself) {
    config c;
    c.max_slots = 4;
    c.slot_capacity = 0;
    EXPECT_EQ(validate(c), std::optional<std::string>("slot_capacity: 0 is out of range max_slots (4)..65535"));
}

TEST(config, every_field_bound_is_checked_and_named) {
    for (const bound_case& bound : bound_cases()) {
        config good;
        bound.valid(good);
        EXPECT_EQ(validate(good), std::nullopt) << bound.field;
        config bad;
        bound.invalid(bad);
        const auto why = validate(bad);
        ASSERT_TRUE(why.has_value()) << bound.field;
        EXPECT_THAT(*why, ::testing::StartsWith(std::string(bound.field) + ":"));
    }
}

TEST(config, unbounded_durations_accept_any_value) {
    config c;
    c.acquire_timeout = c.idle_timeout = c.max_lifetime = c.max_uses = c.leak_threshold = never;
    c.spawn_backoff_max = never;
    c.check_after_idle = c.keepalive_interval = c.max_concurrent_checks = c.max_lifetime_jitter = c.jitter_seed = never;
    EXPECT_EQ(validate(c), std::nullopt);
}

template <class Machine>
void expect_construction_refused() {
    for (const bound_case& bound : bound_cases()) {
        config bad;
        bound.invalid(bad);
        try {
            Machine m(bad);
            ADD_FAILURE() << "accepted a bad " << bound.field;
        } catch (const config_error& e) {
            EXPECT_THAT(e.what(), HasSubstr(std::string("invalid config: ") + bound.field));
        }
    }
}

TEST(config, scheduler_construction_refuses_a_bad_config) { expect_construction_refused<scheduler>(); }

TEST(config, model_construction_refuses_a_bad_config) { expect_construction_refused<model::reference_model>(); }

}  // namespace
}  // namespace fairpool::core
