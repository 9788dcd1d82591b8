#pragma once
// The pool's actor: the one owner of the scheduler, its state, and the commands that
// reach it. The protocol (who drains, when, how a drain lets go) is actor.hpp; the
// mailbox and its scheduling word, mailbox.hpp and actor_state.hpp; what a drain does
// with the commands it takes, pool_drain.hpp. Here, the commands: the public entry
// points, from any thread, which push a command and announce it, or on the pool's
// executor with the actor idle feed an acquire or a release to the core directly
// (admission.hpp bounds the acquires).
//
// What the actor keeps per slot (the lease tokens among it) is slot_keeping.hpp.
//
// Time is the Clock's (std::chrono::steady_clock unless the pool is given another): the
// scheduler's nanoseconds count from the pool's creation, and every timer (the
// deadline timer, close deadlines, retire grace, check and reset timeouts) is a
// basic_waitable_timer<Clock, WaitTraits>, so a test's clock that it advances by hand
// drives all of them.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "fairpool/asio/detail/acquire_operation.hpp"
#include "fairpool/asio/detail/actor.hpp"
#include "fairpool/asio/detail/admission.hpp"
#include "fairpool/asio/detail/closing.hpp"
#include "fairpool/asio/detail/commands.hpp"
#include "fairpool/asio/detail/deadline_timer.hpp"
#include "fairpool/asio/detail/drain_clock.hpp"
#include "fairpool/asio/detail/mailbox.hpp"
#include "fairpool/asio/detail/operation_table.hpp"
#include "fairpool/asio/detail/pool_registry.hpp"
#include "fairpool/asio/detail/pool_settings.hpp"
#include "fairpool/asio/detail/flight_recorder.hpp"
#include "fairpool/asio/detail/handle_block.hpp"
#include "fairpool/asio/detail/resources.hpp"
#include "fairpool/asio/detail/slot_keeping.hpp"
#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/asio/detail/stats_conversion.hpp"
#include "fairpool/asio/error.hpp"
#include "fairpool/asio/fwd.hpp"
#include "fairpool/asio/options.hpp"
#include "fairpool/core/scheduler.hpp"

