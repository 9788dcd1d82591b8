#pragma once
// A pool's settings (fairpool::pool_options) and a handle's (fairpool::handle_options).
//
//   fairpool::pool_options options{.max_slots = 8, .acquire_timeout = std::chrono::seconds(2)};
//
// Every duration is a std::chrono duration; fairpool::forever is "no bound" wherever a
// duration bounds a wait or triggers work, and 0 there is refused (a wait of nothing is
// spelled async_try_acquire). Every field has a default a server can run with: waits
// and the factory are bounded (30 s), closes are graceful (retire_grace), nothing is
// checked, reaped or recycled unless asked. docs/reference/options.md maps each field to
// its core::config key and to the nearest Boost.MySQL, bb8 and HikariCP setting.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/config.hpp"

namespace fairpool {

// The order queued waiters of different handles are served in: round robin over the
// handles (each served `weight` waiters a turn), or one FIFO over all waiters.
using core::fairness_policy;
// Which idle resource a grant takes: the most recently used (lifo, the default: the
// others stay idle long enough for idle_timeout to retire them) or the least (fifo).
using core::idle_order;
// Thrown by a pool given invalid options; what() names the field
// ("invalid pool options: max_slots: ...").
using core::config_error;

// "No bound": a duration field set to forever never expires (acquire_timeout,
// create_timeout, idle_timeout, max_lifetime, leak_threshold), never triggers
// (check_after_idle, keepalive_interval), or never gives up (retire_grace).
inline constexpr std::chrono::nanoseconds forever = std::chrono::nanoseconds::max();

struct pool_options {
    // --- Sizes -------------------------------------------------------------------
    std::size_t max_slots = 4;    // resources at most (live, being made or being closed)
    std::size_t min_slots = 0;    // resources kept alive even when idle (<= max_slots)
    std::size_t max_waiters = 1024;  // queued acquires at most; past it: error::saturated
    std::optional<std::size_t> max_waiters_per_handle{};  // a handle's share; unset: max_waiters
    // The most slots a later pool.resize may ask for (the tables are sized by it);
    // unset: max_slots. At most max_adapter_slots.
    std::optional<std::size_t> slot_capacity{};

    // --- Fairness ----------------------------------------------------------------
    fairness_policy policy = fairness_policy::round_robin;
    fairpool::idle_order idle_order = fairpool::idle_order::lifo;
    // A handle's leases out at once, unless its handle_options::max_leases says
    // otherwise; 0: no cap.
    std::size_t max_leases_per_handle = 0;

    // --- Waiting -----------------------------------------------------------------
    // How long an acquire may wait; past it: error::timeout. A per-call timeout
    // (async_acquire(timeout)) can only make it shorter: the earlier deadline wins.
    // forever: waits are bounded only by per-call timeouts.
    std::chrono::nanoseconds acquire_timeout = std::chrono::seconds(30);

    // --- Making and closing resources --------------------------------------------
    // How long the factory (resource_hooks::create) may take; past it the spawn has
    // failed (the pool backs off and spawns again as needed) and the factory is
    // cancelled through its cancellation slot (a resource it still returns is destroyed
    // unused). forever: the factory bounds itself. A factory that does not finish at once
    // costs a timer (one that finishes at once, none).
    std::chrono::nanoseconds create_timeout = std::chrono::seconds(30);
    // After a failed spawn the pool waits this long before the next, doubling up to the max.
    std::chrono::nanoseconds spawn_backoff_initial = std::chrono::milliseconds(100);
    std::chrono::nanoseconds spawn_backoff_max = std::chrono::seconds(30);
    std::optional<std::size_t> max_concurrent_spawns{};  // factories running at once; unset: slot_capacity
    // A retired resource is first closed gracefully (resource_hooks::close); after this
    // long the close is cancelled and the slot is freed anyway, as a worker pool kills a
    // process that does not exit. 0: no graceful close is waited for.
    std::chrono::nanoseconds retire_grace = std::chrono::seconds(1);

