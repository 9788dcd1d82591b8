#pragma once
// The callers of async_close waiting for the pool to close: outside the actor, behind a
// mutex of their own (a close is rare, and neither acquires nor releases ever take it).
// The actor calls closed() once, after it published the counters of the step that
// closed the pool. A waiting close is outstanding work, as Asio asks of a pending
// operation, on its handler's executor and on the pool's (whose context must keep
// running the drains that close the pool), from its start until its completion is on
// its handler's executor.
//
// Each waiting close owns a timer of the pool's Clock, and its handler waits on it: the
// wait, started when the close is queued, is the completion's storage, reserved then.
// The timer expires at the close's deadline (at the Clock's last time point if it has
// none), and its wait's handler completes the close: with error::timeout and a report
// of what is still out, read from the published counters, when the deadline came first;
// with success when the pool closed first. closed() destroys every waiter's timer, which
// completes its wait (operation_aborted) by moving the operation Asio allocated when the
// wait began onto the pool's executor's queue: nothing is allocated and nothing can
// throw, so the actor's drain never fails there; and a deadline that comes needs no
// allocation either (its operation is in the queue already). So every close that was
// queued completes exactly once, whether memory runs out when its deadline fires or
// when the pool closes: nothing is ever posted from inside the actor or a timer's
// handler but the last hop onto the handler's own executor, which is Asio's (as for any
// of Asio's operations, a handler bound to an executor other than the pool's
// io_context's is handed over by that executor, which may allocate). All of this holds
// for a pool on an io_context's executor; on a pool whose executor is a strand or
// another executor, the wait's own completion passes through that executor too, which
// may allocate (a failure there throws out of run(), as for any Asio timer on it).
//
// A waiting close can be cancelled (per-operation cancellation, terminal or partial;
// total is not honoured: the close has asked for the shutdown, a side effect): its
// cancellation handler, run where the caller emits, cancels its timer, under the
// mutex; the wait then completes with operation_aborted, and so does the close, while
// the pool goes on closing. The handler is cleared on the
// handler's own executor, just before the upcall, where Asio has cancellation emitted;
// a close whose handler is destroyed unrun (its wait, or its hop onto its executor,
// went with a context shutting down) clears it as the handler goes.
//
// (Why not post the completion when the deadline fires, or when the pool closes, as an
// earlier version did: that post allocates, and if it throws there is no caller to give
// the close back to. From a deadline's handler the exception escaped io_context::run()
// with the close already taken out of the waiters, so it never completed; from the
// actor it was fatal. Reserving the storage when the close is queued, where a failure
// is the initiating function's std::bad_alloc and changes nothing, leaves no such
// path. Leaving the waiter queued when the post fails, for the pool's closing to
// complete, would have lost its deadline instead.)
//
// The waiters' list, its mutex and the outcome of the close live in a part of their
// own, shared with every pending wait: a wait the pool's closing completed may run after
// the pool's state (and this object) is gone (the drain that closed the pool dropped
// the last reference), and still knows it must complete with success.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "fairpool/asio/close_report.hpp"
#include "fairpool/asio/detail/stats_board.hpp"
#include "fairpool/asio/error.hpp"

namespace fairpool::detail {

template <class Clock, class WaitTraits>
class closing {
public:
    using timer_type = boost::asio::basic_waitable_timer<Clock, WaitTraits>;
    using time_point = typename Clock::time_point;

    // Allocates the shared part (std::bad_alloc: the pool's construction throws).
    closing(boost::asio::any_io_executor ex, const stats_board& stats)
        : executor_(std::move(ex)), shared_(std::make_shared<shared_part>(stats)) {}
    closing(const closing&) = delete;
    closing& operator=(const closing&) = delete;
    // A wait still pending finds its waiter gone: it completes with success if the pool
    // closed (it did, unless the execution context is shutting down, which destroys the
    // wait unrun), and never reads the counters again.
    ~closing() { drop_waiters(true); }

