#pragma once
// Snapshots (docs/CONTRACT.md, section 7.2): a scheduler's complete state as a sequence
// of fixed-size records, written by scheduler::snapshot() and read back by the
// restoring constructor. A scheduler restored from the snapshot taken after event k
// produces, for every later event, exactly the effects the original produced.
//
// Record order (the restoring constructor refuses any other):
//   snapshot_begin                      the scalars
//   snapshot_sizes     ≤ 1                the sizes of the last `resize`, if they differ
//                                         from the config's
//   snapshot_slot      ×  non-empty slots, by slot index
//   snapshot_idle      ×  idle slots, in idle order (least recently verified first)
//   snapshot_handle    ×  handles in the rotation, in rotation order (the front has the
//                         turn); then every other handle with a lease cap that has
//                         waiters or leases, by id
//   snapshot_waiter    ×  queued waiters, in arrival order
//   snapshot_counter   ×  non-zero counters, in counter order
//   snapshot_bucket    ×  non-zero wait-histogram buckets, by index
//   snapshot_end
// Gauges (queued waiters, active handles, slots by state) are not written: they follow
// from the records.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::core {

struct snapshot_begin {
    nanos now = 0;
    std::uint64_t last_lease = 0;               // the last lease id assigned
    std::uint64_t highest_waiter = 0;           // of every valid acquire so far
    std::uint64_t arrivals = 0;                 // waiters admitted so far (ties deadlines)
    std::uint64_t spawn_failures_in_a_row = 0;  // the backoff's doubling
    nanos backoff_end = 0;                      // no spawn starts before it
    std::uint64_t idle_seq = 0;                 // slots that became idle after a use, so far
    std::uint64_t jitter_state = 0;             // the lifetime generator (decision 13)
    bool started = false;
    bool shutting_down = false;
    bool closed = false;
    friend bool operator==(const snapshot_begin&, const snapshot_begin&) = default;
};

// The pool's size since the last `resize` (absent: the config's max_slots and min_slots).
struct snapshot_sizes {
    std::uint64_t max_slots = 0;
    std::uint64_t min_slots = 0;
    friend bool operator==(const snapshot_sizes&, const snapshot_sizes&) = default;
};

struct snapshot_slot {
    nanos expires_at = never;  // its resource's end of life (max_lifetime > 0)
    nanos verified_at = 0;     // its last verification (section 1)
    nanos idle_since = 0;      // when it last became idle after a use (decision 5)
    std::uint64_t idle_seq = 0;  // ties idle_since
    nanos granted_at = 0;      // the grant of its current (or last) lease
    std::uint64_t lease = 0;   // its current (or last) lease id
    std::uint64_t uses = 0;    // grants since its `spawned`
    std::uint32_t index = 0;
    slot_state state = slot_state::spawning;
    bool leak_unreported = false;  // leased and not yet reported as leak_suspected
    bool keepalive_check = false;  // checking for keepalive, not on checkout
    std::uint64_t handle = 0;      // leased: the handle its lease was granted to
    friend bool operator==(const snapshot_slot&, const snapshot_slot&) = default;
};

struct snapshot_idle {
    std::uint32_t slot = 0;
    friend bool operator==(const snapshot_idle&, const snapshot_idle&) = default;
};

struct snapshot_handle {
    std::uint64_t id = 0;
    std::uint64_t weight = 1;
    std::uint64_t turn = 0;  // grants since it reached the front of the rotation
    std::uint64_t max_leases = 0;  // its lease cap; 0 = none (its leases: the slots naming it)
    friend bool operator==(const snapshot_handle&, const snapshot_handle&) = default;
};

struct snapshot_waiter {
    std::uint64_t id = 0;
    std::uint64_t handle = 0;
    nanos deadline = never;  // the effective deadline; never = none
    nanos arrived_at = 0;
    std::uint64_t arrival = 0;  // admission order
    friend bool operator==(const snapshot_waiter&, const snapshot_waiter&) = default;
};

// The counters of `stats` that are not gauges, in this order.
enum class counter : std::uint8_t {
    acquires,
    grants_immediate,
    grants_after_wait,
    rejections_saturated,
    rejections_timeout,
    rejections_cancelled,
    rejections_deregistered,
    rejections_closed,
    spawns,
    spawn_failures,
    retirements_dirty,
    retirements_max_uses,
    retirements_max_lifetime,
    retirements_idle,
    retirements_died,
    retirements_shutdown,
    retirements_reset_failed,
    retirements_resize,
    leaks_suspected,
    checks_started,
    checks_passed,
    checks_failed,
    resets_started,
    resets_failed,
    resizes,
};
inline constexpr int counter_count = 25;

