#pragma once
// Settings of a fairpool::pool: the scheduler's config plus what the adapter adds.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/config.hpp"

namespace fairpool {

struct pool_options {
    core::config scheduler;  // docs/CONTRACT.md section 2

    // Acquires that may be in flight beyond the queued waiters (in the mailbox, or
    // completed but not yet delivered to their handlers). Past max_waiters +
    // mailbox_capacity outstanding acquires, a new one completes at once with
    // error::busy. max_waiters + mailbox_capacity must be at most 32766 (the
    // lock-free queues address their fixed storage with 16-bit indices).
    std::uint32_t mailbox_capacity = 1024;

    // A retired resource is first closed gracefully (the factory's close); after this
    // long the close is cancelled and the slot is freed anyway, as a worker pool kills a
    // process that does not exit (a close that ignores the cancellation keeps only the
    // resource, destroyed when it returns).
    std::chrono::nanoseconds retire_grace = std::chrono::seconds(1);

    // Health (scheduler.check_after_idle, keepalive_interval, reset_on_release): how long
    // a check or a reset hook (resource_hooks) may take. Past it the hook is cancelled
    // through its cancellation slot and counts as dead (a check) or failed (a reset);
    // its resource is closed only once the hook has returned, so a hook must honour
    // cancellation (every Asio operation awaited in it does). Each must be positive.
    // Those scheduler settings need their hook: a pool given check_after_idle or
    // keepalive_interval without a check hook, or reset_on_release without a reset hook,
    // is refused at construction (core::config_error naming the field), never run
    // with the setting quietly ignored.
    std::chrono::nanoseconds check_timeout = std::chrono::seconds(5);
    std::chrono::nanoseconds reset_timeout = std::chrono::seconds(5);

    // How long the factory (resource_hooks::create) may take; 0 (the default): no bound,
    // the factory bounds itself (a connect timeout). Past it the spawn has failed
    // (spawn_failed: the pool backs off and spawns again as the scheduler plans) and the
    // factory is cancelled through its cancellation slot; a resource it still returns is
    // destroyed unused. Set it unless every factory call is bounded: a backend that never
    // answers then cannot keep a slot spawning, or a close waiting, for ever. It costs a
    // timer per spawn (and so a reactor on a context that has no other timer or socket).
    // Must not be negative.
    std::chrono::nanoseconds create_timeout{0};

    // The flight recorder (recorder_options.hpp), off unless set: every event the actor
    // feeds the scheduler, with its effects, in segments of trace format v2
    // (docs/CONTRACT.md section 7.2) that replay with `fairpool-replay --check`. Costs
    // the actor a copy into a preallocated ring per step; a thread of the recorder's
    // own writes the files. See pool::dump_recording and pool::recording_status.
    std::optional<recorder_options> recording;

    // Posted to the pool's executor (never run inside the actor) when a lease has been
    // held for leak_threshold.
    std::function<void(std::uint32_t slot, std::uint64_t lease)> on_leak_suspected;
};

// The most slots a pool of this adapter may have (scheduler.slot_capacity, which
// defaults to max_slots): one below the core's 65535, as its slot-event queue (a
// Boost.Lockfree fixed-size queue) holds at most 65534 commands.
inline constexpr std::uint64_t max_adapter_slots = 65534;

// Empty if valid, else "FIELD: why".
[[nodiscard]] std::optional<std::string> validate(const pool_options& o);

// A handle's settings (pool::make_handle). Its weight and lease cap reach the scheduler
// with each of its acquires and are taken, as docs/CONTRACT.md decisions 3 and 15 say,
// from the acquire that makes the handle active (the weight) or known (the cap).
struct handle_options {
    std::uint32_t weight = 1;                 // 1..65535: its turn in round robin
    std::optional<std::uint64_t> max_leases;  // its leases out at once; unset:
                                              // scheduler.max_leases_per_handle; 0: no cap
    std::string name;                         // its `tenant` label in Prometheus text ("" = unnamed)
};

// Empty if valid, else "FIELD: why".
[[nodiscard]] std::optional<std::string> validate(const handle_options& o);

}  // namespace fairpool