namespace fairpool::detail {

template <class Resource, class Clock, class WaitTraits>
class pool_state final : public std::enable_shared_from_this<pool_state<Resource, Clock, WaitTraits>>,
                         public abandonable,
                         public actor<pool_state<Resource, Clock, WaitTraits>> {
    static_assert(Clock::is_steady, "the scheduler's time must never go back: Clock must be steady");
    friend class actor<pool_state>;

public:
    using executor_type = boost::asio::any_io_executor;
    using clock_type = Clock;
    using time_point = typename Clock::time_point;
    using timer_type = boost::asio::basic_waitable_timer<Clock, WaitTraits>;
    using lease_type = fairpool::lease<Resource, Clock, WaitTraits>;
    using hooks_type = resource_hooks<Resource>;
    using closing_type = closing<Clock, WaitTraits>;
    using handle_block = detail::handle_block;

    pool_state(executor_type ex, const pool_options& o, hooks_type hooks)
        : options_(checked(o, hooks)),
          executor_(std::move(ex)),
          io_executor_(executor_.target<boost::asio::io_context::executor_type>()),
          epoch_(Clock::now()),
          clock_(epoch_),
          timer_(executor_, epoch_),
          core_(options_.scheduler),
          recorder_(options_.recording ? std::make_unique<flight_recorder>(*options_.recording, core_) : nullptr),
          keeping_(slot_capacity()),
          admission_(static_cast<std::uint32_t>(options_.scheduler.max_waiters) + options_.mailbox_capacity),
          mailbox_(admission_.limit(), slot_capacity()),
          operations_(admission_.limit()),
          closing_(executor_, stats_),
          resources_(slot_capacity(), std::move(hooks)) {
        stats_.publish_all(core_.counters());
    }

    pool_state(const pool_state&) = delete;
    pool_state& operator=(const pool_state&) = delete;
    ~pool_state() = default;

    // Registers with the execution context, which may throw (std::bad_alloc: the
    // registry service created on first use, its list grown) having registered nothing,
    // then lets the flight recorder write (until then it writes nothing, so a
    // construction that throws leaves no file behind), then announces the start; neither
    // can throw (a drain that cannot be posted is fatal: actor.hpp). In this order: once
    // started, the pool must be shut down, so nothing may throw after the announcement
    // (pool_owner starts it last of all).
    void start() {
        auto& context = boost::asio::query(executor_, boost::asio::execution::context);
        boost::asio::use_service<pool_registry>(context).add(this->weak_from_this());
        if (recorder_) recorder_->commit();
        this->announce(command_kind::start);
    }

    [[nodiscard]] executor_type get_executor() const noexcept { return executor_; }
    // The most slots a resize may ask for (pool::slot_capacity).
    [[nodiscard]] std::uint32_t resize_capacity() const noexcept { return slot_capacity(); }

    // Diagnostics (with the actor's drains_posted and drains_run): commands fed to the core.
    [[nodiscard]] std::uint64_t commands_fed() const noexcept { return commands_fed_.load(std::memory_order_relaxed); }

    // The core's counters as last published, with the adapter's own count of busy refusals.
    [[nodiscard]] core::stats stats() const noexcept {
        core::stats s = stats_.read();
        s.busy_rejections = admission_.busy_rejections();
        return s;
    }
    // pool_stats::demand_peak: the highest demand published since the last take (not yet
    // raised to the current demand: to_pool_stats does that).
    // A fetch-max of the peak: by the actor after a publish that exceeds it, by a taker.
    [[gnu::noinline]] void raise_demand_peak(std::uint64_t demand) noexcept;
    [[nodiscard]] std::uint64_t demand_peak() const noexcept { return demand_peak_.load(std::memory_order_relaxed); }
    // pool.take_demand_peak: that peak, at least the demand published last; a new
    // interval starts at that demand (raised by every later publish of a higher one). A
    // publish that races the take counts in this interval, the next one, or both: none
    // is lost.
    [[nodiscard]] std::uint64_t take_demand_peak() noexcept {
        const std::uint64_t peak = demand_peak_.exchange(0, std::memory_order_relaxed);
        const std::uint64_t demand = demand_of(stats());
        raise_demand_peak(demand);
        return std::max(peak, demand);
    }
    [[nodiscard]] std::uint64_t new_handle_id() noexcept { return next_handle_.fetch_add(1, std::memory_order_relaxed); }
    [[nodiscard]] Resource& resource(std::uint32_t slot) noexcept { return *resources_.slots[slot]; }
    [[nodiscard]] resource_slots<Resource>& resources() noexcept { return resources_; }
    [[nodiscard]] std::chrono::nanoseconds retire_grace() const noexcept { return options_.retire_grace; }
    [[nodiscard]] std::chrono::nanoseconds check_timeout() const noexcept { return options_.check_timeout; }
    [[nodiscard]] std::chrono::nanoseconds create_timeout() const noexcept { return options_.create_timeout; }
    [[nodiscard]] std::chrono::nanoseconds reset_timeout() const noexcept { return options_.reset_timeout; }

    // The flight recorder (pool::dump_recording, pool::recording_status).
    [[nodiscard]] boost::system::error_code dump_recording(const std::filesystem::path& dir) {
        if (!recorder_) return make_error_code(error::not_recording);
        return recorder_->dump(dir);
    }
    [[nodiscard]] std::optional<recording_status> recording() const {
        if (!recorder_) return std::nullopt;
        return recorder_->status();
    }

    // Nanoseconds since the pool was created, by the Clock itself (any thread; a drain
    // reads drain_clock.hpp's).
    [[nodiscard]] core::nanos now() const noexcept { return clock_.exact(); }

    [[nodiscard]] core::nanos deadline_after(std::chrono::nanoseconds timeout) const noexcept {
        return timeout.count() <= 0 ? now() : now() + static_cast<core::nanos>(timeout.count());
    }

    // --- Commands, from any thread -------------------------------------------------

    // weight 0: none given; max_leases unset: the config's max_leases_per_handle. `self`:
    // the caller's reference to this state (copied into the operation: cheaper than
    // shared_from_this, which must lock a weak reference). `handle` 0: a fresh handle of
    // its own (pool.async_acquire), whose id is taken only once nothing here can throw
    // any more (in the drain that feeds it directly, or just before its push), so an
    // acquire that throws takes none.
    template <class Handler>
    void start_acquire(Handler handler, const std::shared_ptr<pool_state>& self, std::uint64_t handle,
                       const std::shared_ptr<handle_block>& block, core::nanos deadline, std::uint32_t weight,
                       std::optional<std::uint64_t> max_leases) {
        FAIRPOOL_DEBUG_ASSERT(self.get() == this);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        // Admission (admission.hpp): one started on the pool's executor may be fed to the
        // core directly, and is then admitted inside that drain (take_acquire); any other
        // is admitted and counted here.
        const bool on_executor = on_pool_executor();
        if (!on_executor && !admission_.admit(block.get())) return refuse_busy(std::move(handler), block.get());
        acquire_operation* op = nullptr;
        try {
            if (io_executor_ != nullptr) {
                using operation = typed_acquire_operation<pool_state, Handler, boost::asio::io_context::executor_type>;
                op = operation::create(std::move(handler), *io_executor_, this, block.get());
            } else {
                using operation = typed_acquire_operation<pool_state, Handler, executor_type>;
                op = operation::create(std::move(handler), executor_, this, block.get());
            }
        } catch (...) {  // its allocator threw: the initiating function throws, nothing counts
            if (!on_executor) admission_.delivered(block.get(), true);
            throw;
        }
        acquire_command command{op, 0, handle, deadline, max_leases.value_or(0), weight, max_leases.has_value()};
        // A cancellation slot gets its handler only while the acquire counts as
        // outstanding (so the cancels queue's bound holds). Fed directly: only if the
        // scheduler queued it, inside that drain (still inside the initiating function, so
        // no emit can race the emplace), naming the actor's (even) waiter id; granted or
        // rejected in its own step, it can no longer be cancelled and gets none. (The
        // emplace may allocate the slot's memory: a failure there is fatal, as anything
        // thrown in a drain is.)
        if (on_executor && this->fed_directly([&] {
                if (command.handle == 0) command.handle = new_handle_id();
                const std::uint64_t queued_as = take_acquire(command, caller_refs{&self, &block});
                if (queued_as != 0 && slot.is_connected()) slot.template emplace<cancel_request>(this, queued_as);
            }))
            return;
        // Through the mailbox, the operation outlives this call: it holds its references.
        op->hold_pool(self);
        if (block) op->hold_block(block);
        if (on_executor) {  // the actor was not idle: through the mailbox after all
            if (!admission_.admit(op->block())) return refuse_busy(op);
        }
        op->set_counted();
        // Through the mailbox, a cancellation slot's cancel must name the waiter before the
        // actor has seen it: an odd id from the shared counter (the actor gives even ones).
        if (slot.is_connected()) {
            command.waiter = next_waiter_.fetch_add(2, std::memory_order_relaxed);
            try {
                slot.template emplace<cancel_request>(this, command.waiter);
            } catch (...) {
                op->abandon();  // freed unrun and counted back; the initiating function throws
                throw;
            }
        }
        op->keep_work();
        if (command.handle == 0) command.handle = new_handle_id();
        const bool pushed = mailbox_.acquires.bounded_push(command);
        FAIRPOOL_ASSERT(pushed);  // admission keeps at most its limit in flight
        this->announce(command_kind::acquire);
    }

    // `token`: the lease's reference to this state. Fed directly, the actor keeps it
    // for the slot's next lease (slot_keeping.hpp: lease tokens); otherwise the caller drops it
    // after this call, which it keeps the state alive through. Always inlined into
    // lease::give_back, its one caller (which is out of line itself): left to GCC's
    // unit-growth limit it went out of line once the hooks' strand added an
    // instantiation, +9 instructions per round trip (callgrind).
    [[gnu::always_inline]] void release(std::uint32_t slot, std::uint64_t lease, core::release_outcome outcome,
                 std::shared_ptr<pool_state>& token) noexcept {
        if (on_pool_executor() && this->fed_directly([&] {
                keeping_.keep_token(slot, token);
                feed_release(slot, lease, outcome);
            }))
            return;
        push_slot_command(slot_command{core::event_kind::release, slot, lease, outcome, true});
    }

    // `block`: the handle's, which had an acquire outstanding when it looked.
    void deregister(std::uint64_t handle, const handle_block& block) noexcept {
        // Once the context is gone nothing drains the queue: a handle destroyed after it
        // has nothing to tell (its waiters went with the context).
        if (abandoned_.load(std::memory_order_relaxed)) return;
        // Counted until served (admission.hpp: the queue's bound), and counted before the
        // handle looks again: if its last acquire was delivered meanwhile, a new one may
        // have been admitted in its place without seeing this deregistration, which then
        // has nothing to tell. Sequentially consistent, so that the look cannot come
        // before the count.
        admission_.deregistration_queued();
        if (block.outstanding.load(std::memory_order_seq_cst) == 0) return admission_.deregistration_served();
        const bool pushed = mailbox_.deregisters.bounded_push(handle);
        FAIRPOOL_ASSERT(pushed);
        this->announce(command_kind::deregister);
    }

    void request_shutdown() noexcept {
        mailbox_.resize.shut();
        this->announce(command_kind::shutdown);
    }

    // pool.resize: refused here, on the caller's thread, when the sizes are bad (nothing
    // is sent) or the pool is shutting down; else in the mailbox, where a later resize
    // not yet taken replaces it, and which orders it against the shutdown (mailbox.hpp).
    [[nodiscard]] boost::system::error_code request_resize(std::uint64_t max_slots, std::uint64_t min_slots) noexcept {
        if (max_slots > slot_capacity() || min_slots > max_slots) return make_error_code(error::bad_size);
        if (!mailbox_.resize.post(max_slots, min_slots)) return make_error_code(error::closed);
        this->announce(command_kind::resize);
        return {};
    }

    // pool.async_close. Its waiter first, with everything that can throw (closing::add:
    // its allocations, its timer and the timer's wait, which holds its completion);
    // then, once it is queued, the shutdown,
    // which cannot throw (its drain's post is fatal if it fails, as any drain's post).
    // So a close that throws has changed nothing: no shutdown asked for, no waiter
    // queued, its handler never run. On a pool already closed the waiter completes at
    // once, and no shutdown is asked for again.
    template <class Handler>
    void start_close(Handler&& handler, std::optional<time_point> deadline) {
        if (closing_.add(std::forward<Handler>(handler), deadline)) request_shutdown();
    }

    // The result of a resource's creation, check, reset or retirement (resources.hpp);
    // `passed` is a check's alive or a reset's ok.
    void push_slot_result(core::event_kind kind, std::uint32_t slot, bool passed = true) noexcept {
        push_slot_command(slot_command{kind, slot, 0, core::release_outcome::clean, passed});
    }

    // --- Called by acquire operations and leases ----------------------------------

    static lease_type make_lease(std::shared_ptr<pool_state> self, std::uint32_t slot, std::uint64_t lease) noexcept {
        return lease_type(std::move(self), slot, lease);
    }

    // An operation's outcome reached its handler (or was dropped): it no longer counts.
    void operation_delivered(handle_block* block, bool counted) noexcept { admission_.delivered(block, counted); }

    // The execution context is shutting down (no thread runs it any more): pending
    // acquires are destroyed without invocation, as Asio does with its own.
    // (The registry holds a reference meanwhile, so dropping the lease tokens here,
    // which no drain will ever take again, cannot free this state under the call.)
    // What may still come (a lease released, a handle or the pool object destroyed,
    // docs/CONTRACT.md section 8) must not touch the context, soon freed: the actor is
    // taken for good, so nothing drains or posts again, and on_pool_executor() no
    // longer asks the context; the deadline timer goes now, while its service exists.
    // A pending acquire's cancellation slot is cleared as it goes (acquire_operation.hpp).
    void abandon_pending() noexcept override {
        mailbox_.state.take_for_good();
        io_executor_ = nullptr;
        abandoned_.store(true, std::memory_order_relaxed);
        mailbox_.acquires.consume_all([](const acquire_command& c) { c.operation->abandon(); });
        operations_.take_all([](acquire_operation* op) { op->abandon(); });
        closing_.abandon();
        keeping_.abandon();
        timer_.abandon();
    }

private:
    // The references of the caller of an acquire fed directly (take_acquire).
    struct caller_refs {
        const std::shared_ptr<pool_state>* self = nullptr;
        const std::shared_ptr<handle_block>* block = nullptr;
    };

    // Per-operation cancellation: one cancel command per operation, whatever the type
    // (a queued waiter has no side effect to undo, so terminal, partial and total agree).
    struct cancel_request {
        pool_state* state;
        std::uint64_t waiter;
        bool sent = false;
        cancel_request(pool_state* s, std::uint64_t w) : state(s), waiter(w) {}
        void operator()(boost::asio::cancellation_type_t type) {
            if (sent || type == boost::asio::cancellation_type::none) return;
            sent = true;
            state->admission_.cancel_queued();  // until served (admission.hpp: the queue's bound)
            const bool pushed = state->mailbox_.cancels.bounded_push(waiter);
            FAIRPOOL_ASSERT(pushed);
            state->announce(command_kind::cancel);
        }
    };

    // An acquire not admitted completes at once with error::busy: before its operation
    // exists (the caller keeps its handler's memory), or through the operation. The
    // refusal is counted before its completion is posted, so that its handler never
    // reads a count that lags it, and withdrawn if that post throws (it allocates; an
    // operation's post to an io_context does not): the initiating function then throws
    // having counted nothing, and the handler goes unrun. (A reader on another thread
    // may see the count in between.) In a drain (an acquire fed directly, take_acquire)
    // the throw is fatal, as anything thrown in a drain.
    template <class Handler>
    void refuse_busy(Handler handler, handle_block* block) {
        auto ex = boost::asio::get_associated_executor(handler, executor_);
        admission_.refused(block);
        try {
            boost::asio::post(ex, boost::asio::append(std::move(handler), make_error_code(error::busy), lease_type()));
        } catch (...) {
            admission_.refusal_withdrawn(block);
            throw;
        }
    }
    void refuse_busy(acquire_operation* op) {
        handle_block* const block = op->block();  // the caller's: it outlives the operation
        admission_.refused(block);
        try {
            complete_rejected(op, make_error_code(error::busy));
        } catch (...) {  // the operation went with its delivery, unrun
            admission_.refusal_withdrawn(block);
            throw;
        }
    }

    [[nodiscard]] std::uint32_t slot_capacity() const noexcept {
        return static_cast<std::uint32_t>(*options_.scheduler.slot_capacity);  // resolved, at most 65535
    }

    static pool_settings checked(const pool_options& o, const hooks_type& hooks) {
        pool_settings s = settings_of(o);  // throws config_error naming a bad field
        if (auto why = validate(o, hooks)) throw config_error("invalid pool options: " + *why);
        return s;
    }

    // Whether the caller may take the actor and drain inline: it runs on the pool's
    // executor. Known for an io_context executor; on any other, every drain is posted.
    [[nodiscard]] bool on_pool_executor() const noexcept {
        return io_executor_ != nullptr && io_executor_->running_in_this_thread();
    }

    // On the call graph of the actor's posted drain (actor.hpp says why that is no
    // recursion). NOLINTBEGIN(misc-no-recursion)
    template <class F>
    void post_to_executor(F&& f) {
        if (io_executor_ != nullptr) boost::asio::post(*io_executor_, std::forward<F>(f));
        else boost::asio::post(executor_, std::forward<F>(f));
    }
    // NOLINTEND(misc-no-recursion)

    void push_slot_command(const slot_command& c) noexcept {
        const bool pushed = mailbox_.slot_events.bounded_push(c);
        FAIRPOOL_ASSERT(pushed);
        this->announce(command_kind::slot_event);
    }

    // --- The drain (only while holding the actor) -----------------------------------

    // For the actor (actor.hpp).
    [[nodiscard]] actor_state& scheduling() noexcept { return mailbox_.state; }
    [[nodiscard]] std::uint64_t stamp() const noexcept { return clock_.stamp(); }
    // `stamp`: read before the actor was taken.
    void start_drain(std::uint64_t stamp) noexcept {
        drain_now_ = std::max(drain_now_, clock_.read(stamp));  // one clock read per drain; never back
    }
    [[nodiscard]] bool has_dying_references() const noexcept { return keeping_.has_dying(); }
    [[nodiscard]] auto take_dying_references() noexcept { return keeping_.take_dying(); }
    [[nodiscard]] detail::drain_counts& drain_counts() noexcept { return drain_counts_; }
    [[nodiscard]] const detail::drain_counts& drain_counts() const noexcept { return drain_counts_; }

    // What a drain does with the commands it takes (pool_drain.hpp).
    // Serving: each kind taken, within the drain's budget.
    [[gnu::noinline]] std::uint32_t serve(std::uint32_t kinds, std::uint32_t& budget);
    static void spend(std::uint32_t& budget) noexcept;
    void take_all_slot_events();
    void take_all_acquires();
    std::uint64_t take_acquire(const acquire_command& c, caller_refs refs = {});
    void count_queued(acquire_operation* op, caller_refs refs) noexcept;
    [[nodiscard]] acquire_operation* take_operation(std::uint64_t waiter) noexcept;
    void feed_slot(const slot_command& c);
    void feed_release(std::uint32_t slot, std::uint64_t lease, core::release_outcome outcome);
    [[nodiscard]] core::event slot_event(const slot_command& c) const noexcept;
    // One core step and its effects.
    void feed(const core::event& e);
    void publish_counters() noexcept;
    [[gnu::noinline]] void note_demand() noexcept;
    void perform(const core::effect& f);
    [[gnu::noinline]] void perform_other(const core::effect& f);
    void complete_rejected(acquire_operation* op, const boost::system::error_code& ec);
    static boost::system::error_code rejection(core::reject_reason r) noexcept;
    // After serving: the counters, the deadline timer, a close.
    void after_serving();
    [[gnu::noinline]] void rearm_timer(std::optional<core::nanos> deadline);
    [[gnu::noinline]] void report_closed();
    void on_timer_expired();

    const pool_settings options_;
    executor_type executor_;
    // Into executor_, if it is one; null once the context is gone (abandon_pending).
    const boost::asio::io_context::executor_type* io_executor_;
    const time_point epoch_;
    drain_clock<Clock> clock_;  // the drain's reads: owned by the actor but for exact()

    // Owned by the actor (touched only by the drain holding it).
    deadline_timer<Clock, WaitTraits> timer_;
    core::scheduler core_;
    std::unique_ptr<flight_recorder> recorder_;  // null unless options_.recording
    slot_keeping<pool_state> keeping_;
    core::nanos drain_now_ = 0;
    std::uint64_t actor_waiter_ = 0;  // the last even waiter id given (take_acquire)
    struct {
        std::uint64_t waiter = 0;
        acquire_operation* operation = nullptr;
        const std::shared_ptr<handle_block>* block = nullptr;  // the caller's, if fed directly
    } arriving_;  // the acquire being fed, until its step is done (take_acquire)
    bool shutdown_fed_ = false;
    bool counters_unpublished_ = false;  // a step ran since the last publish
    bool rare_counters_moved_ = false;   // a step since the last publish may have moved one
    bool closed_ = false;
    bool close_reported_ = false;

    // Shared with every thread.
    admission admission_;
    std::atomic<bool> abandoned_{false};      // the execution context is gone (abandon_pending)
    std::atomic<std::uint64_t> next_waiter_{1};  // odd waiter ids: cancellable acquires through the mailbox
    std::atomic<std::uint64_t> next_handle_{1};
    std::atomic<std::uint64_t> commands_fed_{0};  // written by the drain only
    detail::drain_counts drain_counts_;
    mailbox mailbox_;
    operation_table operations_;
    stats_board stats_;
    // The highest demand_of(published counters) since the last take_demand_peak(): the
    // actor raises it (a fetch-max after a publish, only when it is exceeded), a taker
    // sets it to the demand in force (an exchange, then a fetch-max).
    std::atomic<std::uint64_t> demand_peak_{0};
    closing_type closing_;
    resource_slots<Resource> resources_;
};

}  // namespace fairpool::detail

// The drain's definitions, which need the whole class above.
#include "fairpool/asio/detail/pool_drain.hpp"  // IWYU pragma: export
