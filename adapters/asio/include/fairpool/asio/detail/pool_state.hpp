#pragma once
// The pool's actor: the one owner of the scheduler. The whole protocol:
//
//   producer (any thread)   push a command into its mailbox queue, then announce its
//                           kind (actor_state.hpp). If the actor was idle and the
//                           producer runs on the pool's executor, it drains inline;
//                           if it was idle otherwise, it posts one drain. On the
//                           executor with the actor idle and nothing pending, an
//                           acquire or release is fed to the core directly instead.
//   drain (holds the actor) read the time once (drain_clock.hpp); serve the pending
//                           kinds (at most a budget of commands: the rest goes on in
//                           a posted drain);
//                           publish the counters; arm the one deadline timer; let go,
//                           re-checking the mailbox.
//   feed                    one core step; record it (a copy into the flight
//                           recorder's ring, if on); publish the counters before a
//                           completion is posted; perform the effects: completions
//                           posted to the handlers' executors, the resource hooks
//                           (create, check, reset, close) and on_leak_suspected posted
//                           to the pool's. A drain runs no user code at all.
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
#include <span>
#include <utility>
#include <vector>

#include "fairpool/asio/detail/acquire_operation.hpp"
#include "fairpool/asio/detail/closing.hpp"
#include "fairpool/asio/detail/commands.hpp"
#include "fairpool/asio/detail/drain_clock.hpp"
#include "fairpool/asio/detail/mailbox.hpp"
#include "fairpool/asio/detail/operation_table.hpp"
#include "fairpool/asio/detail/pool_registry.hpp"
#include "fairpool/asio/detail/flight_recorder.hpp"
#include "fairpool/asio/detail/handle_block.hpp"
#include "fairpool/asio/detail/resources.hpp"
#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/asio/error.hpp"
#include "fairpool/asio/fwd.hpp"
#include "fairpool/asio/options.hpp"
#include "fairpool/core/scheduler.hpp"

