#pragma once
// The pool's actor: the one owner of the scheduler. Commands from any thread arrive in
// fixed-capacity Boost.Lockfree queues; one drain at a time runs on the strand, reads
// the clock once, feeds every command to the scheduler as an event and performs the
// effects. One timer, armed at the scheduler's next_deadline(), feeds ticks.
//
// Time is the Clock's (std::chrono::steady_clock unless the pool is given another): the
// scheduler's nanoseconds count from the pool's creation, and every timer (the
// deadline timer, close deadlines, retire grace) is a basic_waitable_timer<Clock,
// WaitTraits>, so a test's clock that it advances by hand drives all of them.
//
// Queue capacities (so that a command that cannot be refused never finds one full):
//   acquires ..... L = max_waiters + mailbox_capacity outstanding acquires (admission)
//   slot events .. max_slots: per slot at most one release, spawn or retire result
//   cancels ...... 2L: each operation sends at most one, and between two drains at most
//                  L operations end and L begin
//   deregisters .. 2L: only a handle with an outstanding acquire sends one (same bound)
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/lockfree/queue.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fairpool/asio/close_report.hpp"
#include "fairpool/asio/detail/acquire_operation.hpp"
#include "fairpool/asio/detail/commands.hpp"
#include "fairpool/asio/detail/operation_table.hpp"
#include "fairpool/asio/detail/pool_registry.hpp"
#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/asio/detail/wake_flag.hpp"
#include "fairpool/asio/error.hpp"
#include "fairpool/asio/fwd.hpp"
#include "fairpool/asio/options.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/write.hpp"

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
    using create_function = std::function<boost::asio::awaitable<Resource>()>;
    using close_function = std::function<boost::asio::awaitable<void>(Resource&)>;
    using close_handler = boost::asio::any_completion_handler<void(boost::system::error_code, close_report)>;

    // A handle's count of acquires not yet delivered: a destroyed handle sends a
    // deregistration only while it has one.
    struct handle_block {
        std::atomic<std::uint32_t> outstanding{0};
    };

    pool_state(executor_type ex, const pool_options& o, create_function create, close_function close)
        : options_(checked(o)),
          executor_(std::move(ex)),
          strand_(make_actor_strand(executor_)),
          epoch_(Clock::now()),
          core_(options_.scheduler),
          limit_(static_cast<std::uint32_t>(options_.scheduler.max_waiters) + options_.mailbox_capacity),
          acquires_(limit_),
          slot_commands_(static_cast<std::size_t>(options_.scheduler.max_slots)),
          cancels_(2 * std::size_t{limit_}),
          deregisters_(2 * std::size_t{limit_}),
          operations_(limit_),
          resources_(options_.scheduler.max_slots),
          create_(std::move(create)),
          close_(std::move(close)) {
        if (options_.recorder) trace::write_header(*options_.recorder, options_.scheduler);
        stats_.publish(core_.counters());
    }

    pool_state(const pool_state&) = delete;
    pool_state& operator=(const pool_state&) = delete;
    ~pool_state() = default;

    void start() {
        auto& context = boost::asio::query(executor_, boost::asio::execution::context);
        boost::asio::use_service<pool_registry>(context).add(this->weak_from_this());
        post_to_actor([self = this->shared_from_this()] {
            self->feed(core::event::start(self->now()));
            self->after_events();
        });
    }

    [[nodiscard]] executor_type get_executor() const noexcept { return executor_; }

    // How much the pool posted: drains to its strand (at most one pending at a time).
    [[nodiscard]] std::uint64_t drains_posted() const noexcept { return drains_posted_.load(std::memory_order_relaxed); }
    [[nodiscard]] core::stats stats() const noexcept { return stats_.read(); }
    [[nodiscard]] std::uint64_t new_handle_id() noexcept { return next_handle_.fetch_add(1, std::memory_order_relaxed); }
    [[nodiscard]] Resource& resource(std::uint32_t slot) noexcept { return *resources_[slot]; }

    // Nanoseconds since the pool was created, by the Clock: the scheduler's clock.
    [[nodiscard]] core::nanos now() const noexcept {
        return static_cast<core::nanos>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count());
    }

    [[nodiscard]] core::nanos deadline_after(std::chrono::nanoseconds timeout) const noexcept {
        return timeout.count() <= 0 ? now() : now() + static_cast<core::nanos>(timeout.count());
    }

    // --- Commands, from any thread -------------------------------------------------

    template <class Handler>
    void start_acquire(Handler handler, std::uint64_t handle, std::shared_ptr<handle_block> block,
                       core::nanos deadline, std::uint32_t weight) {
        if (outstanding_.fetch_add(1, std::memory_order_acq_rel) >= limit_) {
            outstanding_.fetch_sub(1, std::memory_order_acq_rel);
            auto ex = boost::asio::get_associated_executor(handler, executor_);
            boost::asio::post(ex, boost::asio::append(std::move(handler),
                                                      make_error_code(error::busy), lease_type()));
            return;
        }
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
        const std::uint64_t waiter = next_waiter_.fetch_add(1, std::memory_order_relaxed);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected()) slot.template emplace<cancel_request>(this, waiter);
        using operation = typed_acquire_operation<pool_state, Handler>;
        acquire_operation* op = operation::create(std::move(handler), this->shared_from_this(), std::move(block));
        const bool pushed = acquires_.bounded_push(acquire_command{op, waiter, handle, deadline, weight});
        FAIRPOOL_ASSERT(pushed);  // admission keeps at most limit_ in flight
        wake();
    }

    void release(std::uint32_t slot, std::uint64_t lease, core::release_outcome outcome) noexcept {
        const bool pushed = slot_commands_.bounded_push(slot_command{core::event_kind::release, slot, lease, outcome});
        FAIRPOOL_ASSERT(pushed);
        wake();
    }

    void deregister(std::uint64_t handle) noexcept {
        const bool pushed = deregisters_.bounded_push(handle);
        FAIRPOOL_ASSERT(pushed);
        wake();
    }

    void request_shutdown() noexcept {
        shutdown_requested_.store(true, std::memory_order_release);
        wake();
    }

    template <class Handler>
    void start_close(Handler&& handler, std::optional<time_point> deadline) {
        request_shutdown();
        post_to_actor([self = this->shared_from_this(), h = close_handler(std::forward<Handler>(handler)),
                       deadline]() mutable { self->add_close_waiter(std::move(h), deadline); });
    }

    // --- Called by acquire operations and leases ----------------------------------

    lease_type make_lease(std::uint32_t slot, std::uint64_t lease) {
        return lease_type(this->shared_from_this(), slot, lease);
    }

    void operation_delivered(handle_block* block) noexcept {
        if (block) block->outstanding.fetch_sub(1, std::memory_order_acq_rel);
        outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    }

    // The execution context is shutting down (no thread runs it any more): pending
    // acquires are destroyed without invocation, as Asio does with its own.
    void abandon_pending() noexcept override {
        acquires_.consume_all([](const acquire_command& c) { c.operation->abandon(); });
        operations_.take_all([](acquire_operation* op) { op->abandon(); });
        close_waiters_.clear();
    }

