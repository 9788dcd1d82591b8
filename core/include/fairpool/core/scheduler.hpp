#pragma once
// fairpool's scheduler: a pure, deterministic state machine. Events in (with the time
// as an input), effects out, nothing else: it never reads a clock, never performs I/O,
// never logs and never allocates after construction. The contract is docs/CONTRACT.md.
//
// Cost of one step: O(log W + log S + effects) for W queued waiters and S slots.
// Every table is sized from the config at construction:
//   slots, idle order, leak order, lifetime heap, empty-slot heap,
//   idle-time heap ..................................................... slot_capacity
//   waiters, deadline heap, waiter ids ................................. max_waiters
//   handles, handle ids, rotation, fifo heads ......... max_waiters + slot_capacity
//   (a handle is known while it has waiters or leases)
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/detail/bounded_vector.hpp"
#include "fairpool/core/detail/deadline_queue.hpp"
#include "fairpool/core/detail/id_map.hpp"
#include "fairpool/core/detail/index_list.hpp"
#include "fairpool/core/detail/indexed_heap.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::core {

// The most effects one step can produce (section 5): each waiter queued before the
// step, and the acquire's own, ends at most once (a `shutdown` rejects every queued
// waiter); each slot gets at most one leak report and one grant, spawn or retire; and
// one `closed`.
[[nodiscard]] constexpr std::uint64_t max_effects_per_step(const config& resolved) noexcept {
    return resolved.max_waiters + 1 + 2 * *resolved.slot_capacity + 1;
}

class scheduler {
public:
    // Throws config_error, naming the field, if the config is invalid. `hash_seed`
    // keys the id tables; it never changes any output. Without one, a random seed.
    explicit scheduler(const config& config);
    scheduler(const config& config, std::uint64_t hash_seed);
    // Restores the state a snapshot describes (snapshot.hpp, contract section 7.2):
    // every later step gives exactly the effects the scheduler it was taken from
    // gives. Throws config_error for an invalid config, snapshot_error for a snapshot
    // that no scheduler with this config could be in.
    scheduler(const config& config, std::span<const snapshot_record> records, std::uint64_t hash_seed);

    // One step (section 5): validate, expire, apply, hand out, plan spawns, close.
    // The transition is complete before this returns; the effects come back in
    // contract order, in a buffer of max_effects_per_step(config) entries that the
    // next step reuses. An error means nothing changed (and no effects).
    step_result step(const event& e);

    // The earliest time at which a `tick` would emit an effect; nullopt if none.
    [[nodiscard]] std::optional<nanos> next_deadline() const noexcept;
    // True only when next_deadline() is nullopt: no time-driven work and no spawn
    // backoff running (its first test, inline for callers that ask after every step).
    // False says nothing.
    [[nodiscard]] bool surely_no_deadline() const noexcept { return due_ == never && backoff_end_ <= now_; }
    // A lower bound of next_deadline(), in O(1): no deadline comes before it (never, with
    // surely_no_deadline(), when there is none). For a caller that keeps a timer armed
    // at or before it (the adapter's lazy timer) and need not ask for the exact one.
    [[nodiscard]] nanos deadline_lower_bound() const noexcept {
        return backoff_end_ > now_ && backoff_end_ < due_ ? backoff_end_ : due_;
    }

    // Writes the complete state to `sink`, one record a call, in the order of
    // snapshot.hpp: snapshot_size() records, at most max_snapshot_records(config).
    // O(state); no allocation.
    void snapshot(snapshot_sink sink) const;
    [[nodiscard]] std::uint64_t snapshot_size() const noexcept;

