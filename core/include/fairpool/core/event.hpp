#pragma once
// Events (inputs), effects (outputs) and event errors of the scheduler
// (contract: docs/CONTRACT.md, sections 3 and 4).
#include <cstdint>
#include <optional>
#include <span>

namespace fairpool::core {

using nanos = std::uint64_t;
inline constexpr nanos never = ~nanos{0};

enum class event_kind : std::uint8_t {
    start, acquire, cancel, deregister, release, spawned, spawn_failed, retired, died, tick, shutdown,
    checked, reset_done, resize,
};
inline constexpr int event_kind_count = 14;

enum class release_outcome : std::uint8_t { clean, dirty };
enum class check_outcome : std::uint8_t { alive, dead };   // of a `checked`
enum class reset_outcome : std::uint8_t { ok, failed };    // of a `reset_done`

// Packed: the flight recorder copies one per step. A resize keeps its sizes in the
// waiter and handle words, an acquire its max_leases in the lease word; read them
// through max_slots(), min_slots() and max_leases().
struct event {
    nanos now = 0;
    std::uint64_t waiter = 0;             // acquire, cancel; resize: max_slots
    std::uint64_t handle = 0;             // acquire, deregister; resize: min_slots
    std::uint64_t lease = 0;              // release; acquire: max_leases (when has_max_leases)
    std::optional<nanos> deadline;        // acquire
    std::optional<std::uint32_t> weight;  // acquire (1..65535); see saturated_weight
    std::uint32_t slot = 0;               // release and every slot event
    event_kind kind = event_kind::tick;
    release_outcome outcome = release_outcome::clean;  // release
    check_outcome check = check_outcome::alive;        // checked
    reset_outcome reset = reset_outcome::ok;           // reset_done
    bool has_max_leases = false;                       // acquire: `lease` is the handle's lease cap

    // A weight past 32 bits is held as 2^32-1: still above max_weight, so still bad_weight.
    [[nodiscard]] static constexpr std::uint32_t saturated_weight(std::uint64_t w) noexcept {
        return w > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(w);
    }
    [[nodiscard]] std::uint64_t max_slots() const noexcept { return waiter; }  // resize (0..slot_capacity)
    [[nodiscard]] std::uint64_t min_slots() const noexcept { return handle; }  // resize (0..max_slots)
    // acquire: the handle's lease cap (0 = none); empty = the config's max_leases_per_handle.
    [[nodiscard]] std::optional<std::uint64_t> max_leases() const noexcept {
        if (!has_max_leases) return std::nullopt;
        return lease;
    }
    void set_max_leases(std::optional<std::uint64_t> cap) noexcept {
        has_max_leases = cap.has_value(), lease = cap.value_or(0);
    }
    void set_weight(std::optional<std::uint64_t> w) noexcept {
        weight.reset();
        if (w) weight = saturated_weight(*w);
    }

    static event of(event_kind kind, nanos now) {
        event e;
        e.kind = kind, e.now = now;
        return e;
    }
    static event start(nanos now) { return of(event_kind::start, now); }
    static event acquire(nanos now, std::uint64_t waiter, std::uint64_t handle,
                         std::optional<nanos> deadline = {}, std::optional<std::uint64_t> weight = {},
                         std::optional<std::uint64_t> max_leases = {}) {
        event e = of(event_kind::acquire, now);
        e.waiter = waiter, e.handle = handle, e.deadline = deadline;
        e.set_weight(weight), e.set_max_leases(max_leases);
        return e;
    }
    static event resize(nanos now, std::uint64_t max_slots, std::uint64_t min_slots) {
        event e = of(event_kind::resize, now);
        e.waiter = max_slots, e.handle = min_slots;
        return e;
    }
    static event cancel(nanos now, std::uint64_t waiter) {
        event e = of(event_kind::cancel, now);
        e.waiter = waiter;
        return e;
    }
    static event deregister(nanos now, std::uint64_t handle) {
        event e = of(event_kind::deregister, now);
        e.handle = handle;
        return e;
    }
    static event release(nanos now, std::uint32_t slot, std::uint64_t lease,
                         release_outcome outcome = release_outcome::clean) {
        event e = of(event_kind::release, now);
        e.slot = slot, e.lease = lease, e.outcome = outcome;
        return e;
    }
    static event of_slot(event_kind kind, nanos now, std::uint32_t slot) {
        event e = of(kind, now);
        e.slot = slot;
        return e;
    }
    static event spawned(nanos now, std::uint32_t slot) { return of_slot(event_kind::spawned, now, slot); }
    static event spawn_failed(nanos now, std::uint32_t slot) { return of_slot(event_kind::spawn_failed, now, slot); }
    static event retired(nanos now, std::uint32_t slot) { return of_slot(event_kind::retired, now, slot); }
    static event died(nanos now, std::uint32_t slot) { return of_slot(event_kind::died, now, slot); }
    static event checked(nanos now, std::uint32_t slot, check_outcome outcome) {
        event e = of_slot(event_kind::checked, now, slot);
        e.check = outcome;
        return e;
    }
    static event reset_done(nanos now, std::uint32_t slot, reset_outcome outcome) {
        event e = of_slot(event_kind::reset_done, now, slot);
        e.reset = outcome;
        return e;
    }
    static event tick(nanos now) { return of(event_kind::tick, now); }
    static event shutdown(nanos now) { return of(event_kind::shutdown, now); }

