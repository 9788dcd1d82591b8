#pragma once
// Baseline (c): notify-and-retry, the Boost.MySQL connection_pool / bb8 behaviour.
// Idle resources on a stack behind a std::mutex. An acquire that finds one takes it
// (and posts its completion, never completing inside the initiating function);
// otherwise it sleeps on one shared steady_timer that never expires (the "notifier"),
// under the lock. A release pushes the resource back and, if anyone sleeps, wakes the
// oldest sleeper with timer.cancel_one(). The woken operation then RETRIES like a
// newcomer: if someone else took the resource first (a caller that released and
// immediately reacquired, or any new arrival), it goes back to sleep, at the back of
// the line. Barging is allowed, and is what the inversion scenario counts.
//
// Costs: a lock per acquire and release, a timer wait (a reactor operation) per
// sleep, a posted completion per immediate grant, and a wake-up per release with
// sleepers; repeated sleeps for a waiter that keeps losing.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "lease.hpp"

namespace fairpool_bench {

template <class Resource>
class notify_retry_pool {
public:
    using resource_type = Resource;
    using executor_type = boost::asio::any_io_executor;
    using lease_type = basic_lease<notify_retry_pool>;
    using acquire_signature = void(boost::system::error_code, lease_type);

    notify_retry_pool(executor_type ex, std::vector<Resource> resources)
        : ex_(std::move(ex)), resources_(std::move(resources)), notifier_(ex_) {
        notifier_.expires_at(std::chrono::steady_clock::time_point::max());
        idle_.reserve(resources_.size());
        for (std::size_t i = resources_.size(); i-- > 0;) idle_.push_back(i);
    }
    notify_retry_pool(const notify_retry_pool&) = delete;
    notify_retry_pool& operator=(const notify_retry_pool&) = delete;

    template <class Token>
    auto async_acquire(Token&& token) {
        return boost::asio::async_compose<Token, acquire_signature>(acquire_op{this}, token, ex_);
    }

    Resource& resource(std::size_t i) noexcept { return resources_[i]; }

    void give_back(std::size_t i) noexcept {
        std::lock_guard lock(mutex_);
        idle_.push_back(i);
        if (sleepers_ > 0) sleepers_ -= notifier_.cancel_one();
    }

private:
    struct acquire_op {
        notify_retry_pool* pool;
        enum { starting, posted, sleeping } state = starting;
        std::size_t index = 0;

        template <class Self>
        void operator()(Self& self, boost::system::error_code = {}) {
            switch (state) {
            case starting: {
                std::unique_lock lock(pool->mutex_);
                if (pool->try_take(index)) {
                    lock.unlock();
                    state = posted;
                    boost::asio::post(pool->ex_, std::move(self));
                    return;
                }
                state = sleeping;
                pool->sleep(std::move(self));  // still under the lock
                return;
            }
            case posted:
                self.complete(boost::system::error_code{}, lease_type(pool, index));
                return;
            case sleeping: {  // woken (operation_aborted from cancel_one): retry
                std::unique_lock lock(pool->mutex_);
                if (pool->try_take(index)) {
                    lock.unlock();
                    self.complete(boost::system::error_code{}, lease_type(pool, index));
                    return;
                }
                pool->sleep(std::move(self));  // lost the race: back of the line
                return;
            }
            }
        }
    };

    // Both under mutex_.
    bool try_take(std::size_t& index) noexcept {
        if (idle_.empty()) return false;
        index = idle_.back();
        idle_.pop_back();
        return true;
    }
    template <class Self>
    void sleep(Self&& self) {
        ++sleepers_;
        notifier_.async_wait(std::forward<Self>(self));
    }

    executor_type ex_;
    std::vector<Resource> resources_;
    std::mutex mutex_;
    std::vector<std::size_t> idle_;
    boost::asio::steady_timer notifier_;  // touched only under mutex_
    std::size_t sleepers_ = 0;
};

}  // namespace fairpool_bench