    // Returns true if the waiter was queued (the caller then asks for the shutdown),
    // false if the pool had already closed (its completion posted at once).
    //
    // Everything that can throw comes first: the work the waiter counts, its handler's
    // operation, its node of a list of its own, its timer, its cancellation handler (if
    // its handler has a cancellation slot) and last the timer's wait (the completion's
    // storage). If one throws (std::bad_alloc), nothing is queued, no wait is left
    // pending, and the handler never runs (it is destroyed, its slot cleared).
    // Only then is the waiter queued, by a splice, which cannot throw: a waiter queued
    // completes exactly once, through its wait. The wait is started under the mutex,
    // before the splice, so a deadline that comes at once finds the waiter. On a pool
    // already closed, the completion's post is what may throw (the handler then goes
    // unrun).
    template <class Handler>
    [[nodiscard]] bool add(Handler&& handler, std::optional<time_point> deadline) {
        using handler_type = std::decay_t<Handler>;
        // First: from here on, the slot is cleared on every way out (pending_handler).
        pending_handler<handler_type> pending(std::forward<Handler>(handler));
        auto handler_executor = boost::asio::get_associated_executor(pending.get(), executor_);
        auto slot = boost::asio::get_associated_cancellation_slot(pending.get());
        using work_type = outstanding_work<decltype(handler_executor)>;
        std::shared_ptr<void> work = std::make_shared<work_type>(executor_, handler_executor);
        std::list<waiter> made;
        waiter& w = made.emplace_back(waiter{0, nullptr});
        w.timer = std::make_unique<timer_type>(executor_, deadline.value_or(time_point::max()));
        std::unique_lock lock(shared_->mutex);
        if (shared_->closed) {
            const close_report report = shared_->closed_report;
            lock.unlock();
            deliver_now(std::move(pending), report, std::move(work));
            return false;
        }
        const std::uint64_t id = shared_->last_id + 1;
        if (slot.is_connected()) slot.template emplace<cancellation>(shared_, id);
        w.timer->async_wait(completion<handler_type>{shared_, id, std::move(pending), std::move(work)});
        w.id = shared_->last_id = id;
        shared_->waiters.splice(shared_->waiters.end(), made);
        return true;
    }

    // The pool has closed (the actor, once; its counters published): every waiter
    // completes with success, through its wait, which the destruction of its timer
    // completes. Allocates nothing and cannot throw (a drain may not).
    void closed() noexcept {
        const core::stats s = shared_->stats->read();
        std::list<waiter> done;
        {
            std::lock_guard lock(shared_->mutex);
            shared_->closed = true;
            shared_->closed_report = report_of(s, true);
            done.swap(shared_->waiters);
        }
        // Out of the mutex: each timer's wait goes onto the pool's executor's queue.
    }

    // The execution context is shutting down: waiters are destroyed without invocation
    // (their waits go with the context).
    void abandon() noexcept { drop_waiters(false); }

private:
    template <class HandlerExecutor>
    struct outstanding_work {
        outstanding_work(const boost::asio::any_io_executor& pool, const HandlerExecutor& handler)
            : on_pool(pool), on_handler(handler) {}
        boost::asio::executor_work_guard<boost::asio::any_io_executor> on_pool;
        boost::asio::executor_work_guard<HandlerExecutor> on_handler;
    };

    // A cancellation slot, cleared when its owner goes (a moved-from one clears nothing).
    template <class Slot>
    class slot_clearing {
    public:
        explicit slot_clearing(Slot slot) noexcept : slot_(std::move(slot)) {}
        slot_clearing(slot_clearing&& other) noexcept : slot_(other.slot_), armed_(std::exchange(other.armed_, false)) {}
        slot_clearing(const slot_clearing&) = delete;
        slot_clearing& operator=(const slot_clearing&) = delete;
        slot_clearing& operator=(slot_clearing&&) = delete;
        ~slot_clearing() { clear(); }

        void clear() noexcept {
            if (std::exchange(armed_, false) && slot_.is_connected()) slot_.clear();
        }

    private:
        Slot slot_;
        bool armed_ = true;
    };

    // A close's handler on its way to its upcall, which clears its cancellation slot
    // first, where Asio has cancellation emitted. Destroyed unrun, it clears the slot as
    // it goes: no cancellation handler outlives its close.
    template <class Handler>
    class pending_handler {
    public:
        explicit pending_handler(Handler handler)
            : handler_(std::move(handler)), slot_(boost::asio::get_associated_cancellation_slot(handler_)) {}

        [[nodiscard]] const Handler& get() const noexcept { return handler_; }
        void operator()(boost::system::error_code ec, const close_report& report) && {
            slot_.clear();
            std::move(handler_)(ec, report);
        }

    private:
        Handler handler_;
        slot_clearing<boost::asio::associated_cancellation_slot_t<Handler>> slot_;
    };

    struct waiter {
        std::uint64_t id;
        std::unique_ptr<timer_type> timer;  // its wait holds the close's handler
    };

    struct shared_part {
        explicit shared_part(const stats_board& s) : stats(&s) {}
        std::mutex mutex;
        const stats_board* stats;  // null once the closing is gone (read only with waiters queued)
        bool closed = false;
        close_report closed_report;
        std::uint64_t last_id = 0;
        std::list<waiter> waiters;  // one node per waiting async_close call
    };

    static close_report report_of(const core::stats& s, bool closed) noexcept {
        close_report report;
        report.closed = closed;
        report.leases_out = s.slots[static_cast<int>(core::slot_state::leased)];
        report.waiters_queued = s.queued_waiters;
        report.slots_spawning = s.slots[static_cast<int>(core::slot_state::spawning)];
        report.slots_retiring = s.slots[static_cast<int>(core::slot_state::retiring)];
        report.slots_checking = s.slots[static_cast<int>(core::slot_state::checking)];
        report.slots_resetting = s.slots[static_cast<int>(core::slot_state::resetting)];
        return report;
    }