    [[nodiscard]] const stats& counters() const noexcept { return stats_; }
    // The wait histogram's buckets that grants added to since the last call, then
    // forgotten: bit b for bucket b < 63, bit 63 for buckets 63 and 64. For a reader
    // that copies the counters after steps (the Boost.Asio adapter's stats board) and
    // would otherwise search the histogram for what changed. Not part of the state: no
    // step's outcome, snapshot or trace depends on it.
    [[nodiscard]] std::uint64_t take_touched_wait_buckets() noexcept { return std::exchange(wait_buckets_touched_, 0); }
    [[nodiscard]] const config& configuration() const noexcept { return config_; }
    [[nodiscard]] slot_state slot(std::uint32_t index) const noexcept { return slots_[index].state; }
    // The sizes in force: the config's, or the last valid `resize`'s.
    [[nodiscard]] std::uint64_t max_slots() const noexcept { return max_slots_; }
    [[nodiscard]] std::uint64_t min_slots() const noexcept { return min_slots_; }

private:
    struct slot_record {
        nanos expires_at = never;  // its `spawned`'s now + its drawn lifetime (max_lifetime > 0)
        nanos verified_at = 0;  // now of its last verification (section 1): the idle order
        nanos idle_since = 0;   // now of the step it last became idle after a use (decision 5)
        // One word for two fields that are never used in the same state.
        union {
            std::uint64_t idle_seq = 0;  // idle, checking: ties idle_since (the order slots became idle after a use)
            std::uint64_t holder;        // leased: the id of the handle the lease was granted to
        };
        nanos granted_at = 0;   // now of the grant of the current lease
        std::uint64_t lease = 0;
        std::uint64_t uses = 0;  // grants since its `spawned`
        slot_state state = slot_state::empty;
        bool leak_unreported = false;  // in unreported_leases_
        bool keepalive_check = false;  // checking for keepalive (not on checkout)
    };
    struct waiter_record {
        std::uint64_t id = 0;
        nanos deadline = never;
        nanos arrived_at = 0;
        std::uint64_t arrival = 0;  // admission order, ties deadlines
        std::uint32_t handle = detail::no_index;  // index into handles_
    };
    // A known handle: it has queued waiters, or (while leases are counted) leases out.
    struct handle_record {
        std::uint64_t id = 0;
        std::uint64_t cap = 0;     // max_leases of the acquire that made it known; 0 = none
        std::uint32_t weight = 1;  // of the acquire that made it active (≤ max_weight)
        std::uint32_t turn = 0;    // grants since it reached the front
        std::uint32_t leases = 0;  // leases out, while leases are counted
        detail::list_ends waiters;  // FIFO, links in handle_links_
    };
    // The tables hold slot_capacity and max_waiters of these: keep them to a few words.
    static_assert(sizeof(slot_record) == 64);
    static_assert(sizeof(waiter_record) == 40);
    static_assert(sizeof(handle_record) == 40);
    // Table indices are u32 with no_index as "none"; the id tables have
    // bit_ceil(2 × entries) buckets, which must fit too.
    static_assert(max_slots_limit < detail::no_index);
    static_assert(2 * (max_waiters_limit + max_slots_limit) <= std::uint64_t{detail::no_index});

    // Restoring a snapshot (snapshot.cpp), record by record; each refuses with
    // snapshot_error naming record i.
    void restore(std::span<const snapshot_record> records);
    void restore_scalars(const snapshot_begin& b);
    void restore_sizes(const snapshot_sizes& r);
    void restore_slot(std::size_t i, const snapshot_slot& r, std::int64_t& previous);
    void restore_leases(std::size_t i);
    void restore_idle_bookkeeping(std::uint32_t slot) noexcept;
    void restore_handle(std::size_t i, const snapshot_handle& r);
    const waiter_record* restore_waiter(std::size_t i, const snapshot_waiter& r, const waiter_record* previous);
    void restore_lease_holders(std::size_t end);
    void check_restored(std::size_t end);
    // Capped handles outside the rotation, by id (into snapshot_scratch_).
    void parked_capped_handles() const;

    [[nodiscard]] event_error validate(const event& e) const noexcept;
    [[nodiscard]] event_error validate_slot(const event& e, slot_state needed, event_error otherwise) const noexcept;

    // Section 5, step 2.
    void expire();
    void expire_waiters();
    void report_leaks();
    void retire_aged_idle();
    void retire_idle_timeouts();
    void start_keepalive_checks();
    [[nodiscard]] nanos earliest_time_driven_work() const noexcept;
    [[nodiscard]] nanos idle_timeout_due() const noexcept;
    [[nodiscard]] nanos keepalive_due() const noexcept;
    void due_no_later_than(nanos t) noexcept;
    // Step 3.
    void apply(const event& e);
    void acquire(const event& e);
    void cancel(std::uint64_t waiter_id);
    void deregister(std::uint64_t handle_id);
    void release(const event& e);
    [[gnu::noinline]] void release_with_bookkeeping(const event& e);
    template <bool may_be_surplus>
    void take_back(std::uint32_t slot, release_outcome outcome);
    void spawned(std::uint32_t slot);
    void spawn_failed(std::uint32_t slot);
    void died(std::uint32_t slot);
    void checked(std::uint32_t slot, check_outcome outcome);
    void reset_done(std::uint32_t slot, reset_outcome outcome);
    void shutdown();
    void resize(std::uint64_t max_slots, std::uint64_t min_slots);
    // Steps 4 to 6.
    void hand_out();
    void plan_spawns();
    void close_if_done();

