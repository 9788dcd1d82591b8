#pragma once
// The callers of async_close waiting for the pool to close: outside the actor, behind a
// mutex of their own (a close is rare, and neither acquires nor releases ever take it).
// The actor calls closed() once, after it published the counters of the step that
// closed the pool; a waiter's deadline timer completes it with error::timed_out and a
// report of what is still out, read from the published counters. A waiting close is
// outstanding work, as Asio asks of a pending operation, on its handler's executor and
// on the pool's (whose context must keep running the drains that close the pool), from
// its start until its completion is posted.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
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
    using close_handler = boost::asio::any_completion_handler<void(boost::system::error_code, close_report)>;

    closing(boost::asio::any_io_executor ex, const stats_board& stats) : executor_(std::move(ex)), stats_(stats) {}

    // `self` is this object, kept weakly by the deadline timer. Returns true if the
    // waiter was queued (the caller then asks for the shutdown), false if the pool had
    // already closed (its completion posted at once).
    //
    // Everything that can throw comes first: the waiter's allocations (its handler's
    // operation, the work it counts, its node of a list of its own), the deadline's
    // timer, and last its wait. If one throws (std::bad_alloc), nothing is queued, no
    // timer is left armed and the handler never runs (it goes with the waiter). Only
    // then is the waiter queued, by a splice, which cannot throw: a waiter that
    // closed() or expire() can see completes exactly once. The wait is started under
    // the mutex, before the splice, so an expiry that comes at once finds the waiter.
    // On a pool already closed, the completion's post is what may throw (the handler
    // then goes unrun).
    template <class Handler>
    [[nodiscard]] bool add(const std::weak_ptr<closing>& self, Handler&& handler, std::optional<time_point> deadline) {
        auto handler_executor = boost::asio::get_associated_executor(handler, executor_);
        using work_type = outstanding_work<decltype(handler_executor)>;
        std::list<waiter> made;
        waiter& w = made.emplace_back(waiter{0, close_handler(std::forward<Handler>(handler)), nullptr,
                                             std::make_shared<work_type>(executor_, handler_executor)});
        if (deadline) w.deadline = std::make_unique<timer_type>(executor_, *deadline);
        std::unique_lock lock(mutex_);
        if (closed_) {
            lock.unlock();
            deliver(std::move(w.handler), {}, std::move(w.work));
            return false;
        }
        const std::uint64_t id = last_id_ + 1;
        if (w.deadline) {
            w.deadline->async_wait([self, id](const boost::system::error_code& ec) {
                if (ec) return;
                if (auto alive = self.lock()) alive->expire(id);
            });
        }
        w.id = last_id_ = id;
        waiters_.splice(waiters_.end(), made);
        return true;
    }

    // The pool has closed (the actor, once): every waiter completes with success.
    void closed() {
        std::list<waiter> done;
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            done.swap(waiters_);
        }
        for (waiter& w : done) deliver(std::move(w.handler), {}, std::move(w.work));
    }

    // The execution context is shutting down: waiters are destroyed without invocation.
    void abandon() noexcept {
        std::list<waiter> dropped;
        std::lock_guard lock(mutex_);
        dropped.swap(waiters_);
    }

private:
    template <class HandlerExecutor>
    struct outstanding_work {
        outstanding_work(const boost::asio::any_io_executor& pool, const HandlerExecutor& handler)
            : on_pool(pool), on_handler(handler) {}
        boost::asio::executor_work_guard<boost::asio::any_io_executor> on_pool;
        boost::asio::executor_work_guard<HandlerExecutor> on_handler;
    };

    struct waiter {
        std::uint64_t id;
        close_handler handler;
        std::unique_ptr<timer_type> deadline;
        std::shared_ptr<void> work;  // an outstanding_work, let go once the handler is on its executor
    };

    void expire(std::uint64_t id) {
        std::unique_lock lock(mutex_);
        for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
            if (it->id != id) continue;
            std::list<waiter> done;
            done.splice(done.begin(), waiters_, it);
            lock.unlock();
            waiter& w = done.front();
            return deliver(std::move(w.handler), make_error_code(error::timed_out), std::move(w.work));
        }
    }

    // Out of the caller first, then onto the handler's own executor; `work` (on both
    // executors) is held until the handler is there, so neither context's run() returns
    // in between.
    void deliver(close_handler h, boost::system::error_code ec, std::shared_ptr<void> work) {
        const core::stats s = stats_.read();
        close_report report;
        report.closed = !ec;
        report.leases_out = s.slots[static_cast<int>(core::slot_state::leased)];
        report.waiters_queued = s.queued_waiters;
        report.slots_spawning = s.slots[static_cast<int>(core::slot_state::spawning)];
        report.slots_retiring = s.slots[static_cast<int>(core::slot_state::retiring)];
        report.slots_checking = s.slots[static_cast<int>(core::slot_state::checking)];
        report.slots_resetting = s.slots[static_cast<int>(core::slot_state::resetting)];
        boost::asio::post(executor_, [h = std::move(h), ec, report, work = std::move(work)]() mutable {
            boost::asio::dispatch(boost::asio::append(std::move(h), ec, report));
            work.reset();  // the handler is on its executor now (dispatch posted it, or ran it)
        });
    }

    boost::asio::any_io_executor executor_;
    const stats_board& stats_;
    std::mutex mutex_;
    bool closed_ = false;
    std::uint64_t last_id_ = 0;
    std::list<waiter> waiters_;  // one node per waiting async_close call
};

}  // namespace fairpool::detail
