#pragma once
// A service of the pool's execution context that knows its live pools. When the
// context shuts down (io_context destroyed with work pending), each pool abandons the
// acquires still pending in it: their handlers are destroyed without being invoked, as
// Asio does with its own pending operations. Without this, a queued acquire's handler
// (which may own the pool) and the pool (which owns the acquire) would keep each other
// alive forever.
#include <boost/asio/execution_context.hpp>
#include <memory>
#include <mutex>
#include <vector>

namespace fairpool::detail {

class abandonable {
public:
    virtual void abandon_pending() noexcept = 0;

protected:
    ~abandonable() = default;
};

class pool_registry final : public boost::asio::execution_context::service {
public:
    static inline boost::asio::execution_context::id id;

    explicit pool_registry(boost::asio::execution_context& context) : service(context) {}

    // Throws std::bad_alloc if the list cannot grow, with the pool not added (only
    // expired entries, which nothing reads, may have been dropped).
    void add(std::weak_ptr<abandonable> pool) {
        std::lock_guard lock(mutex_);
        std::erase_if(pools_, [](const std::weak_ptr<abandonable>& p) { return p.expired(); });
        pools_.push_back(std::move(pool));
    }

private:
    void shutdown() override {
        std::vector<std::weak_ptr<abandonable>> pools;
        {
            std::lock_guard lock(mutex_);
            pools.swap(pools_);
        }
        for (const auto& p : pools)
            if (auto pool = p.lock()) pool->abandon_pending();
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<abandonable>> pools_;
};

}  // namespace fairpool::detail