    // Waiters and handles.
    // h: the acquire's handle's index, no_index if the handle is not known.
    void enqueue(const event& e, nanos deadline, std::uint32_t h);
    [[nodiscard]] std::uint32_t next_waiter() const noexcept;
    // Where the slot of a grant comes from: the idle order, or straight from its release
    // (hand_over), still leased.
    enum class from : std::uint8_t { idle, leased };
    template <from slot_was = from::idle>
    void grant_queued(std::uint32_t waiter, std::uint32_t slot);
    void hand_over(std::uint32_t slot);
    void reject_queued(std::uint32_t waiter, reject_reason why);
    void remove_waiter(std::uint32_t waiter) noexcept;
    [[nodiscard]] nanos effective_deadline(const event& e) const noexcept;
    [[nodiscard]] std::uint64_t eligible_waiters() const noexcept {
        return stats_.queued_waiters - stats_.waiters_behind_cap;
    }

    // Lease caps (decision 15). Leases are counted per handle once any cap can exist
    // (counting_leases_); before, nothing needs the counts and the round trip skips them.
    [[nodiscard]] static bool eligible(const handle_record& h) noexcept { return h.cap == 0 || h.leases < h.cap; }
    [[nodiscard]] static bool in_rotation(const handle_record& h) noexcept { return !h.waiters.empty() && eligible(h); }
    // Kept out of line: the round trip without caps only tests counting_leases_.
    [[gnu::noinline]] void start_counting_leases();
    // Counting's switch and its first pass, shared by the two ways counting starts: each
    // leased slot's lease counts against its handle (made known, uncapped, if it has no
    // record). False if a handle record is lacking for one.
    [[nodiscard]] bool count_leases_from_the_slots();
    [[gnu::noinline]] std::uint32_t acquire_counted(const event& e, std::uint32_t idle_slot);
    std::uint32_t make_known(std::uint64_t id, std::uint64_t cap);
    void forget_if_unknown(std::uint32_t h) noexcept;
    void join_rotation(std::uint32_t h) noexcept;
    void leave_rotation(std::uint32_t h) noexcept;
    void take_lease(std::uint32_t h) noexcept;
    void return_lease(std::uint32_t h) noexcept;
    [[nodiscard]] std::uint64_t cap_of(const event& e) const noexcept {
        return e.max_leases().value_or(config_.max_leases_per_handle);
    }

    // Slots.
    void set_state(std::uint32_t slot, slot_state next) noexcept;
    [[nodiscard]] std::uint32_t grantable_idle_slot() const noexcept;
    [[nodiscard]] std::uint32_t first_fresh_idle_slot() const noexcept;
    [[nodiscard]] bool stale(std::uint32_t slot) const noexcept;
    [[nodiscard]] std::int64_t uncovered_waiters() const noexcept;
    template <from slot_was = from::idle>
    void grant(std::uint64_t waiter_id, std::uint32_t slot, nanos arrived_at, std::uint64_t handle_id);
    // Whether becoming idle restarts the idle time (a use ended) or keeps it (a check passed).
    enum class idle_time : std::uint8_t { restart, keep };
    void become_idle(std::uint32_t slot, idle_time t) noexcept;
    void track_idle(std::uint32_t slot) noexcept;
    void leave_idle(std::uint32_t slot) noexcept;
    [[nodiscard]] std::uint32_t oldest_idle() const noexcept;
    template <bool may_be_surplus = true>
    bool retire_if_worn(std::uint32_t slot);
    [[nodiscard]] bool surplus() const noexcept { return below_capacity_ && live() > max_slots_; }
    void start_check(std::uint32_t slot, bool keepalive);
    [[nodiscard]] nanos draw_lifetime() noexcept;
    void end_lease(std::uint32_t slot) noexcept;
    void retire(std::uint32_t slot, retire_reason why);
    void become_empty(std::uint32_t slot) noexcept;
    void retire_sorted_scratch(retire_reason why);
    [[nodiscard]] std::int64_t spawn_budget() const noexcept;
    [[nodiscard]] nanos backoff_delay(std::uint64_t failures) const noexcept;
    [[nodiscard]] std::uint64_t count(slot_state s) const noexcept { return stats_.slots[static_cast<int>(s)]; }
    [[nodiscard]] std::uint64_t live() const noexcept {
        return capacity_ - count(slot_state::empty) - count(slot_state::retiring);
    }
    // Slots that count against max_slots: the live ones and those retiring.
    [[nodiscard]] std::uint64_t occupied() const noexcept { return capacity_ - count(slot_state::empty); }

