#pragma once
// The reference model: the scheduler contract (docs/CONTRACT.md, sections 1-6 and 9)
// written as plainly as possible, with standard containers and linear scans. It is the
// oracle that the core is checked against; it is not fast and allocates freely.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::model {

class reference_model {
public:
    // Throws core::config_error (message names the field) on an invalid config.
    explicit reference_model(const core::config& config);
    // The state a snapshot describes (docs/CONTRACT.md section 7.2), read on its own,
    // without the core's code. It trusts the snapshot to be one the core accepts
    // (a trace's snapshot has been through the core's restoring constructor); an index
    // out of range throws std::out_of_range rather than going wrong.
    reference_model(const core::config& config, std::span<const core::snapshot_record> snapshot);

    // Validates the event (an invalid one changes nothing and returns its error),
    // then runs the steps of section 5 and returns their effects in order (valid until
    // the next step), like core::scheduler::step.
    core::step_result step(const core::event& e);

    // Earliest time at which a tick would emit an effect, or nullopt.
    [[nodiscard]] std::optional<core::nanos> next_deadline() const;

    // The records of section 7.2, in its order, every field a state does not use at its
    // default: what the core's snapshot() writes for the same state.
    [[nodiscard]] std::vector<core::snapshot_record> snapshot() const;

    [[nodiscard]] const core::stats& counters() const;
    [[nodiscard]] core::slot_state slot(std::uint32_t index) const;
    [[nodiscard]] const core::config& configuration() const;

private:
    // Plain members with standard containers; the model is a copyable value.

    // One of the max_slots places (section 1).
    struct slot_record {
        core::slot_state state = core::slot_state::empty;
        // `now` of its `spawned` + max_lifetime less its jitter draw (decision 13);
        // never without max_lifetime.
        core::nanos expires_at = core::never;
        std::uint64_t uses = 0;        // grants since its `spawned` (decision 5)
        core::nanos idle_since = 0;    // its idle time: a passed check leaves it (decision 5)
        std::uint64_t idle_seq = 0;    // idle_seq_ when idle_since was set: ties of idle times
        core::nanos verified = 0;      // `now` its resource was last verified (section 1)
        bool keepalive = false;        // while checking: a keepalive check, not one on checkout
        std::uint64_t lease = 0;       // the live lease, while leased
        core::nanos granted_at = 0;    // `now` of that grant
        bool leak_reported = false;    // leak_suspected already emitted for that lease
        std::uint64_t holder = 0;      // the handle that lease was granted to
    };

    // A queued waiter (section 1).
    struct waiter_record {
        std::uint64_t id = 0;
        std::uint64_t handle = 0;
        core::nanos deadline = core::never;  // effective deadline (decision 1)
        core::nanos acquired_at = 0;         // `now` of its acquire (decision 2)
        std::uint64_t arrival = 0;           // arrivals_ before it was queued
    };

    // An active handle's place in the rotation (decision 3).
    struct turn_record {
        std::uint64_t weight = 1;  // its turn size, from the acquire that made it active
        std::uint64_t turn = 0;    // grants since it reached the front
    };

    // Step 1: validation (section 3).
    [[nodiscard]] core::event_error validate(const core::event& e) const;

    // Step 2: time-driven work (section 5).
    void run_time_driven_work(core::nanos now);
    void reject_timed_out_waiters(core::nanos now);
    void report_leaks(core::nanos now);
    void retire_idle_past_lifetime(core::nanos now);
    void retire_idle_past_idle_timeout(core::nanos now);
    void start_due_keepalive_checks(core::nanos now);

    // Step 3: the event itself (section 3).
    void apply_event(const core::event& e);
    void on_acquire(const core::event& e);
    void on_cancel(const core::event& e);
    void on_deregister(const core::event& e);
    void on_release(const core::event& e);
    void on_spawned(const core::event& e);
    void on_spawn_failed(const core::event& e);
    void on_retired(const core::event& e);
    void on_died(const core::event& e);
    void on_checked(const core::event& e);
    void on_reset_done(const core::event& e);
    void on_shutdown();
    void on_resize(const core::event& e);

    // Step 4: handing out (section 5, "Who is granted next").
    void hand_out(core::nanos now);
    void grant_next_waiter(std::uint32_t slot, core::nanos now);
    [[nodiscard]] std::uint64_t next_waiter_to_grant();

    // Step 5: spawn planning.
    void plan_spawns(core::nanos now);
    [[nodiscard]] std::int64_t spawns_wanted() const;
    [[nodiscard]] bool in_backoff(core::nanos now) const;

    // Step 6: closed.
    void close_if_done();