[[nodiscard]] constexpr std::uint64_t& counter_of(stats& s, counter c) noexcept {
    constexpr int rejections = static_cast<int>(counter::rejections_saturated);
    constexpr int retirements = static_cast<int>(counter::retirements_dirty);
    const int i = static_cast<int>(c);
    switch (c) {
        case counter::acquires: return s.acquires;
        case counter::grants_immediate: return s.grants_immediate;
        case counter::grants_after_wait: return s.grants_after_wait;
        case counter::spawns: return s.spawns;
        case counter::spawn_failures: return s.spawn_failures;
        case counter::leaks_suspected: return s.leaks_suspected;
        case counter::checks_started: return s.checks_started;
        case counter::checks_passed: return s.checks_passed;
        case counter::checks_failed: return s.checks_failed;
        case counter::resets_started: return s.resets_started;
        case counter::resets_failed: return s.resets_failed;
        case counter::resizes: return s.resizes;
        default: break;
    }
    if (i < retirements) return s.rejections[static_cast<std::size_t>(i - rejections)];
    return s.retirements[static_cast<std::size_t>(i - retirements)];
}
[[nodiscard]] constexpr std::uint64_t counter_of(const stats& s, counter c) noexcept {
    return counter_of(const_cast<stats&>(s), c);  // NOLINT(cppcoreguidelines-pro-type-const-cast): one body for both
}
static_assert(reject_reason_count == 5 && retire_reason_count == 8 && counter_count == 25);

struct snapshot_counter {
    counter name = counter::acquires;
    std::uint64_t value = 0;
    friend bool operator==(const snapshot_counter&, const snapshot_counter&) = default;
};

struct snapshot_bucket {
    std::uint32_t index = 0;  // < wait_histogram_buckets
    std::uint64_t count = 0;
    friend bool operator==(const snapshot_bucket&, const snapshot_bucket&) = default;
};

struct snapshot_end {
    friend bool operator==(const snapshot_end&, const snapshot_end&) = default;
};

using snapshot_record = std::variant<snapshot_begin, snapshot_slot, snapshot_idle, snapshot_handle, snapshot_waiter,
                                     snapshot_counter, snapshot_bucket, snapshot_end, snapshot_sizes>;
// Fixed size, trivially copyable: a recorder copies them into a preallocated ring.
static_assert(sizeof(snapshot_record) <= 80);

// The variant index of record type T in snapshot_record (for code that switches on
// index(): it follows the variant's order, which has sizes last).
template <typename T, std::size_t I = 0>
[[nodiscard]] consteval std::size_t snapshot_index_of() noexcept {
    static_assert(I < std::variant_size_v<snapshot_record>, "not a snapshot record type");
    if constexpr (std::is_same_v<std::variant_alternative_t<I, snapshot_record>, T>) return I;
    else return snapshot_index_of<T, I + 1>();
}

// The most records a snapshot of a scheduler with this (resolved) config can have.
[[nodiscard]] constexpr std::uint64_t max_snapshot_records(const config& resolved) noexcept {
    // Handles: each one with waiters, and each other capped one holds a lease.
    return 2 + 3 * *resolved.slot_capacity + 2 * resolved.max_waiters + counter_count + wait_histogram_buckets + 1;
}

// Where scheduler::snapshot() writes its records, one call each: a non-owning
// reference to any callable taking `const snapshot_record&` (it must not throw).
class snapshot_sink {
public:
    template <typename F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, snapshot_sink>)
    snapshot_sink(F& f) noexcept  // NOLINT(google-explicit-constructor): a function reference
        : target_(&f), put_([](void* t, const snapshot_record& r) { (*static_cast<F*>(t))(r); }) {}
    void operator()(const snapshot_record& r) const { put_(target_, r); }

private:
    void* target_;
    void (*put_)(void*, const snapshot_record&);
};

// Thrown by the restoring constructor for a snapshot that no scheduler could be in:
// `record` is the 0-based index of the offending record (the record count for a
// snapshot that ends early), and what() says what is wrong.
class snapshot_error : public std::invalid_argument {
public:
    snapshot_error(std::size_t record, const std::string& message)
        : std::invalid_argument(message), record_(record) {}
    [[nodiscard]] std::size_t record() const noexcept { return record_; }

private:
    std::size_t record_;
};

[[nodiscard]] const char* to_string(counter c) noexcept;

}  // namespace fairpool::core