    void emit(const effect& f) noexcept;

    config config_;
    std::uint64_t capacity_ = 0;    // slot_capacity: the size of the slot tables
    std::uint64_t max_slots_ = 0;   // the sizes in force (resize)
    std::uint64_t min_slots_ = 0;
    bool counting_leases_ = false;  // handles' leases are counted (a cap can exist)
    bool below_capacity_ = false;   // max_slots < slot_capacity: a surplus is possible
    bool release_bookkeeping_ = false;  // counting_leases_ || below_capacity_: releases take the long way
    bool fifo_heads_ = false;       // eligible_heads_ is kept (fifo while counting leases)
    bool started_ = false;
    bool shutting_down_ = false;
    bool closed_ = false;
    nanos now_ = 0;
    std::uint64_t last_lease_ = 0;
    std::uint64_t highest_waiter_ = 0;   // of every valid acquire so far
    std::uint64_t arrivals_ = 0;
    std::uint64_t spawn_failures_in_a_row_ = 0;
    nanos backoff_end_ = 0;
    nanos due_ = never;                  // no time-driven work is due before this (step 2)
    bool spawn_inputs_changed_ = true;   // spawn planning may start a spawn (step 5)
    // idle_timeout needs idle_times_: checks reorder the idle order away from idle time.
    bool by_idle_time_ = false;
    // Some setting watches idle slots (lifetimes, idle_timeout, checks): become_idle and
    // leave_idle keep more than the idle order.
    bool idle_bookkeeping_ = false;
    std::uint64_t keepalive_checks_ = 0;  // keepalive checks in flight
    std::uint64_t idle_seq_ = 0;          // slots that became idle after a use, so far
    std::uint64_t jitter_state_ = 0;      // splitmix64 (decision 13)
    mutable std::uint32_t first_fresh_ = detail::no_index;  // idle slots before it are stale (decision 12)
    stats stats_;
    std::uint64_t wait_buckets_touched_ = 0;  // take_touched_wait_buckets()
    detail::bounded_vector<effect> effects_;  // of the current step, capacity max_effects_per_step

    std::vector<slot_record> slots_;
    std::vector<std::uint32_t> holders_;     // by leased slot: its holder's index into handles_ (counting_leases_)
    detail::list_links idle_links_;
    detail::list_ends idle_order_;           // oldest idle first
    detail::list_links leak_links_;
    detail::list_ends unreported_leases_;    // slots by grant time (leak_threshold > 0)
    detail::indexed_heap aged_idle_;         // idle slots by (expiry, slot) (max_lifetime > 0)
    detail::indexed_heap idle_times_;        // idle slots by idle_seq (by_idle_time_)
    detail::indexed_heap empty_slots_;       // by slot index
    detail::bounded_vector<std::uint32_t> scratch_;    // slot indices to sort, capacity slot_capacity
    mutable detail::bounded_vector<std::uint32_t> snapshot_scratch_;  // handle indices, capacity slot_capacity

    std::vector<waiter_record> waiters_;
    detail::bounded_vector<std::uint32_t> free_waiters_;
    detail::list_links arrival_links_;
    detail::list_ends arrivals_order_;       // every queued waiter, by arrival
    detail::list_links handle_links_;        // per-handle FIFOs
    detail::deadline_queue deadlines_;       // waiters with a deadline, by (deadline, arrival)
    detail::id_map waiter_ids_;

    std::vector<handle_record> handles_;
    detail::bounded_vector<std::uint32_t> free_handles_;
    detail::list_links rotation_links_;
    detail::list_ends rotation_;             // active eligible handles; the front has the turn
    detail::indexed_heap eligible_heads_;    // handles in the rotation by their first waiter's arrival (fifo_heads_)
    detail::id_map handle_ids_;
};

}  // namespace fairpool::core