private:
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
            const bool pushed = state->cancels_.bounded_push(waiter);
            FAIRPOOL_ASSERT(pushed);
            state->wake();
        }
    };

    struct close_waiter {
        close_handler handler;
        std::unique_ptr<timer_type> deadline;
    };

    static pool_options checked(const pool_options& o) {
        if (auto why = validate(o)) throw core::config_error("invalid pool options: " + *why);
        pool_options resolved = o;
        resolved.scheduler = o.scheduler.resolved();
        return resolved;
    }

    // A strand over the concrete io_context executor when that is what the pool runs on:
    // Asio 1.81's strand over a type-erased executor allocates on every post (it
    // queries the inner executor's blocking property through the type erasure).
    static executor_type make_actor_strand(const executor_type& ex) {
        if (const auto* io = ex.target<boost::asio::io_context::executor_type>()) return boost::asio::make_strand(*io);
        return boost::asio::make_strand(ex);
    }

    template <class F>
    void post_to_actor(F&& f) {
        boost::asio::post(strand_, std::forward<F>(f));
    }

    // Wake-ups are coalesced: once raise() said so, this post is the only one that will
    // drain the command just pushed. If it cannot be made (posting allocates), the pool
    // could never drain again, and the caller could not take its command back: fatal on
    // every path, like a broken invariant (and the noexcept release path needs it so).
    void wake() noexcept {
        if (!wake_.raise()) return;
        drains_posted_.fetch_add(1, std::memory_order_relaxed);
        try {
            post_to_actor([self = this->shared_from_this()] { self->drain(); });
        } catch (...) {
            core::detail::assertion_failed("a drain could be posted to the actor", __FILE__, __LINE__);
        }
    }

    // --- The actor ------------------------------------------------------------------

    void drain() {
        wake_.clear();
        drain_now_ = now();
        slot_commands_.consume_all([this](const slot_command& c) { feed(slot_event(c)); });
        take_acquires();
        // A cancel or deregistration is sent after the acquires it concerns were pushed:
        // take those first, or the scheduler would not know the waiter yet.
        cancels_.consume_all([this](std::uint64_t waiter) {
            take_acquires();
            feed(core::event::cancel(drain_now_, waiter));
        });
        deregisters_.consume_all([this](std::uint64_t handle) {
            take_acquires();
            feed(core::event::deregister(drain_now_, handle));
        });
        if (shutdown_requested_.load(std::memory_order_acquire) && !shutdown_fed_) {
            shutdown_fed_ = true;
            feed(core::event::shutdown(drain_now_));
        }
        after_events();
    }

    void take_acquires() {
        acquires_.consume_all([this](const acquire_command& c) {
            operations_.insert(c.waiter, c.operation);
            std::optional<core::nanos> deadline;
            if (c.deadline != core::never) deadline = c.deadline;
            std::optional<std::uint64_t> weight;
            if (c.weight != 0) weight = c.weight;
            feed(core::event::acquire(drain_now_, c.waiter, c.handle, deadline, weight));
        });
    }

    [[nodiscard]] core::event slot_event(const slot_command& c) const {
        if (c.kind == core::event_kind::release) return core::event::release(drain_now_, c.slot, c.lease, c.outcome);
        return core::event::of_slot(c.kind, drain_now_, c.slot);
    }

    void feed(const core::event& e) {
        const core::step_result r = core_.step(e);
        if (options_.recorder) trace::write_step(*options_.recorder, e, r.effects, r.error);
        FAIRPOOL_ASSERT(r.ok());  // the actor only sends valid events
        counters_unpublished_ = true;
        // The core's transition is complete: only now does anything act on its effects.
        // A step that completes an acquire publishes the counters first, so that its
        // handler (possibly on another thread at once) never reads counters that lag
        // its own outcome.
        if (completes_an_acquire(r.effects)) publish_counters();
        for (const core::effect& f : r.effects) perform(f);
    }

    // Once per drain, or earlier for a step that completes an acquire; never twice for
    // the same counters.
    void publish_counters() noexcept {
        stats_.publish(core_.counters());
        counters_unpublished_ = false;
    }

    static bool completes_an_acquire(std::span<const core::effect> effects) noexcept {
        return std::ranges::any_of(effects, [](const core::effect& f) {
            return f.kind == core::effect_kind::grant || f.kind == core::effect_kind::reject;
        });
    }

    void perform(const core::effect& f) {
        switch (f.kind) {
            case core::effect_kind::grant: operations_.take(f.waiter)->complete({}, f.slot, f.lease); break;
            case core::effect_kind::reject: operations_.take(f.waiter)->complete(rejection(f.rejected), 0, 0); break;
            case core::effect_kind::spawn: spawn(f.slot); break;
            case core::effect_kind::retire: retire(f.slot); break;
            case core::effect_kind::leak_suspected:
                if (options_.on_leak_suspected) options_.on_leak_suspected(f.slot, f.lease);
                break;
            case core::effect_kind::closed: closed_ = true; break;
        }
    }

    static boost::system::error_code rejection(core::reject_reason r) {
        switch (r) {
            case core::reject_reason::saturated: return make_error_code(error::saturated);
            case core::reject_reason::timeout: return make_error_code(error::timeout);
            case core::reject_reason::cancelled: return boost::asio::error::operation_aborted;
            case core::reject_reason::deregistered: return make_error_code(error::deregistered);
            case core::reject_reason::closed: return make_error_code(error::closed);
        }
        return make_error_code(error::closed);
    }

    // After the events of a drain or a tick: one timer, the stats, the close waiters.
    void after_events() {
        arm_timer();
        if (counters_unpublished_) publish_counters();
        if (closed_) complete_close_waiters();
    }

    void arm_timer() {
        const std::optional<core::nanos> deadline = closed_ ? std::nullopt : core_.next_deadline();
        if (deadline == armed_) return;
        armed_ = deadline;
        if (!deadline) {
            if (timer_) timer_->cancel();
            return;
        }
        // Made on first use: a pool whose waiters never have a deadline has no timer.
        if (!timer_) timer_.emplace(strand_);
        timer_->expires_at(epoch_ + std::chrono::ceil<typename Clock::duration>(std::chrono::nanoseconds(
                                        static_cast<std::int64_t>(std::min<core::nanos>(
                                            *deadline, std::numeric_limits<std::int64_t>::max())))));
        timer_->async_wait([weak = this->weak_from_this(), deadline](const boost::system::error_code& ec) {
            auto self = weak.lock();
            if (!self || ec || self->armed_ != deadline) return;
            self->armed_.reset();
            // The timer fires at or after the deadline; the clock never reads earlier.
            self->drain_now_ = std::max(self->now(), *deadline);
            self->feed(core::event::tick(self->drain_now_));
            self->after_events();
        });
    }

    // --- Resources --------------------------------------------------------------------

    void spawn(std::uint32_t slot) {
        boost::asio::co_spawn(executor_, create_resource(this->shared_from_this(), slot), boost::asio::detached);
    }

    static boost::asio::awaitable<void> create_resource(std::shared_ptr<pool_state> self, std::uint32_t slot) {
        bool created = false;
        try {
            self->resources_[slot].emplace(co_await self->create_());
            created = true;
        } catch (...) {
        }
        self->push_slot_result(created ? core::event_kind::spawned : core::event_kind::spawn_failed, slot);
    }

    void retire(std::uint32_t slot) {
        boost::asio::co_spawn(executor_, destroy_resource(this->shared_from_this(), slot), boost::asio::detached);
    }

    // A graceful close bounded by retire_grace, then the resource is dropped.
    static boost::asio::awaitable<void> destroy_resource(std::shared_ptr<pool_state> self, std::uint32_t slot) {
        std::optional<Resource> resource = std::move(self->resources_[slot]);
        self->resources_[slot].reset();
        if (resource && self->close_) {
            using namespace boost::asio::experimental::awaitable_operators;
            timer_type grace(co_await boost::asio::this_coro::executor,
                             std::chrono::ceil<typename Clock::duration>(self->options_.retire_grace));
            try {
                co_await (self->close_(*resource) || grace.async_wait(boost::asio::use_awaitable));
            } catch (...) {
            }
        }
        resource.reset();
        self->push_slot_result(core::event_kind::retired, slot);
    }

    void push_slot_result(core::event_kind kind, std::uint32_t slot) {
        const bool pushed = slot_commands_.bounded_push(slot_command{kind, slot, 0, core::release_outcome::clean});
        FAIRPOOL_ASSERT(pushed);
        wake();
    }

    // --- Close --------------------------------------------------------------------------

    void add_close_waiter(close_handler h, std::optional<time_point> deadline) {
        if (closed_) return deliver_close(std::move(h), {});
        auto& waiter = close_waiters_.emplace_back(close_waiter{std::move(h), nullptr});
        if (!deadline) return;
        waiter.deadline = std::make_unique<timer_type>(strand_, *deadline);
        waiter.deadline->async_wait([weak = this->weak_from_this(), at = &waiter](const boost::system::error_code& ec) {
            auto self = weak.lock();
            if (!self || ec) return;
            for (auto it = self->close_waiters_.begin(); it != self->close_waiters_.end(); ++it) {
                if (&*it != at) continue;
                close_handler h = std::move(it->handler);
                self->close_waiters_.erase(it);
                return self->deliver_close(std::move(h), make_error_code(error::timed_out));
            }
        });
    }

    void complete_close_waiters() {
        if (timer_) timer_->cancel();
        while (!close_waiters_.empty()) {
            close_handler h = std::move(close_waiters_.front().handler);
            close_waiters_.pop_front();
            deliver_close(std::move(h), {});
        }
    }

    void deliver_close(close_handler h, boost::system::error_code ec) {
        const core::stats s = core_.counters();
        close_report report;
        report.closed = closed_;
        report.leases_out = s.slots[static_cast<int>(core::slot_state::leased)];
        report.waiters_queued = s.queued_waiters;
        report.slots_spawning = s.slots[static_cast<int>(core::slot_state::spawning)];
        report.slots_retiring = s.slots[static_cast<int>(core::slot_state::retiring)];
        // Out of the actor first, then onto the handler's own executor.
        boost::asio::post(executor_, [h = std::move(h), ec, report]() mutable {
            boost::asio::dispatch(boost::asio::append(std::move(h), ec, report));
        });
    }

    const pool_options options_;
    executor_type executor_;
    executor_type strand_;  // the actor: a strand of the pool's executor
    std::optional<timer_type> timer_;  // armed at next_deadline()
    const time_point epoch_;

    // Owned by the actor (touched only on the strand).
    core::scheduler core_;
    core::nanos drain_now_ = 0;
    std::optional<core::nanos> armed_;
    bool shutdown_fed_ = false;
    bool counters_unpublished_ = false;  // a step ran since the last publish
    bool closed_ = false;
    std::list<close_waiter> close_waiters_;

    // Shared with every thread.
    const std::uint32_t limit_;
    std::atomic<std::uint32_t> outstanding_{0};
    std::atomic<std::uint64_t> next_waiter_{1};
    std::atomic<std::uint64_t> next_handle_{1};
    std::atomic<bool> shutdown_requested_{false};
    std::atomic<std::uint64_t> drains_posted_{0};
    wake_flag wake_;
    boost::lockfree::queue<acquire_command, boost::lockfree::fixed_sized<true>> acquires_;
    boost::lockfree::queue<slot_command, boost::lockfree::fixed_sized<true>> slot_commands_;
    boost::lockfree::queue<std::uint64_t, boost::lockfree::fixed_sized<true>> cancels_;
    boost::lockfree::queue<std::uint64_t, boost::lockfree::fixed_sized<true>> deregisters_;
    operation_table operations_;
    stats_board stats_;

    // A slot's resource: written by its spawn, read by its lease holder, taken by its
    // retirement; the scheduler's slot states order these (one at a time per slot).
    std::vector<std::optional<Resource>> resources_;
    create_function create_;
    close_function close_;
};

}  // namespace fairpool::detail