    friend bool operator==(const event&, const event&) = default;
};
// Built for every command the adapter feeds the core and copied by the flight recorder
// each step: nine words, as before caps and resizes.
static_assert(sizeof(event) == 72);

// Returned by step(); anything but `ok` means the event changed nothing.
// Listed in the order the checks run.
enum class event_error : std::uint8_t {
    ok,
    not_started,
    already_started,
    time_went_backwards,
    bad_slot,
    bad_weight,
    bad_size,
    duplicate_waiter,
    stale_lease,
    not_spawning,
    not_retiring,
    not_idle,
    not_checking,
    not_resetting,
};
inline constexpr int event_error_count = 14;

enum class effect_kind : std::uint8_t { grant, reject, spawn, retire, leak_suspected, closed, check, reset };
inline constexpr int effect_kind_count = 8;

enum class reject_reason : std::uint8_t { saturated, timeout, cancelled, deregistered, closed };
inline constexpr int reject_reason_count = 5;

enum class retire_reason : std::uint8_t { dirty, max_uses, max_lifetime, idle, died, shutdown, reset_failed, resize };
inline constexpr int retire_reason_count = 8;

struct effect {
    std::uint64_t waiter = 0;  // grant, reject
    std::uint64_t lease = 0;   // grant, leak_suspected
    std::uint32_t slot = 0;    // grant, spawn, retire, leak_suspected, check, reset
    effect_kind kind = effect_kind::closed;
    reject_reason rejected = reject_reason::saturated;  // reject
    retire_reason retired = retire_reason::dirty;       // retire

    static effect of(effect_kind kind) {
        effect f;
        f.kind = kind;
        return f;
    }
    static effect grant(std::uint64_t waiter, std::uint32_t slot, std::uint64_t lease) {
        effect f = of(effect_kind::grant);
        f.waiter = waiter, f.slot = slot, f.lease = lease;
        return f;
    }
    static effect reject(std::uint64_t waiter, reject_reason why) {
        effect f = of(effect_kind::reject);
        f.waiter = waiter, f.rejected = why;
        return f;
    }
    static effect spawn(std::uint32_t slot) {
        effect f = of(effect_kind::spawn);
        f.slot = slot;
        return f;
    }
    static effect retire(std::uint32_t slot, retire_reason why) {
        effect f = of(effect_kind::retire);
        f.slot = slot, f.retired = why;
        return f;
    }
    static effect leak_suspected(std::uint32_t slot, std::uint64_t lease) {
        effect f = of(effect_kind::leak_suspected);
        f.slot = slot, f.lease = lease;
        return f;
    }
    static effect check(std::uint32_t slot) {
        effect f = of(effect_kind::check);
        f.slot = slot;
        return f;
    }
    static effect reset(std::uint32_t slot) {
        effect f = of(effect_kind::reset);
        f.slot = slot;
        return f;
    }
    static effect closed() { return of(effect_kind::closed); }

    friend bool operator==(const effect&, const effect&) = default;
};
// Three words: a step's effects are copied and scanned by every consumer.
static_assert(sizeof(effect) == 24);

// What one step produced: its error and, in contract order, its effects. A machine
// hands this back only once its transition is complete; `effects` views the machine's
// own fixed buffer and stays valid until its next step (or its destruction). An error
// means the event changed nothing, and then `effects` is empty.
struct step_result {
    event_error error = event_error::ok;
    std::span<const effect> effects;

    [[nodiscard]] bool ok() const noexcept { return error == event_error::ok; }
};

enum class slot_state : std::uint8_t { empty, spawning, idle, leased, retiring, checking, resetting };
inline constexpr int slot_state_count = 7;

[[nodiscard]] const char* to_string(event_kind k) noexcept;
[[nodiscard]] const char* to_string(release_outcome o) noexcept;
[[nodiscard]] const char* to_string(check_outcome o) noexcept;
[[nodiscard]] const char* to_string(reset_outcome o) noexcept;
[[nodiscard]] const char* to_string(event_error e) noexcept;
[[nodiscard]] const char* to_string(effect_kind k) noexcept;
[[nodiscard]] const char* to_string(reject_reason r) noexcept;
[[nodiscard]] const char* to_string(retire_reason r) noexcept;
[[nodiscard]] const char* to_string(slot_state s) noexcept;

}  // namespace fairpool::core
