#pragma once
// A pool of numbered test resources on a real io_context. Every resource gets a unique
// identity; the fixture records which were created, closed and destroyed, so tests can
// prove that a dirty resource is never handed out again.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <set>
#include <vector>

#include "fairpool/asio/pool.hpp"

namespace fairpool::testing {

struct resource_log {
    int created = 0;
    int closed = 0;
    int destroyed = 0;
    bool fail_creation = false;
};

// A resource that reports its own destruction.
class resource {
public:
    resource(int id, std::shared_ptr<resource_log> log) : id_(id), log_(std::move(log)) {}
    resource(resource&& other) noexcept : id_(other.id_), log_(std::move(other.log_)) {}
    resource& operator=(resource&&) = delete;
    ~resource() {
        if (log_) ++log_->destroyed;
    }
    [[nodiscard]] int id() const noexcept { return id_; }

private:
    int id_;
    std::shared_ptr<resource_log> log_;
};

using test_pool = pool<resource>;
using test_lease = lease<resource>;

// The outcome of one acquire, as delivered to its handler.
struct outcome {
    bool done = false;
    int completions = 0;
    boost::system::error_code ec;
    test_lease lease;
};

inline auto record(outcome& o) {
    return [&o](boost::system::error_code ec, test_lease l) {
        ++o.completions;
        o.done = true;
        o.ec = ec;
        o.lease = std::move(l);
    };
}

class adapter : public ::testing::Test {
protected:
    pool_options options(std::uint64_t max_slots, std::uint64_t min_slots = 0) {
        pool_options o;
        o.scheduler.max_slots = max_slots;
        o.scheduler.min_slots = min_slots;
        o.scheduler.spawn_backoff_initial = 1'000'000;  // 1 ms
        o.scheduler.spawn_backoff_max = 4'000'000;
        o.retire_grace = std::chrono::milliseconds(100);
        return o;
    }

    std::unique_ptr<test_pool> make_pool(const pool_options& o) {
        auto log = log_;
        return std::make_unique<test_pool>(
            io.get_executor(), o,
            [log]() -> boost::asio::awaitable<resource> {
                if (log->fail_creation) throw std::runtime_error("backend down");
                co_return resource(++log->created, log);
            },
            [log](resource&) -> boost::asio::awaitable<void> {
                ++log->closed;
                co_return;
            });
    }

    // A warm one-slot pool whose slot is leased to `holder`: the next acquire queues.
    std::unique_ptr<test_pool> one_slot_held(outcome& holder) {
        auto pool = make_pool(options(1, 1));
        settle();
        pool->async_acquire(record(holder));
        settle();
        return pool;
    }

    // Runs every handler that is ready, and those they make ready, without waiting:
    // queued acquires keep work outstanding, so io.run() would not return.
    void settle() {
        for (;;) {
            io.restart();
            if (io.poll() == 0) return;
        }
    }

    // Runs the io_context for a while (timers: deadlines, backoff, retire grace).
    void run_for(std::chrono::milliseconds d) {
        io.restart();
        io.run_for(d);
        settle();
    }

    boost::asio::io_context io;
    std::shared_ptr<resource_log> log_ = std::make_shared<resource_log>();
};

}  // namespace fairpool::testing