namespace fairpool::detail {

template <class Resource, class Clock, class WaitTraits>
class pool_state final : public std::enable_shared_from_this<pool_state<Resource, Clock, WaitTraits>>,
                         public abandonable {
    static_assert(Clock::is_steady, "the scheduler's time must never go back: Clock must be steady");

public:
    using executor_type = boost::asio::any_io_executor;
    using clock_type = Clock;
    using time_point = typename Clock::time_point;
    using timer_type = boost::asio::basic_waitable_timer<Clock, WaitTraits>;
    using lease_type = fairpool::lease<Resource, Clock, WaitTraits>;
    using hooks_type = resource_hooks<Resource>;
    using closing_type = closing<Clock, WaitTraits>;

    // Commands one drain serves at most before it lets the executor run other handlers:
    // inline (inside an initiating function or a release), and posted.
    static constexpr std::uint32_t inline_drain_budget = 32;
    static constexpr std::uint32_t posted_drain_budget = 1024;

    using handle_block = detail::handle_block;

    pool_state(executor_type ex, const pool_options& o, hooks_type hooks)
        : options_(checked(o, hooks)),
          executor_(std::move(ex)),
          io_executor_(executor_.target<boost::asio::io_context::executor_type>()),
          epoch_(Clock::now()),
          clock_(epoch_),
          core_(options_.scheduler),
          recorder_(options_.recording ? std::make_unique<flight_recorder>(*options_.recording, core_) : nullptr),
          kept_(slot_capacity()),
          dying_tokens_(reserved<std::shared_ptr<pool_state>>(slot_capacity())),
          limit_(static_cast<std::uint32_t>(options_.scheduler.max_waiters) + options_.mailbox_capacity),
          mailbox_(limit_, slot_capacity()),
          operations_(limit_),
          closing_(executor_, stats_),
          resources_(slot_capacity(), std::move(hooks)) {
        stats_.publish_all(core_.counters());
    }

    pool_state(const pool_state&) = delete;
    pool_state& operator=(const pool_state&) = delete;
    ~pool_state() = default;

    void start() {
        auto& context = boost::asio::query(executor_, boost::asio::execution::context);
        boost::asio::use_service<pool_registry>(context).add(this->weak_from_this());
        announce(command_kind::start);
    }

    [[nodiscard]] executor_type get_executor() const noexcept { return executor_; }

    // Diagnostics: drains posted to the executor (wake-ups are coalesced: at most one
    // per command), drains run (inline or posted), and commands fed to the core.
    [[nodiscard]] std::uint64_t drains_posted() const noexcept { return drains_posted_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t drains_run() const noexcept { return drains_run_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t commands_fed() const noexcept { return commands_fed_.load(std::memory_order_relaxed); }

    // The core's counters as last published, with the adapter's own count of busy refusals.
    [[nodiscard]] core::stats stats() const noexcept {
        core::stats s = stats_.read();
        s.busy_rejections = busy_rejections_.load(std::memory_order_relaxed);
        return s;
    }
    [[nodiscard]] std::uint64_t new_handle_id() noexcept { return next_handle_.fetch_add(1, std::memory_order_relaxed); }
    [[nodiscard]] Resource& resource(std::uint32_t slot) noexcept { return *resources_.slots[slot]; }
    [[nodiscard]] resource_slots<Resource>& resources() noexcept { return resources_; }
    [[nodiscard]] std::chrono::nanoseconds retire_grace() const noexcept { return options_.retire_grace; }
    [[nodiscard]] std::chrono::nanoseconds check_timeout() const noexcept { return options_.check_timeout; }
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
    // shared_from_this, which must lock a weak reference).
    template <class Handler>
    void start_acquire(Handler handler, const std::shared_ptr<pool_state>& self, std::uint64_t handle,
                       const std::shared_ptr<handle_block>& block, core::nanos deadline, std::uint32_t weight,
                       std::optional<std::uint64_t> max_leases) {
        FAIRPOOL_DEBUG_ASSERT(self.get() == this);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        // Admission: at most limit_ acquires outstanding (the mailbox's bound). One started
        // on the pool's executor may be fed to the core directly: it is then admitted
        // inside that drain and counted only if the scheduler queues it (take_acquire),
        // since one completed in that very step can send nothing more. Any other is
        // admitted and counted here.
        const bool on_executor = on_pool_executor();
        if (!on_executor && !admit(block.get())) return refuse_busy(std::move(handler), block.get());
        acquire_operation* op = nullptr;
        if (io_executor_ != nullptr) {
            using operation = typed_acquire_operation<pool_state, Handler, boost::asio::io_context::executor_type>;
            op = operation::create(std::move(handler), *io_executor_, this, block.get());
        } else {
            using operation = typed_acquire_operation<pool_state, Handler, executor_type>;
            op = operation::create(std::move(handler), executor_, this, block.get());
        }
        acquire_command command{op, 0, handle, deadline, max_leases.value_or(0), weight, max_leases.has_value()};
        // A cancellation slot gets its handler only while the acquire counts as
        // outstanding (so the cancels queue's bound holds). Fed directly: only if the
        // scheduler queued it, inside that drain (still inside the initiating function, so
        // no emit can race the emplace), naming the actor's (even) waiter id; granted or
        // rejected in its own step, it can no longer be cancelled and gets none. (The
        // emplace may allocate the slot's memory: a failure there is fatal, as anything
        // thrown in a drain is.)
        if (on_executor && fed_directly([&] {
                const std::uint64_t queued_as = take_acquire(command, caller_refs{&self, &block});
                if (queued_as != 0 && slot.is_connected()) slot.template emplace<cancel_request>(this, queued_as);
            }))
            return;
        // Through the mailbox, the operation outlives this call: it holds its references.
        op->hold_pool(self);
        if (block) op->hold_block(block);
        if (on_executor) {  // the actor was not idle: through the mailbox after all
            if (!admit(op->block())) return refuse_busy(op);
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
        const bool pushed = mailbox_.acquires.bounded_push(command);
        FAIRPOOL_ASSERT(pushed);  // admission keeps at most limit_ in flight
        announce(command_kind::acquire);
    }

    // `token`: the lease's reference to this state. Fed directly, the actor keeps it
    // for the slot's next lease (lease tokens, below); otherwise the caller drops it
    // after this call, which it keeps the state alive through.
    void release(std::uint32_t slot, std::uint64_t lease, core::release_outcome outcome,
                 std::shared_ptr<pool_state>& token) noexcept {
        if (on_pool_executor() && fed_directly([&] {
                keep_token(slot, token);
                feed_release(slot, lease, outcome);
            }))
            return;
        push_slot_command(slot_command{core::event_kind::release, slot, lease, outcome, true});
    }

    void deregister(std::uint64_t handle) noexcept {
        const bool pushed = mailbox_.deregisters.bounded_push(handle);
        FAIRPOOL_ASSERT(pushed);
        announce(command_kind::deregister);
    }

    void request_shutdown() noexcept {
        shutting_down_.store(true, std::memory_order_release);
        announce(command_kind::shutdown);
    }

    // pool.resize: refused here, on the caller's thread, when the sizes are bad (nothing
    // is sent) or the pool is shutting down; else in the mailbox, where a later resize
    // not yet taken replaces it (mailbox.hpp).
    [[nodiscard]] boost::system::error_code request_resize(std::uint64_t max_slots, std::uint64_t min_slots) noexcept {
        if (max_slots < 1 || max_slots > slot_capacity() || min_slots > max_slots)
            return make_error_code(error::bad_size);
        if (shutting_down_.load(std::memory_order_acquire)) return make_error_code(error::closed);
        mailbox_.resize.post(max_slots, min_slots);
        announce(command_kind::resize);
        return {};
    }

    template <class Handler>
    void start_close(Handler&& handler, std::optional<time_point> deadline) {
        request_shutdown();
        closing_.add(std::shared_ptr<closing_type>(this->shared_from_this(), &closing_),
                     typename closing_type::close_handler(std::forward<Handler>(handler)), deadline);
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
    void operation_delivered(handle_block* block, bool counted) noexcept {
        if (!counted) return;
        if (block) block->outstanding.fetch_sub(1, std::memory_order_acq_rel);
        outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    }

    // The execution context is shutting down (no thread runs it any more): pending
    // acquires are destroyed without invocation, as Asio does with its own.
    // (The registry holds a reference meanwhile, so dropping the lease tokens here,
    // which no drain will ever take again, cannot free this state under the call.)
    void abandon_pending() noexcept override {
        mailbox_.acquires.consume_all([](const acquire_command& c) { c.operation->abandon(); });
        operations_.take_all([](acquire_operation* op) { op->abandon(); });
        closing_.abandon();
        drop_tokens();
        dying_tokens_.clear();
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
            const bool pushed = state->mailbox_.cancels.bounded_push(waiter);
            FAIRPOOL_ASSERT(pushed);
            state->announce(command_kind::cancel);
        }
    };

    // Admission: counts an acquire as outstanding (the pool's and its handle's), unless
    // limit_ already are.
    [[nodiscard]] bool admit(handle_block* block) noexcept {
        if (outstanding_.fetch_add(1, std::memory_order_acq_rel) >= limit_) {
            outstanding_.fetch_sub(1, std::memory_order_acq_rel);
            return false;
        }
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
        return true;
    }

    // An acquire not admitted completes at once with error::busy: before its operation
    // exists (the caller keeps its handler's memory), or through the operation.
    template <class Handler>
    void refuse_busy(Handler handler, handle_block* block) {
        count_busy(block);
        auto ex = boost::asio::get_associated_executor(handler, executor_);
        boost::asio::post(ex, boost::asio::append(std::move(handler), make_error_code(error::busy), lease_type()));
    }
    void refuse_busy(acquire_operation* op) {
        count_busy(op->block());
        complete_rejected(op, make_error_code(error::busy));
    }
    void count_busy(handle_block* block) noexcept {
        busy_rejections_.fetch_add(1, std::memory_order_relaxed);
        if (block) block->refused_busy();
    }

    template <class T>
    static std::vector<T> reserved(std::size_t capacity) {
        std::vector<T> v;
        v.reserve(capacity);
        return v;
    }

    [[nodiscard]] std::uint32_t slot_capacity() const noexcept {
        return static_cast<std::uint32_t>(*options_.scheduler.slot_capacity);  // resolved, at most 65535
    }

    static pool_options checked(const pool_options& o, const hooks_type& hooks) {
        auto why = validate(o);
        if (!why) why = validate(o, hooks);
        if (why) throw core::config_error("invalid pool options: " + *why);
        pool_options resolved = o;
        resolved.scheduler = o.scheduler.resolved();
        return resolved;
    }

    // A drain whose budget runs out posts the next one, which clang-tidy's call graph
    // sees as a recursion through Asio's post (drain -> post -> the posted drain's
    // operator() -> drain). It is not one: the posted drain runs later, from the
    // executor, on a stack of its own, and at most one is ever posted.
    // NOLINTBEGIN(misc-no-recursion)

    // Whether the caller may take the actor and drain inline: it runs on the pool's
    // executor. Known for an io_context executor; on any other, every drain is posted.
    [[nodiscard]] bool on_pool_executor() const noexcept {
        return io_executor_ != nullptr && io_executor_->running_in_this_thread();
    }

    template <class F>
    void post_to_executor(F&& f) {
        if (io_executor_ != nullptr) boost::asio::post(*io_executor_, std::forward<F>(f));
        else boost::asio::post(executor_, std::forward<F>(f));
    }

    void push_slot_command(const slot_command& c) noexcept {
        const bool pushed = mailbox_.slot_events.bounded_push(c);
        FAIRPOOL_ASSERT(pushed);
        announce(command_kind::slot_event);
    }

    void announce(std::uint32_t kinds) noexcept {
        switch (mailbox_.state.announce(kinds, on_pool_executor())) {
            case actor_state::wake::none: return;
            case actor_state::wake::drain_inline: return drain(inline_drain_budget, clock_.stamp());
            case actor_state::wake::post_drain: return post_drain();
        }
    }

    // Once announce() or hand_off() made the actor `scheduled`, this post is the only one
    // that will serve what is pending. If it cannot be made (posting allocates), the
    // pool could never drain again, and the caller could not take its command back:
    // fatal on every path, like a broken invariant (and the noexcept release path needs
    // it so).
    [[gnu::noinline]] void post_drain() noexcept {
        drains_posted_.fetch_add(1, std::memory_order_relaxed);
        try {
            post_to_executor(posted_drain{this->shared_from_this()});
        } catch (...) {
            core::detail::assertion_failed("a drain could be posted to the pool's executor", __FILE__, __LINE__);
        }
    }

    // What the pool's executor runs for a posted drain.
    struct posted_drain {
        std::shared_ptr<pool_state> self;
        void operator()() const noexcept { self->run_posted_drain(); }
    };

    void run_posted_drain() noexcept {
        const std::uint64_t stamp = clock_.stamp();
        mailbox_.state.begin();
        drain(posted_drain_budget, stamp);
    }

    // Holding the actor: one drain, from the pending kinds on.
    void drain(std::uint32_t budget, std::uint64_t stamp) noexcept {
        drain_or_die([this, budget, stamp] {
            begin_drain(stamp);
            serve_and_finish(budget);
        });
    }

    // The caller runs on the pool's executor. With the actor idle and nothing pending: a
    // drain whose first command is the caller's own, fed to the core without a queue
    // round trip. False if the caller must push it instead.
    template <class Feed>
    bool fed_directly(Feed&& feed_command) noexcept {
        const std::uint64_t stamp = clock_.stamp();
        if (!mailbox_.state.try_take_idle()) return false;
        drain_or_die([&] {
            begin_drain(stamp);
            feed_command();
            finish_drain(inline_drain_budget - 1);
        });
        return true;
    }

    // A drain cannot stop half-way: the effects of a completed step must all be
    // performed and the actor let go, and what can throw in a drain (an allocation
    // failure posting a completion) would leave the pool
    // unable to keep its promises. Fatal, like a broken invariant.
    template <class Drain>
    static void drain_or_die(Drain&& drain) noexcept {
        try {
            drain();
        } catch (...) {
            core::detail::assertion_failed("a drain ran to its end (nothing in it may throw)", __FILE__, __LINE__);
        }
    }

    // --- The drain (only while holding the actor) -----------------------------------

    // `stamp`: drain_clock::stamp(), read before the actor was taken.
    void begin_drain(std::uint64_t stamp) noexcept {
        drains_run_.store(drains_run_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        drain_now_ = std::max(drain_now_, clock_.read(stamp));  // one clock read per drain; never back
    }

    void serve_and_finish(std::uint32_t budget) {
        const std::uint32_t left = serve(mailbox_.state.take(), budget);
        if (left != 0) return hand_off(left);
        finish_drain(budget);
    }

    // Lets go of the actor, re-checking the mailbox: what arrived meanwhile is served
    // by this drain (within its budget) before the actor is idle again.
    void finish_drain(std::uint32_t budget) {
        for (;;) {
            after_serving();
            if (!dying_tokens_.empty()) [[unlikely]]
                return finish_drain_dropping_tokens(budget);
            if (mailbox_.state.release()) return;
            const std::uint32_t left = serve(mailbox_.state.take(), budget);
            if (left != 0) return hand_off(left);
        }
    }

    // Lease tokens dropped by this drain (drop_tokens) go last, after the actor is let
    // go: they may be the last references to this state, and nothing after them in
    // this drain's call chain touches it. (Once: no token is kept again.)
    [[gnu::noinline]] void finish_drain_dropping_tokens(std::uint32_t budget) {
        std::vector<std::shared_ptr<pool_state>> dying;
        dying.swap(dying_tokens_);
        finish_drain(budget);
    }

    [[gnu::noinline]] void hand_off(std::uint32_t left) {
        after_serving();
        mailbox_.state.hand_off(left);
        post_drain();
    }
    // NOLINTEND(misc-no-recursion)

    // Serves the kinds taken, in this order, with at most `budget` commands (decremented);
    // returns the kinds left to serve (0 when all were).
    [[gnu::noinline]] std::uint32_t serve(std::uint32_t kinds, std::uint32_t& budget) {
        namespace kind = command_kind;
        if ((kinds & kind::start) != 0) feed(core::event::start(drain_now_));
        if ((kinds & kind::tick) != 0) on_timer_expired();
        std::uint32_t left = 0;
        if ((kinds & kind::slot_event) != 0) {
            slot_command c;
            while (budget > 0 && mailbox_.slot_events.pop(c)) --budget, feed_slot(c);
            if (budget == 0) left |= kind::slot_event;
        }
        if ((kinds & kind::acquire) != 0) {
            acquire_command c;
            while (budget > 0 && mailbox_.acquires.pop(c)) --budget, take_acquire(c);
            if (budget == 0) left |= kind::acquire;
        }
        // A cancel or deregistration is sent after the acquires it concerns were pushed:
        // take those first (all of them, past the budget: at most the queue's
        // capacity), or the scheduler would not know the waiter yet.
        if ((kinds & kind::cancel) != 0) {
            std::uint64_t waiter = 0;
            while (budget > 0 && mailbox_.cancels.pop(waiter))
                --budget, take_all_acquires(), feed(core::event::cancel(drain_now_, waiter));
            if (budget == 0) left |= kind::cancel;
        }
        if ((kinds & kind::deregister) != 0) {
            std::uint64_t handle = 0;
            while (budget > 0 && mailbox_.deregisters.pop(handle))
                --budget, take_all_acquires(), feed(core::event::deregister(drain_now_, handle));
            if (budget == 0) left |= kind::deregister;
        }
        std::uint64_t max_slots = 0;
        std::uint64_t min_slots = 0;
        if ((kinds & kind::resize) != 0 && mailbox_.resize.take(max_slots, min_slots))
            feed(core::event::resize(drain_now_, max_slots, min_slots));
        if ((kinds & kind::shutdown) != 0 && !shutdown_fed_) {
            shutdown_fed_ = true;
            feed(core::event::shutdown(drain_now_));
        }
        return left;
    }

    void take_all_acquires() {
        mailbox_.acquires.consume_all([this](const acquire_command& c) { take_acquire(c); });
    }

    // The acquire's operation waits beside the table while its own step runs: a step
    // that completes it at once (an immediate grant, a rejection) takes it from there,
    // and only a queued waiter's goes into the table. Returns the waiter's id if the
    // scheduler queued it, else 0. `refs`: for one fed directly (it holds no reference
    // yet), the caller's, which it takes copies of only if it is queued.
    std::uint64_t take_acquire(const acquire_command& c, caller_refs refs = {}) {
        FAIRPOOL_DEBUG_ASSERT((refs.self != nullptr) == !c.operation->holds_pool());
        // Fed directly and not counted yet: admitted here, where no other acquire can be
        // counted meanwhile (the actor counts at most one beyond limit_: mailbox.hpp).
        if (!c.operation->counted() && outstanding_.load(std::memory_order_relaxed) >= limit_) {
            refuse_busy(c.operation);
            return 0;
        }
        const std::uint64_t waiter = c.waiter != 0 ? c.waiter : (actor_waiter_ += 2);
        core::event e = core::event::acquire(drain_now_, waiter, c.handle);
        if (c.deadline != core::never) e.deadline = c.deadline;
        if (c.weight != 0) e.weight = c.weight;
        if (c.capped) e.set_max_leases(c.max_leases);
        if (handle_block* b = c.operation->block()) b->acquired();
        c.operation->arrived_at(drain_now_);
        arriving_ = {waiter, c.operation, refs.block};
        feed(e);
        if (arriving_.operation == nullptr) return 0;  // completed in its own step
        if (!arriving_.operation->counted()) count_queued(arriving_.operation, refs);
        arriving_.operation->keep_work();
        operations_.insert(arriving_.waiter, std::exchange(arriving_.operation, nullptr));
        return waiter;
    }

    // An acquire fed directly and queued by the scheduler now counts as outstanding (its
    // handle's deregistration must reach the waiter); its delivery counts it back. It
    // outlives its initiating function: it holds its references from now on.
    void count_queued(acquire_operation* op, caller_refs refs) noexcept {
        outstanding_.fetch_add(1, std::memory_order_acq_rel);
        if (handle_block* b = op->block()) {
            b->outstanding.fetch_add(1, std::memory_order_acq_rel);
            op->hold_block(*refs.block);
        }
        op->hold_pool(*refs.self);
        op->set_counted();
    }

    [[nodiscard]] acquire_operation* take_operation(std::uint64_t waiter) noexcept {
        if (arriving_.operation != nullptr && arriving_.waiter == waiter) return std::exchange(arriving_.operation, nullptr);
        return operations_.take(waiter);
    }

    void feed_slot(const slot_command& c) {
        if (c.kind == core::event_kind::release) return feed_release(c.slot, c.lease, c.outcome);
        feed(slot_event(c));
    }

    // A release first counts its lease back to its handle's block, which the actor held
    // for the lease (perform) and keeps for the slot's next lease.
    void feed_release(std::uint32_t slot, std::uint64_t lease, core::release_outcome outcome) {
        if (slot_keep& b = kept_[slot]; b.counting) {
            b.owner->returned();
            b.counting = false;
        }
        feed(core::event::release(drain_now_, slot, lease, outcome));
    }

    // A slot event other than a release.
    [[nodiscard]] core::event slot_event(const slot_command& c) const noexcept {
        switch (c.kind) {
            case core::event_kind::checked:
                return core::event::checked(drain_now_, c.slot, c.passed ? core::check_outcome::alive
                                                                        : core::check_outcome::dead);
            case core::event_kind::reset_done:
                return core::event::reset_done(drain_now_, c.slot, c.passed ? core::reset_outcome::ok
                                                                           : core::reset_outcome::failed);
            default: return core::event::of_slot(c.kind, drain_now_, c.slot);
        }
    }

    // One core step (inside drain_or_die: what can throw here is fatal).
    void feed(const core::event& e) {
        if (recorder_) recorder_->before_step(core_);
        const core::step_result r = core_.step(e);
        if (recorder_) recorder_->after_step(e, r);
        FAIRPOOL_ASSERT(r.ok());  // the actor only sends valid events
        commands_fed_.store(commands_fed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        counters_unpublished_ = true;
        // Only an event other than an acquire or a release, or an effect other than a
        // grant, moves the rare counters (docs/CONTRACT.md section 9; stats_board).
        if (e.kind != core::event_kind::acquire && e.kind != core::event_kind::release) rare_counters_moved_ = true;
        bool completes_an_acquire = false;
        for (const core::effect& f : r.effects) {
            completes_an_acquire |= f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject;
            rare_counters_moved_ |= f.kind != core::effect_kind::grant;
        }
        // The core's transition is complete: only now does anything act on its effects.
        // A step that completes an acquire publishes the counters first, so that its
        // handler (possibly on another thread at once) never reads counters that lag
        // its own outcome.
        if (completes_an_acquire) publish_counters();
        for (const core::effect& f : r.effects) perform(f);
    }

    // At the end of each drain, or earlier for a step that completes an acquire; never
    // twice for the same counters.
    void publish_counters() noexcept {
        stats_.publish(core_.counters(), std::exchange(rare_counters_moved_, false), core_.take_touched_wait_buckets());
        counters_unpublished_ = false;
    }

    // A grant counts in its handle's block, which the actor then keeps alive for the
    // lease (kept_): moved from the operation if it holds it, else (fed directly
    // and granted at once) the caller's, copied only if the slot's last lease was
    // another handle's. The operation gets the slot's lease token unless it holds a
    // reference of its own.
    void perform(const core::effect& f) {
        if (f.kind == core::effect_kind::grant) {
            acquire_operation* op = take_operation(f.waiter);
            if (handle_block* b = op->block()) {
                b->granted(drain_now_ - op->arrived());
                slot_keep& kept = kept_[f.slot];
                if (op->holds_block()) {
                    kept.owner = op->take_block_owner();
                } else if (kept.owner.get() != b) {
                    FAIRPOOL_DEBUG_ASSERT(arriving_.block != nullptr && arriving_.block->get() == b);
                    kept.owner = *arriving_.block;
                }
                kept.counting = true;
            }
            if (!op->holds_pool()) op->hold_pool(take_token(f.slot));
            return op->complete({}, f.slot, f.lease);
        }
        perform_other(f);
    }

    [[gnu::noinline]] void perform_other(const core::effect& f) {
        switch (f.kind) {
            case core::effect_kind::grant: break;
            case core::effect_kind::reject: {
                acquire_operation* op = take_operation(f.waiter);
                if (handle_block* b = op->block()) b->rejected(f.rejected);
                complete_rejected(op, rejection(f.rejected));
                break;
            }
            case core::effect_kind::spawn:
                start_outside_actor(this->shared_from_this(), f.slot, &create_resource<pool_state>);
                break;
            case core::effect_kind::retire:
                start_outside_actor(this->shared_from_this(), f.slot, &destroy_resource<pool_state>);
                break;
            case core::effect_kind::check:
                start_outside_actor(this->shared_from_this(), f.slot, &check_resource<pool_state>);
                break;
            case core::effect_kind::reset:
                start_outside_actor(this->shared_from_this(), f.slot, &reset_resource<pool_state>);
                break;
            case core::effect_kind::leak_suspected:
                if (options_.on_leak_suspected)
                    post_to_executor([self = this->shared_from_this(), slot = f.slot, lease = f.lease] {
                        self->options_.on_leak_suspected(slot, lease);
                    });
                break;
            case core::effect_kind::closed: closed_ = true; break;
        }
    }

    // A rejected operation holds a reference to this state from now on, as a granted
    // one holds its lease token: its delivery may come after everything else let go.
    void complete_rejected(acquire_operation* op, const boost::system::error_code& ec) {
        if (!op->holds_pool()) op->hold_pool(this->shared_from_this());
        op->complete(ec, 0, 0);
    }

    // --- Lease tokens -----------------------------------------------------------------
    //
    // A lease holds a reference to this state (it may outlive the pool). Taking one
    // per grant and dropping it per release would cost two atomic read-modify-writes
    // of the reference count per round trip. Instead each slot has a token: a reference
    // the actor hands to the slot's lease at its grant (take_token) and takes back at
    // its release, when the release is fed directly (keep_token); one released
    // through the mailbox is dropped by its lease, and the slot's next grant takes a new
    // one. A grant to an operation that already holds a reference (it came through the
    // mailbox, or waited) gives the lease that one. Tokens kept by the actor are
    // references from this state to itself: they are dropped when the pool has closed
    // (every lease back: none can be kept again), after the drain has let the actor
    // go (finish_drain), and when the execution context shuts down (abandon_pending).

    std::shared_ptr<pool_state> take_token(std::uint32_t slot) {
        FAIRPOOL_DEBUG_ASSERT(!tokens_dropped_);  // no grant once the pool closed, no drain once abandoned
        if (std::shared_ptr<pool_state>& kept = kept_[slot].token) return std::move(kept);
        return this->shared_from_this();
    }

    void keep_token(std::uint32_t slot, std::shared_ptr<pool_state>& token) noexcept {
        FAIRPOOL_DEBUG_ASSERT(!tokens_dropped_);  // no lease out once the pool closed, no drain once abandoned
        if (std::shared_ptr<pool_state>& kept = kept_[slot].token; !kept) kept = std::move(token);
    }

    // While holding the actor (or once no drain can run again): the tokens move to
    // dying_tokens_ (its capacity reserved: no allocation), which the drain drops after
    // letting the actor go (finish_drain_dropping_tokens).
    void drop_tokens() noexcept {
        tokens_dropped_ = true;
        for (slot_keep& k : kept_)
            if (k.token) dying_tokens_.push_back(std::move(k.token));
    }

    static boost::system::error_code rejection(core::reject_reason r) noexcept {
        switch (r) {
            case core::reject_reason::saturated: return make_error_code(error::saturated);
            case core::reject_reason::timeout: return make_error_code(error::timeout);
            case core::reject_reason::cancelled: return boost::asio::error::operation_aborted;
            case core::reject_reason::deregistered: return make_error_code(error::deregistered);
            case core::reject_reason::closed: return make_error_code(error::closed);
        }
        return make_error_code(error::closed);
    }

    // After the commands a drain served: the stats, the one timer, the close waiters.
    void after_serving() {
        if (counters_unpublished_) publish_counters();
        if (closed_ || core_.surely_no_deadline()) {
            if (armed_) arm_timer(std::nullopt);
        } else if (const std::optional<core::nanos> deadline = core_.next_deadline(); deadline != armed_) {
            arm_timer(deadline);
        }
        if (closed_ && !close_reported_) report_closed();
    }

    [[gnu::noinline]] void report_closed() {
        close_reported_ = true;
        drop_tokens();
        closing_.closed();
    }

    // --- The deadline timer: armed at next_deadline(); its expiry is a command ----------

    [[gnu::noinline]] void arm_timer(std::optional<core::nanos> deadline) {
        armed_ = deadline;
        if (!deadline) {
            if (timer_) timer_->cancel();
            return;
        }
        // Made on first use: a pool whose waiters never have a deadline has no timer.
        if (!timer_) timer_.emplace(executor_);
        timer_->expires_at(epoch_ + std::chrono::ceil<typename Clock::duration>(std::chrono::nanoseconds(
                                        static_cast<std::int64_t>(std::min<core::nanos>(
                                            *deadline, std::numeric_limits<std::int64_t>::max())))));
        timer_->async_wait([weak = this->weak_from_this()](const boost::system::error_code& ec) {
            if (ec) return;
            if (auto self = weak.lock()) self->announce(command_kind::tick);
        });
    }

    // A wait completed: the timer fires at or after its deadline, so the clock has
    // reached the armed deadline unless the wait was for one since replaced (a
    // completion already queued when the timer was re-armed). Either way the timer is
    // re-armed after this drain, at the next deadline.
    void on_timer_expired() {
        drain_now_ = std::max(drain_now_, clock_.fresh());  // the Clock's own time, which fired it
        if (armed_ && drain_now_ >= *armed_) feed(core::event::tick(drain_now_));
        armed_.reset();
    }

    const pool_options options_;
    executor_type executor_;
    const boost::asio::io_context::executor_type* io_executor_;  // into executor_, if it is one
    std::optional<timer_type> timer_;  // armed at next_deadline()
    const time_point epoch_;
    drain_clock<Clock> clock_;  // the drain's reads: owned by the actor but for exact()

    // Owned by the actor (touched only by the drain holding it).
    core::scheduler core_;
    std::unique_ptr<flight_recorder> recorder_;  // null unless options_.recording
    // What the actor keeps per slot: the block of the handle its last lease was granted
    // to (`owner`: a reference count changes hands only when the slot's lease goes to
    // another handle; `counting` while that lease is out, which its release counts back),
    // and the slot's lease token (above), if it holds one.
    struct slot_keep {
        std::shared_ptr<handle_block> owner;
        bool counting = false;
        std::shared_ptr<pool_state> token;
    };
    std::vector<slot_keep> kept_;
    std::vector<std::shared_ptr<pool_state>> dying_tokens_;  // dropped, until the drain lets go
    bool tokens_dropped_ = false;  // (for assertions)
    core::nanos drain_now_ = 0;
    std::optional<core::nanos> armed_;
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
    const std::uint32_t limit_;
    std::atomic<std::uint32_t> outstanding_{0};
    std::atomic<bool> shutting_down_{false};  // request_shutdown was called
    std::atomic<std::uint64_t> next_waiter_{1};  // odd waiter ids: cancellable acquires through the mailbox
    std::atomic<std::uint64_t> next_handle_{1};
    std::atomic<std::uint64_t> drains_posted_{0};
    std::atomic<std::uint64_t> busy_rejections_{0};
    std::atomic<std::uint64_t> drains_run_{0};    // written by the drain only
    std::atomic<std::uint64_t> commands_fed_{0};  // written by the drain only
    mailbox mailbox_;
    operation_table operations_;
    stats_board stats_;
    closing_type closing_;
    resource_slots<Resource> resources_;
};

}  // namespace fairpool::detail