    // Waiters and the rotation.
    [[nodiscard]] bool is_queued(std::uint64_t waiter) const;
    [[nodiscard]] std::uint64_t queued_of(std::uint64_t handle) const;
    [[nodiscard]] bool in_rotation(std::uint64_t handle) const;
    void enqueue(const waiter_record& w, std::uint64_t weight);
    waiter_record take_waiter(std::uint64_t waiter);
    void leave_rotation_if_inactive(std::uint64_t handle);
    void reject_queued(std::uint64_t waiter, core::reject_reason why);

    // Lease caps (decision 15).
    [[nodiscard]] std::uint64_t leases_of(std::uint64_t handle) const;
    [[nodiscard]] bool is_known(std::uint64_t handle) const;
    [[nodiscard]] bool is_eligible(std::uint64_t handle) const;
    [[nodiscard]] std::uint64_t eligible_waiters() const;
    void forget_unknown_handles();
    void make_known(std::uint64_t handle, std::uint64_t cap);
    void leave_rotation_if_at_cap(std::uint64_t handle);
    void rejoin_rotation_if_below_cap(std::uint64_t handle);
    [[nodiscard]] bool surplus() const;

    // Slots.
    [[nodiscard]] std::uint64_t count_slots(core::slot_state s) const;
    [[nodiscard]] std::uint64_t live_slots() const;
    [[nodiscard]] bool is_fresh(std::uint32_t slot, core::nanos now) const;
    [[nodiscard]] std::optional<std::uint32_t> fresh_slot_to_grant(core::nanos now) const;
    [[nodiscard]] std::optional<std::uint32_t> oldest_by_idle_time() const;
    [[nodiscard]] bool past_lifetime(const slot_record& s, core::nanos now) const;
    [[nodiscard]] bool past_idle_timeout_unwaited(const slot_record& s, core::nanos now) const;
    [[nodiscard]] std::uint64_t keepalive_checks_in_flight() const;
    [[nodiscard]] bool keepalive_due(core::nanos now) const;
    [[nodiscard]] core::nanos draw_lifetime();
    void become_idle(std::uint32_t slot, core::nanos now);
    void become_idle_after_check(std::uint32_t slot, core::nanos now);
    void leave_idle(std::uint32_t slot);
    void start_check(std::uint32_t slot, bool keepalive);
    void start_reset(std::uint32_t slot);
    void release_clean(std::uint32_t slot, core::nanos now, bool after_reset);
    void grant(std::uint64_t waiter, std::uint32_t slot, core::nanos acquired_at, core::nanos now,
               bool immediate);
    void retire(std::uint32_t slot, core::retire_reason why);
    void spawn(std::uint32_t slot);

    // Counters (section 9).
    void emit_reject(std::uint64_t waiter, core::reject_reason why);
    void refresh_gauges();

    // Snapshots (section 7.2).
    void restore(const core::snapshot_record& r);
    [[nodiscard]] core::snapshot_slot snapshot_of(std::uint32_t index) const;

    core::config config_;  // resolved
    core::stats stats_{};
    std::vector<core::effect> effects_;  // of the current step

    bool started_ = false;
    core::nanos last_now_ = 0;  // `now` of the last valid event
    bool shutting_down_ = false;
    bool closed_emitted_ = false;
    std::uint64_t next_lease_ = 1;  // lease ids 1, 2, 3, ... in grant order (section 1)
    std::uint64_t highest_waiter_ = 0;  // of every valid acquire so far
    std::uint64_t arrivals_ = 0;        // waiters queued so far (ties equal deadlines)
    std::uint64_t idle_seq_ = 0;        // slots that became idle after a use so far (decision 5)
    std::uint64_t jitter_state_ = 0;  // splitmix64 state of the lifetime draws (decision 13)

    std::uint64_t failures_ = 0;               // consecutive spawn failures (decision 6)
    std::optional<core::nanos> backoff_end_;   // no spawn starts before it (section 5)

    std::vector<slot_record> slots_;           // index = slot number
    std::vector<std::uint32_t> idle_order_;    // idle slots, least recently verified first
    std::vector<waiter_record> waiters_;       // queued waiters, in arrival order
    std::deque<std::uint64_t> rotation_;       // active handles; front has the turn
    std::map<std::uint64_t, turn_record> turns_;  // of each active handle (queued waiters)
    std::map<std::uint64_t, std::uint64_t> caps_;  // of each known handle (waiters or leases); 0 = none
    std::uint64_t max_slots_ = 0;  // the sizes in force (the config's, or the last resize's)
    std::uint64_t min_slots_ = 0;
};

}  // namespace fairpool::model
