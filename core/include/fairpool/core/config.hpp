#pragma once
// Scheduler configuration (contract: docs/CONTRACT.md, section 2).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace fairpool::core {

enum class fairness_policy : std::uint8_t { round_robin, fifo };
enum class idle_order : std::uint8_t { lifo, fifo };

// All durations are nanoseconds; 0 disables the feature. Numeric fields are u64
// so that any value read from a trace reaches validation and gets a message.
struct config {
    std::uint64_t max_slots = 4;
    std::uint64_t min_slots = 0;
    std::uint64_t max_waiters = 1024;
    std::optional<std::uint64_t> max_waiters_per_handle;  // default: max_waiters
    fairness_policy policy = fairness_policy::round_robin;
    core::idle_order idle_order = core::idle_order::lifo;
    std::uint64_t acquire_timeout = 0;
    std::uint64_t idle_timeout = 0;
    std::uint64_t max_lifetime = 0;
    std::uint64_t max_uses = 0;
    std::uint64_t spawn_backoff_initial = 100'000'000;
    std::uint64_t spawn_backoff_max = 30'000'000'000;
    std::optional<std::uint64_t> max_concurrent_spawns;  // default: slot_capacity
    std::uint64_t leak_threshold = 0;
    // Health (section 2): checks before reuse, keepalive, reset on return, jitter.
    std::uint64_t check_after_idle = 0;
    std::uint64_t keepalive_interval = 0;
    std::uint64_t max_concurrent_checks = 1;  // keepalive checks in flight at once, >= 1
    bool reset_on_release = false;
    std::uint64_t max_lifetime_jitter = 0;    // <= max_lifetime
    std::uint64_t jitter_seed = 0;
    // Tenant isolation (section 2): a handle's leases out at once (0 = no cap), and the
    // most slots a `resize` may ask for (the tables are sized by it).
    std::uint64_t max_leases_per_handle = 0;
    std::optional<std::uint64_t> slot_capacity;  // default: max_slots

    // The values in force: defaults that depend on other fields filled in.
    [[nodiscard]] config resolved() const;

    friend bool operator==(const config&, const config&) = default;
};

inline constexpr std::uint64_t max_slots_limit = 65535;
inline constexpr std::uint64_t max_waiters_limit = 1'000'000;
inline constexpr std::uint64_t max_weight = 65535;

// Empty when valid; otherwise "FIELD: why" naming the first bad field.
[[nodiscard]] std::optional<std::string> validate(const config& input);

// Thrown by constructors given an invalid configuration.
class config_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Throws config_error unless valid; returns c.resolved().
[[nodiscard]] config checked(const config& c);

[[nodiscard]] const char* to_string(fairness_policy p) noexcept;
[[nodiscard]] const char* to_string(core::idle_order o) noexcept;

}  // namespace fairpool::core