    // --- Recycling ---------------------------------------------------------------
    std::chrono::nanoseconds idle_timeout = forever;  // an idle resource above min_slots is retired after this
    std::chrono::nanoseconds max_lifetime = forever;  // a resource is retired this long after it was made
    std::chrono::nanoseconds max_lifetime_jitter{0};  // each lifetime shortened by up to this (<= max_lifetime)
    std::uint64_t jitter_seed = 0;                    // the jitter's random sequence (deterministic)
    std::uint64_t max_uses = 0;                       // a resource is retired after this many leases; 0: no limit

    // --- Health (the hooks of hooks.hpp) -------------------------------------------
    // A resource idle longer than this is checked (resource_hooks::check) before it is
    // granted; needs the check hook.
    std::chrono::nanoseconds check_after_idle = forever;
    // Idle resources are checked this often; needs the check hook.
    std::chrono::nanoseconds keepalive_interval = forever;
    std::size_t max_concurrent_checks = 1;  // keepalive checks in flight at once, >= 1
    // A resource released clean is reset (resource_hooks::reset) before it is reused;
    // needs the reset hook.
    bool reset_on_release = false;
    // How long a check or a reset may take. Past it the hook is cancelled through its
    // cancellation slot and counts as dead (a check) or failed (a reset); its resource is
    // closed only once the hook has returned, so a hook must honour cancellation. Positive.
    std::chrono::nanoseconds check_timeout = std::chrono::seconds(5);
    std::chrono::nanoseconds reset_timeout = std::chrono::seconds(5);

    // --- Leaks -------------------------------------------------------------------
    // A lease held this long is suspected of leaking: counted, recorded, and
    // on_leak_suspected is posted to the pool's executor (never run inside the pool).
    std::chrono::nanoseconds leak_threshold = forever;
    std::function<void(std::uint32_t slot, std::uint64_t lease)> on_leak_suspected{};

    // --- The adapter's own bounds -------------------------------------------------
    // Acquires that may be in flight beyond the queued waiters (in the mailbox, or
    // completed but not yet delivered to their handlers). Past max_waiters +
    // mailbox_capacity outstanding acquires, a new one completes at once with
    // error::busy. max_waiters + mailbox_capacity must be at most 32766 (the lock-free
    // queues address their fixed storage with 16-bit indices).
    std::size_t mailbox_capacity = 1024;

    // --- The flight recorder (recorder_options.hpp) --------------------------------
    // Off unless set: every event the pool's scheduler takes, with its effects, in
    // segments of trace format v2 (docs/CONTRACT.md section 7.2) that replay with
    // `fairpool-replay --check`. See pool::dump_recording and pool::recording_status.
    std::optional<recorder_options> recording{};
};

// The most slots a pool of this adapter may have (slot_capacity, which defaults to
// max_slots): one below the core's 65535, as its slot-event queue (a Boost.Lockfree
// fixed-size queue) holds at most 65534 commands.
inline constexpr std::size_t max_adapter_slots = 65534;

// Empty if valid, else "FIELD: why" naming the first bad field.
[[nodiscard]] std::optional<std::string> validate(const pool_options& o);

// The scheduler's configuration these options make (docs/CONTRACT.md section 2): what a
// recording's config line says. Throws config_error naming the field if the options
// are invalid.
[[nodiscard]] core::config scheduler_config(const pool_options& o);

// A handle's settings (pool::make_handle). Its weight and lease cap reach the scheduler
// with each of its acquires and are taken, as docs/CONTRACT.md decisions 3 and 15 say,
// from the acquire that makes the handle active (the weight) or known (the cap).
struct handle_options {
    std::uint32_t weight = 1;                 // 1..65535: its turn in round robin
    std::optional<std::uint64_t> max_leases{};  // its leases out at once; unset:
                                              // pool_options::max_leases_per_handle; 0: no cap
    std::string name{};                       // its `tenant` label in Prometheus text ("" = unnamed)
};

// Empty if valid, else "FIELD: why".
[[nodiscard]] std::optional<std::string> validate(const handle_options& o);

}  // namespace fairpool
