// Lifetimes at the edges: what is left of a pool once its objects and its io_context
// are gone. Each case is deterministic (no sleeps, no races): the order of events is
// forced with explicit hand-offs between threads.
#include <gtest/gtest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "fairpool/asio/pool.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

pool_options one_slot() {
    pool_options o;
    o.scheduler.max_slots = 1;
    o.scheduler.min_slots = 1;
    return o;
}

auto make_int_pool(boost::asio::io_context& io) {
    return std::make_unique<pool<int>>(io.get_executor(), one_slot(),
                                       []() -> boost::asio::awaitable<int> { co_return 1; });
}

// A one-shot gate between two threads.
class gate {
public:
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        cv_.notify_all();
    }
    void wait() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool open_ = false;
};

// The pool object is dropped while an acquire is queued, and its io_context is then
// destroyed without running again (a server stopping its event loop). Asio destroys
// the handlers it holds; the pool's state, its queued operation and that operation's
// handler must go with them, not stay alive in a cycle.
TEST(adapter_lifetime, queued_acquire_does_not_outlive_a_destroyed_io_context) {
    std::weak_ptr<const void> state;
    auto handler_alive = std::make_shared<int>(0);
    std::weak_ptr<int> handler_probe = handler_alive;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->lifetime();
        io.poll();  // prewarmed
        lease<int> held;
        p->async_acquire([&held](error_code ec, lease<int> l) {
            ASSERT_FALSE(ec);
            held = std::move(l);
        });
        io.poll();
        ASSERT_TRUE(held);
        p->async_acquire([keep = std::move(handler_alive)](error_code, lease<int>) {});  // queued
        io.poll();
        held.release();
        p.reset();
    }  // io_context destroyed, its pending handlers with it
    EXPECT_TRUE(handler_probe.expired()) << "the queued acquire's handler was never destroyed";
    EXPECT_TRUE(state.expired()) << "the pool's state outlived its io_context (a reference cycle)";
}

// The handler runs on another executor (here a second io_context; use_future does the
// same on the system executor). Once it has run, the caller owns everything it got:
// it may drop the pool and destroy the pool's io_context. The adapter must not still
// hold the pool's state on the handler's thread then, or the state's last reference
// goes there and its strand is destroyed after its io_context (use after free).
TEST(adapter_lifetime, nothing_of_the_pool_is_held_after_a_foreign_handler_returns) {
    boost::asio::io_context other;
    auto other_work = boost::asio::make_work_guard(other);
    std::thread other_thread([&other] { other.run(); });

    std::weak_ptr<const void> state;
    gate delivered, pool_gone;
    std::optional<lease<int>> got;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->lifetime();
        io.poll();
        p->async_acquire(boost::asio::bind_executor(other, [&](error_code ec, lease<int> l) {
            EXPECT_FALSE(ec);
            got.emplace(std::move(l));
            delivered.open();
            pool_gone.wait();  // the caller tears everything down before this returns
        }));
        io.poll();  // the grant is posted to `other`, where the handler now waits
        delivered.wait();
        got.reset();  // the lease goes back
        p.reset();
        io.poll();
    }  // the pool's io_context is destroyed while the handler is still on the stack
    const bool expired_before_return = state.expired();
    pool_gone.open();
    other_work.reset();
    other_thread.join();
    EXPECT_TRUE(expired_before_return)
        << "the delivery still held the pool's state while its handler ran; it is destroyed after the io_context";
    EXPECT_TRUE(state.expired());
}

}  // namespace
}  // namespace fairpool::testing
