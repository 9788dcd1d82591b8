#pragma once
// The invariant checker: an independent observer of the scheduler's step stream.
//
// It sees only what comes out of the scheduler: each event, the error it returned,
// the effects it emitted and the stats after the step. From that it keeps its own
// plain bookkeeping (queued waiters, handles and their weights, known handles with their
// lease caps and leases out, the sizes in force, slot states, live leases, shutdown) and checks, after every step, the invariants of
// docs/CONTRACT.md section 6, plus what they rest on: the validation of section 3,
// the order of effects inside a step and the work of each stage of section 5, and
// the counters of section 9 / decisions 11.2 and 11.11.
//
// It does not decide who should be granted next; it checks properties of what the
// scheduler did (see the comments in invariant_checker.cpp for the exact rules).
// It allocates freely; it is for tests, the replay tool and the simulator.
//
// After a breach its bookkeeping follows the scheduler on a best-effort basis, so
// callers should stop at the first breach reported.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::model {

class invariant_checker {
public:
    // Throws core::config_error (message names the field) on an invalid config.
    explicit invariant_checker(const core::config& config);
    // Starts from the state a snapshot describes (docs/CONTRACT.md section 7.2), to
    // check a segment: its queued waiters are live, its leases out, its handles in the
    // rotation in its order with the front's turn in progress. It trusts the snapshot
    // to be one the core accepts; what came before it (completed waiters, earlier
    // turns) is unknown, so the rules that need that history check from the snapshot on.
    invariant_checker(const core::config& config, std::span<const core::snapshot_record> snapshot);

    // Call once per step, after the scheduler returned. Returns a description of the
    // first breach found in this step ("invariant 6: slot 2 idle while 3 waiters
    // queued"), or nullopt.
    std::optional<std::string> check_step(const core::event& e, core::event_error error,
                                          std::span<const core::effect> effects,
                                          const core::stats& after);

    [[nodiscard]] const core::config& configuration() const { return config_; }

private:
    struct waiter_info {
        std::uint64_t id = 0;
        std::uint64_t handle = 0;
        std::uint64_t arrival = 0;  // global arrival order, 1, 2, 3, ...
        core::nanos acquired_at = 0;
        core::nanos deadline = core::never;  // effective deadline (decision 11.1)
    };

    struct handle_info {
        std::map<std::uint64_t, std::uint64_t> waiters;  // arrival -> waiter id
        std::uint64_t weight = 1;        // from the acquire that made it active
        // Round-robin bookkeeping (see check_round_robin). Indices count queue grants;
        // stamps come from one clock that ticks at every activation and queue grant.
        std::uint64_t activated_at = 0;  // queue grants made before it became active
        std::uint64_t last_grant = 0;    // index of its last queue grant (0: none yet)
        std::uint64_t run_start = 0;     // index of the first grant of its current run
        std::uint64_t last_grant_stamp = 0;
        std::uint64_t entry_lo = 0;      // it entered the back of the rotation within
        std::uint64_t entry_hi = 0;      // [entry_lo, entry_hi] (stamps)
    };

    struct slot_info {
        core::slot_state state = core::slot_state::empty;
        bool fresh = false;             // spawned since its last retire (invariant 7)
        core::nanos expires_at = core::never;  // now of its spawned + its lifetime (decision 13)
        std::uint64_t uses = 0;         // grants since spawned
        std::uint64_t idle_seq = 0;     // order in which idle times were set (decision 5)
        core::nanos idle_since = 0;     // idle time: a passed check leaves it (decision 5)
        std::uint64_t verify_seq = 0;   // order in which slots became idle, checks included
        core::nanos verified = 0;       // last verification (section 1)
        bool keepalive = false;         // checking: a keepalive check (not one on checkout)
        std::uint64_t lease = 0;        // live lease while leased (0: being released)
        std::uint64_t lease_waiter = 0;
        std::uint64_t holder = 0;       // leased: the handle its lease was granted to (decision 15)
        core::nanos granted_at = 0;
        bool leak_reported = false;
    };

    // A known handle (decision 15): queued waiters or leases out.
    struct known_info {
        std::uint64_t cap = 0;     // from the acquire that made it known; 0: no cap
        std::uint64_t leases = 0;  // leases out
    };

    struct terminal {
        bool granted = false;
        core::reject_reason reason = core::reject_reason::saturated;
        std::uint64_t step = 0;
    };

    enum class acquire_outcome { grant, closed, timeout, saturated, queue };

    // What the current step has shown and still owes.
    struct step_state {
        const core::event* e = nullptr;
        int phase = 20;                  // section 5 stage of the last effect (see phase_of)
        // acquire
        bool own_open = false;           // the acquire's waiter, not completed nor queued yet
        waiter_info own;
        acquire_outcome expected = acquire_outcome::queue;
        std::uint64_t idle_at_acquire = 0;
        // cancel / deregister / shutdown
        std::optional<std::uint64_t> cancel_target;
        bool cancel_done = false;
        bool shutdown_began = false;
        // release, spawned while shutting down, died, checked, reset_done: the retire step 3 owes
        std::optional<std::uint32_t> retire_slot;
        core::retire_reason retire_reason = core::retire_reason::dirty;
        bool retire_done = false;
        std::string retire_why;
        // release with reset_on_release: the reset step 3 owes
        std::optional<std::uint32_t> reset_slot;
        bool reset_done = false;
        // checked: the check that ended was a keepalive check (its place is free again)
        bool keepalive_ended = false;
        // step 5
        std::int64_t spawns_expected = 0;
        std::int64_t spawns_seen = 0;
        std::string spawn_plan;
    };

