#pragma once
// Baseline (a): the classic blocking pool, as r2d2 (Rust) or most hand-written C++
// pools do it. Idle resources on a stack behind one std::mutex; an acquirer that finds
// none waits on a std::condition_variable; a release pushes the resource back and
// notifies one waiter.
//
// Its async_acquire is asynchronous in signature only: it BLOCKS the calling thread
// until a resource is idle, then invokes the handler inline, inside the initiating
// function (which Asio's rules for asynchronous operations forbid; it is what wrapping
// a blocking pool looks like). An Asio server cannot use it when a lease is held
// across a suspension point: with all io threads parked in acquire, no holder can run
// to release, and the program deadlocks. The scenarios that hold a lease across a
// suspension run it on one io thread per worker (scenarios/workers.hpp:
// io_threads_for), so it is measured where it works.
//
// Completing inside the initiating function is also unsafe with use_awaitable (the
// coroutine resumes inside the initiation, and the awaitable's frame is torn down
// under it): from a coroutine, call acquire_blocking() directly, as a user of a
// blocking pool would. The callback round trip uses async_acquire.
//
// Not fair: std::condition_variable (futex) does not wake in FIFO order, and a thread
// that releases and reacquires at once barges past the waiter it just notified.
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "lease.hpp"

namespace fairpool_bench {

template <class Resource>
class mutex_condvar_pool {
public:
    using resource_type = Resource;
    using lease_type = basic_lease<mutex_condvar_pool>;
    using acquire_signature = void(boost::system::error_code, lease_type);

    explicit mutex_condvar_pool(std::vector<Resource> resources) : resources_(std::move(resources)) {
        idle_.reserve(resources_.size());
        for (std::size_t i = resources_.size(); i-- > 0;) idle_.push_back(i);
    }
    mutex_condvar_pool(const mutex_condvar_pool&) = delete;
    mutex_condvar_pool& operator=(const mutex_condvar_pool&) = delete;

    // Blocks until a resource is idle; the handler runs inline.
    template <class Token>
    auto async_acquire(Token&& token) {
        return boost::asio::async_initiate<Token, acquire_signature>(
            [this](auto handler) { std::move(handler)(boost::system::error_code{}, acquire_blocking()); }, token);
    }

    lease_type acquire_blocking() {
        std::unique_lock lock(mutex_);
        available_.wait(lock, [this] { return !idle_.empty(); });
        const std::size_t i = idle_.back();
        idle_.pop_back();
        return lease_type(this, i);
    }

    Resource& resource(std::size_t i) noexcept { return resources_[i]; }

    void give_back(std::size_t i) noexcept {
        {
            std::lock_guard lock(mutex_);
            idle_.push_back(i);  // never reallocates: capacity is the pool size
        }
        available_.notify_one();
    }

private:
    std::vector<Resource> resources_;
    std::mutex mutex_;
    std::condition_variable available_;
    std::vector<std::size_t> idle_;
};

}  // namespace fairpool_bench
