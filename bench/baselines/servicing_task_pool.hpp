#pragma once
// Baseline (b): the "servicing task" design (the one fairpool's adapter replaced).
// All scheduling state (idle resources, a FIFO of waiting handlers) sits behind one
// std::mutex. An acquire that finds an idle resource and nobody waiting takes it and
// posts its completion; otherwise it queues its handler, type-erased in an
// any_completion_handler. A release pushes the resource back and, if anyone waits,
// flips an atomic `servicing` flag; whoever flips it from false posts one servicing
// task to the executor. The task repeatedly pairs the oldest waiter with an idle
// resource under the lock and dispatches the completion outside it, until one side
// is empty, then clears the flag under the same lock (so a release that lands after
// that sees the flag down and posts again: no lost wake-up).
//
// FIFO, no barging (a newcomer queues behind waiters even when a resource is idle);
// costs: one lock per acquire and per release, a post per immediate grant, a servicing
// post per release that finds waiters, and the waiter deque's allocations.
#include <atomic>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "lease.hpp"

namespace fairpool_bench {

template <class Resource>
class servicing_task_pool {
public:
    using resource_type = Resource;
    using executor_type = boost::asio::any_io_executor;
    using lease_type = basic_lease<servicing_task_pool>;
    using acquire_signature = void(boost::system::error_code, lease_type);

    servicing_task_pool(executor_type ex, std::vector<Resource> resources)
        : ex_(std::move(ex)), resources_(std::move(resources)) {
        idle_.reserve(resources_.size());
        for (std::size_t i = resources_.size(); i-- > 0;) idle_.push_back(i);
    }
    servicing_task_pool(const servicing_task_pool&) = delete;
    servicing_task_pool& operator=(const servicing_task_pool&) = delete;

    template <class Token>
    auto async_acquire(Token&& token) {
        return boost::asio::async_initiate<Token, acquire_signature>(
            [this](auto handler) { start(boost::asio::any_completion_handler<acquire_signature>(std::move(handler))); },
            token);
    }

    Resource& resource(std::size_t i) noexcept { return resources_[i]; }

    void give_back(std::size_t i) noexcept {
        bool wake = false;
        {
            std::lock_guard lock(mutex_);
            idle_.push_back(i);
            wake = !waiters_.empty();
        }
        if (wake) schedule_service();
    }

private:
    using handler_type = boost::asio::any_completion_handler<acquire_signature>;

    void start(handler_type handler) {
        std::optional<std::size_t> granted;
        bool wake = false;
        {
            std::lock_guard lock(mutex_);
            if (waiters_.empty() && !idle_.empty()) {
                granted = idle_.back();
                idle_.pop_back();
            } else {
                waiters_.push_back(std::move(handler));
                wake = !idle_.empty();  // only while a service is already due; harmless
            }
        }
        if (granted)
            complete(std::move(handler), *granted, /*may_run_inline=*/false);
        else if (wake)
            schedule_service();
    }

    void schedule_service() {
        if (!servicing_.exchange(true, std::memory_order_acq_rel))
            boost::asio::post(ex_, [this] { service(); });
    }

    void service() {
        for (;;) {
            // Move-constructed, never move-assigned: Boost 1.81's any_completion_handler
            // move assignment copies from an lvalue of itself and recurses.
            std::optional<handler_type> handler;
            std::size_t i = 0;
            {
                std::lock_guard lock(mutex_);
                if (waiters_.empty() || idle_.empty()) {
                    servicing_.store(false, std::memory_order_release);
                    return;
                }
                handler.emplace(std::move(waiters_.front()));
                waiters_.pop_front();
                i = idle_.back();
                idle_.pop_back();
            }
            complete(std::move(*handler), i, /*may_run_inline=*/true);
        }
    }

    // Runs the handler on the pool's executor: inline (dispatch) inside the servicing
    // task, never from the initiating function (post). Simplification: a handler bound
    // to another executor (e.g. a strand) is not honoured; Boost 1.81's
    // any_completion_executor cannot be handed to post(). Every handler in
    // the scenarios runs on the io_context's executor anyway.
    void complete(handler_type handler, std::size_t i, bool may_run_inline) {
        auto f = [h = std::move(handler), l = lease_type(this, i)]() mutable {
            std::move(h)(boost::system::error_code{}, std::move(l));
        };
        if (may_run_inline) boost::asio::dispatch(ex_, std::move(f));
        else boost::asio::post(ex_, std::move(f));
    }

    executor_type ex_;
    std::vector<Resource> resources_;
    std::mutex mutex_;
    std::vector<std::size_t> idle_;
    std::deque<handler_type> waiters_;
    std::atomic<bool> servicing_{false};
};

}  // namespace fairpool_bench