    // Section 3: the error this event should return, from the state before it.
    [[nodiscard]] core::event_error expected_error(const core::event& e) const;

    // Stages of one step.
    int phase_of(const core::effect& f) const;
    void advance_to(int phase);
    void begin_event();   // step 3 starts: apply the event to the bookkeeping
    void end_event();     // step 3 ends: what the event owed
    void plan_spawns();   // step 5 starts
    void end_spawns();

    // One handler per effect kind.
    void on_grant(const core::effect& f);
    void on_reject(const core::effect& f);
    void on_spawn(const core::effect& f);
    void on_retire(const core::effect& f);
    void on_leak(const core::effect& f);
    void on_check(const core::effect& f);
    void on_reset(const core::effect& f);
    void on_closed();

    // One check per invariant.
    void check_bad_event(core::event_error error, std::span<const core::effect> effects,
                         const core::stats& after);                      // 11
    bool check_waiter_live(const core::effect& f);                        // 1, 8
    void check_slot_grantable(const core::effect& f);                     // 2, 7, 12
    void check_idle_order(std::uint32_t slot);                            // section 5
    void check_fifo(const waiter_info& w);                                // 4
    void check_round_robin(const waiter_info& w);                         // 5
    void check_keepalive(const core::effect& f);                          // section 5 step 2, 13
    void check_on_checkout(const core::effect& f);                        // section 5 step 4
    void check_no_idle_while_queued();                                    // 6
    void check_no_idle_surplus();                                         // decision 16
    void check_time_driven_work_done();                                   // section 5 step 2
    void check_closed_owed();                                             // 9
    void check_counts(const core::stats& after);                          // 3
    void check_counters(const core::stats& after);                        // section 9

    // Bookkeeping.
    void queue_own_waiter();
    void remove_queued(std::uint64_t waiter);
    void make_idle(std::uint32_t slot);
    void make_idle_after_check(std::uint32_t slot);
    void judge_clean_return(std::uint32_t slot, bool reset_allowed, const char* what);
    void draw_lifetime(slot_info& s);
    [[nodiscard]] bool is_fresh(const slot_info& s) const;
    [[nodiscard]] bool past_lifetime(const slot_info& s) const;
    [[nodiscard]] std::optional<std::uint32_t> oldest_idle() const;
    [[nodiscard]] std::optional<std::uint32_t> least_recently_verified_idle() const;
    [[nodiscard]] std::uint64_t keepalive_checks_in_flight() const;
    [[nodiscard]] bool keepalive_owed() const;
    [[nodiscard]] std::optional<std::string> step2_retirement_owed() const;
    [[nodiscard]] std::uint64_t count(core::slot_state s) const;
    // Decision 15: caps, leases out, eligibility.
    [[nodiscard]] bool at_cap(std::uint64_t handle) const;
    [[nodiscard]] std::uint64_t eligible_waiters() const;
    [[nodiscard]] std::optional<std::uint64_t> oldest_eligible_waiter() const;
    void lease_back(std::uint32_t slot);
    void rejoin(std::uint64_t handle);
    void forget_unknown_handles();
    // Decision 16: more slots live than max_slots.
    [[nodiscard]] bool surplus() const { return live_slots() > max_slots_; }
    [[nodiscard]] bool idle_timeout_due(std::uint64_t min_slots) const;
    [[nodiscard]] std::uint64_t live_slots() const;
    [[nodiscard]] const waiter_info* find_live(std::uint64_t waiter) const;
    void breach(std::string message);

    // Snapshots (invariant_checker_snapshot.cpp).
    void restore(const core::snapshot_record& r);
    void restore_rotation(const std::vector<core::snapshot_handle>& rotation);

    core::config config_;

    // Durable bookkeeping.
    bool started_ = false;
    std::uint64_t max_slots_ = 0;  // the sizes in force (the config's, then the last resize's)
    std::uint64_t min_slots_ = 0;
    std::map<std::uint64_t, known_info> known_;  // known handles (decision 15)
    core::nanos now_ = 0;
    std::uint64_t steps_ = 0;
    std::uint64_t arrivals_ = 0;
    std::map<std::uint64_t, waiter_info> queued_;                        // by waiter id
    std::map<std::uint64_t, std::uint64_t> by_arrival_;                  // arrival -> id
    std::set<std::tuple<core::nanos, std::uint64_t, std::uint64_t>> by_deadline_;  // (deadline, arrival, id)
    std::map<std::uint64_t, handle_info> handles_;                       // active handles only
    std::unordered_map<std::uint64_t, terminal> completed_;              // waiters that got their terminal effect
    std::vector<slot_info> slots_;
    std::uint64_t idle_seq_ = 0;
    std::uint64_t verify_seq_ = 0;
    std::uint64_t jitter_state_ = 0;                  // splitmix64 state (decision 13)
    std::uint64_t last_lease_ = 0;
    bool shutting_down_ = false;
    bool closed_emitted_ = false;
    std::uint64_t spawn_failures_in_a_row_ = 0;
    core::nanos backoff_end_ = 0;
    std::uint64_t rr_grants_ = 0;                     // queue grants so far (round robin)
    std::uint64_t rr_clock_ = 0;                      // activations + queue grants so far
    std::optional<std::uint64_t> rr_last_handle_;     // handle of the last queue grant
    core::stats prev_{};                              // stats after the previous step
    bool have_prev_ = false;

    // Per step.
    step_state step_;
    core::stats expected_counters_{};
    std::optional<std::string> first_breach_;
};

}  // namespace fairpool::model