    // A waiting close's cancellation handler, in its handler's cancellation slot: run
    // where the caller emits. Terminal or partial: if the waiter is still queued, its
    // timer is cancelled (its wait completes at once, operation_aborted); under the
    // mutex, where no other thread touches a queued waiter's timer. Once the
    // close completed, or the pool closed, it finds no waiter and does nothing.
    struct cancellation {
        cancellation(std::shared_ptr<shared_part> s, std::uint64_t i) noexcept : shared(std::move(s)), id(i) {}
        std::shared_ptr<shared_part> shared;
        std::uint64_t id;

        void operator()(boost::asio::cancellation_type type) {
            using boost::asio::cancellation_type;
            if ((type & (cancellation_type::terminal | cancellation_type::partial)) == cancellation_type::none) return;
            std::lock_guard lock(shared->mutex);
            for (waiter& w : shared->waiters) {
                if (w.id != id) continue;
                w.timer->cancel();
                return;
            }
        }
    };

    // A waiter's wait: run on the pool's executor when its deadline came (success) or
    // its timer was cancelled or destroyed (operation_aborted: the close was cancelled,
    // the pool closed, or the closing is gone). Which completion it makes is decided
    // under the mutex, whatever woke it: success once the pool has closed, else
    // operation_aborted if the close was cancelled (nothing else cancels a queued
    // waiter's timer), else error::timeout (its deadline came first). Still queued,
    // it takes its waiter out (its timer goes: this wait's operation has already left
    // it). No longer queued and the pool not closed: the
    // closing went without the pool closing, which only a context shutting down does
    // (its waits are then destroyed, not run): nothing to complete.
    template <class Handler>
    struct completion {
        std::shared_ptr<shared_part> shared;
        std::uint64_t id;
        pending_handler<Handler> handler;
        std::shared_ptr<void> work;  // an outstanding_work, let go once the handler is on its executor

        void operator()(const boost::system::error_code& woken_by) {
            boost::system::error_code ec;
            close_report report;
            std::list<waiter> done;
            {
                std::lock_guard lock(shared->mutex);
                auto& ws = shared->waiters;
                auto it = ws.begin();
                while (it != ws.end() && it->id != id) ++it;
                if (it != ws.end()) done.splice(done.begin(), ws, it);
                if (shared->closed) {
                    report = shared->closed_report;
                } else if (!done.empty()) {
                    ec = woken_by == boost::asio::error::operation_aborted
                             ? boost::system::error_code(boost::asio::error::operation_aborted)
                             : make_error_code(error::timeout);
                    report = report_of(shared->stats->read(), false);
                } else {
                    return;
                }
            }
            // On the pool's executor, out of any caller: onto the handler's own.
            hand_over(std::move(handler), ec, report);
            work.reset();  // the handler is on its executor now (dispatch posted it, or ran it)
        }
    };

    // A pool already closed: out of the caller first, then onto the handler's own
    // executor; `work` (on both executors) is held until the handler is there, so neither
    // context's run() returns in between.
    template <class Handler>
    void deliver_now(pending_handler<Handler> handler, close_report report, std::shared_ptr<void> work) {
        boost::asio::post(executor_, [h = std::move(handler), report, work = std::move(work)]() mutable {
            hand_over(std::move(h), boost::system::error_code{}, report);
            work.reset();
        });
    }

    // A close's completion, from the pool's executor onto the handler's own, where its
    // cancellation slot is cleared (Asio has cancellation emitted there) just before the
    // upcall: run inline when that is where this runs, else handed to it.
    template <class Handler>
    static void hand_over(pending_handler<Handler> handler, boost::system::error_code ec, close_report report) {
        const auto executor = boost::asio::get_associated_executor(handler.get());
        const auto allocator = boost::asio::get_associated_allocator(handler.get());
        boost::asio::dispatch(executor, boost::asio::bind_allocator(allocator, [h = std::move(handler), ec,
                                                                                report]() mutable {
            std::move(h)(ec, report);
        }));
    }

    // Out of the mutex, the timers go (each completing its wait): the closing is gone
    // (`gone`: the counters are never read again) or the context shuts down.
    void drop_waiters(bool gone) noexcept {
        std::list<waiter> dropped;
        std::lock_guard lock(shared_->mutex);
        dropped.swap(shared_->waiters);
        if (gone) shared_->stats = nullptr;
    }

    boost::asio::any_io_executor executor_;
    std::shared_ptr<shared_part> shared_;
};

}  // namespace fairpool::detail
