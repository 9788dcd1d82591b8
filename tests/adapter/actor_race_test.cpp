// The actor's bounds with more than one thread: a pool on an io_context run by two
// threads, whose completions start the next command on the other thread while a drain
// is still serving (the audit of the actor protocol, branch audit-actor).
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/strand.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "fairpool/asio/detail/admission.hpp"
#include "fixture.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;
constexpr auto relaxed = std::memory_order_relaxed;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::strtoull(v, nullptr, 10);
}

class actor_race : public adapter {
protected:
    // Runs the io_context on `threads` threads until `done()` (checked every
    // millisecond, at most `limit`), then stops it. False if it timed out.
    template <class Done>
    bool run_on_threads(int threads, Done done, std::chrono::seconds limit = std::chrono::seconds(120)) {
        auto guard = boost::asio::make_work_guard(io);
        io.restart();
        std::vector<std::thread> runners;
        for (int i = 0; i < threads; ++i) runners.emplace_back([this] { io.run(); });
        const auto give_up = std::chrono::steady_clock::now() + limit;
        bool ok = true;
        while (!done()) {
            if (std::chrono::steady_clock::now() > give_up) {
                ok = false;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        io.stop();
        for (auto& t : runners) t.join();
        return ok;
    }

    // Runs the io_context on two threads until `total` links completed, each once and
    // with an outcome its test expects (`other` counts the rest).
    void every_link_completed_once(const std::atomic<std::size_t>& completed, const std::atomic<std::size_t>& other,
                                   std::size_t total) {
        EXPECT_TRUE(run_on_threads(2, [&] { return completed.load(relaxed) == total; }));
        EXPECT_EQ(completed.load(), total);
        EXPECT_EQ(other.load(), 0u);
    }

    void close(std::unique_ptr<test_pool>& pool, outcome& holder) {
        holder.lease.release();
        pool.reset();
        settle();
    }

    // A one-slot pool whose slot is leased for the whole test (every acquire is queued
    // or rejected, none granted), L = max_waiters + mailbox_capacity.
    std::unique_ptr<test_pool> starved_pool(std::uint64_t max_waiters, std::uint32_t mailbox_capacity,
                                            outcome& holder) {
        pool_options o = options(1, 1);
        o.max_waiters = max_waiters;
        o.mailbox_capacity = mailbox_capacity;
        auto pool = make_pool(o);
        settle();
        pool->async_acquire(record(holder));
        settle();
        EXPECT_TRUE(holder.lease);
        return pool;
    }
};

// Chains of acquires, L of them, each through a new handle that is reset at once (an
// acquire outstanding: one deregistration); each completion, on one of the two
// io_context threads, starts the next link while a drain may still be serving
// acquires on the other. Every acquire completes once (saturated, deregistered, or busy:
// admission refuses while too many deregistrations are queued), and no deregistration
// may find its queue (2(L + 1)) full: a failed push aborts the process ("fairpool
// invariant broken: pushed", every run before admission counted them).
TEST_F(actor_race, deregistrations_from_two_threads_never_fill_their_queue) {
    outcome holder;
    auto pool = starved_pool(4, 12, holder);  // L = 16: 34 deregistrations queued at most
    const std::size_t total = env_or("FAIRPOOL_ACTOR_RACE_CYCLES", 200'000);
    std::atomic<std::size_t> started{0};
    std::atomic<std::size_t> completed{0};
    std::atomic<std::size_t> other{0};
    std::function<void()> start = [&] {
        if (started.fetch_add(1, relaxed) >= total) return;
        auto tenant = pool->make_handle();
        tenant.async_acquire([&](error_code ec, test_lease l) {
            if (l || (ec != make_error_code(error::saturated) && ec != make_error_code(error::deregistered) &&
                      ec != make_error_code(error::busy)))
                other.fetch_add(1, relaxed);
            completed.fetch_add(1, relaxed);
            start();
        });
        tenant.reset();
    };
    for (int i = 0; i < 16; ++i) start();
    every_link_completed_once(completed, other, total);
    close(pool, holder);
}

// The same for cancels: each link's acquire is bound to a strand (its handler and the
// emit run there, as Asio requires) and cancelled at once (the cancel is pushed whether
// or not the actor has completed the acquire yet).
TEST_F(actor_race, cancels_from_two_threads_never_fill_their_queue) {
    outcome holder;
    auto pool = starved_pool(4, 12, holder);  // L = 16: 34 cancels queued at most
    const std::size_t total = env_or("FAIRPOOL_ACTOR_RACE_CYCLES", 200'000);
    struct chain {
        explicit chain(boost::asio::io_context& io) : strand(boost::asio::make_strand(io)) {}
        boost::asio::strand<boost::asio::io_context::executor_type> strand;
        boost::asio::cancellation_signal signal;
    };
    std::vector<std::unique_ptr<chain>> chains;
    for (int i = 0; i < 16; ++i) chains.push_back(std::make_unique<chain>(io));
    std::atomic<std::size_t> started{0};
    std::atomic<std::size_t> completed{0};
    std::atomic<std::size_t> other{0};
    std::function<void(chain&)> start = [&](chain& c) {
        if (started.fetch_add(1, relaxed) >= total) return;
        pool->async_acquire(boost::asio::bind_cancellation_slot(
            c.signal.slot(), boost::asio::bind_executor(c.strand, [&](error_code ec, test_lease l) {
                if (l || (ec != boost::asio::error::operation_aborted && ec != make_error_code(error::saturated) &&
                          ec != make_error_code(error::busy)))
                    other.fetch_add(1, relaxed);
                completed.fetch_add(1, relaxed);
                start(c);
            })));
        c.signal.emit(boost::asio::cancellation_type::terminal);
    };
    for (auto& c : chains) boost::asio::post(c->strand, [&, p = c.get()] { start(*p); });
    every_link_completed_once(completed, other, total);
    close(pool, holder);
}


// A refused admission leaves no trace that a concurrent one can see (admission.hpp:
// exact). L = 1: the main thread holds the one place, gives it back and asks again, in
// rounds; another thread keeps asking, and when admitted gives its place back at once.
// The main thread may be refused only while the other holds the place: then the other
// counted an admission in that round (checked once its attempt is over).
TEST(admission_race, a_refused_admission_never_refuses_another) {
    const std::size_t rounds = env_or("FAIRPOOL_ACTOR_RACE_CYCLES", 200'000) * 50;
    detail::admission a(1);
    ASSERT_TRUE(a.admit(nullptr));
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> attempt{0};  // odd while the other thread is in admit/delivered
    std::atomic<std::uint64_t> other_admitted{0};
    std::thread other([&] {
        while (!stop.load()) {
            attempt.fetch_add(1);
            if (a.admit(nullptr)) {
                other_admitted.fetch_add(1);
                a.delivered(nullptr, true);
            }
            attempt.fetch_add(1);
        }
    });
    while (attempt.load() < 1000) {
    }
    std::size_t refused_while_free = 0;
    std::size_t refused = 0;
    for (std::size_t i = 0; i < rounds; ++i) {
        const std::uint64_t admitted_before = other_admitted.load();
        a.delivered(nullptr, true);
        while (!a.admit(nullptr)) {
            ++refused;
            const std::uint64_t at = attempt.load();
            if (at % 2 != 0)
                while (attempt.load() == at) {
                }
            if (other_admitted.load() == admitted_before) ++refused_while_free;
        }
    }
    stop.store(true);
    other.join();
    EXPECT_EQ(refused_while_free, 0u) << "of " << rounds << " rounds, " << refused << " refusals, "
                                      << refused_while_free << " with the place free";
    std::printf("rounds %zu, refused %zu (with the place free: %zu), the other admitted %llu of %llu\n", rounds, refused,
                refused_while_free, static_cast<unsigned long long>(other_admitted.load()),
                static_cast<unsigned long long>(attempt.load() / 2));
}

}  // namespace
}  // namespace fairpool::testing
