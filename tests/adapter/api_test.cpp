// What users do that the other suites do not: pools on executors other than an
// io_context's, handlers and hooks that throw.
#include <gtest/gtest.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <string>
#include <vector>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "fairpool/asio/pool.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

pool_options slots(std::uint64_t n) {
    pool_options o;
    o.max_slots = n;
    o.min_slots = 0;
    o.retire_grace = std::chrono::milliseconds(100);
    return o;
}

template <class Executor>
void many_acquires_complete_once_each(Executor ex, int n) {
    std::atomic<int> outcomes{0}, grants{0}, created{0}, closed{0};
    auto p = std::make_unique<pool<int>>(
        ex, slots(2), [&]() -> boost::asio::awaitable<int> { co_return ++created; },
        [&](int&) -> boost::asio::awaitable<void> { ++closed; co_return; });
    std::promise<void> all;
    for (int i = 0; i < n; ++i)
        p->async_acquire(std::chrono::seconds(10), [&](error_code ec, pool<int>::lease_type l) {
            if (!ec && l) ++grants;
            if (++outcomes == n) all.set_value();
        });
    ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
    auto f = p->async_close(boost::asio::use_future);
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(outcomes.load(), n);
    EXPECT_EQ(grants.load(), n);
    p.reset();
    EXPECT_EQ(created.load(), closed.load());
}

TEST(adapter_api, a_pool_on_a_thread_pool_completes_every_acquire_once) {
    boost::asio::thread_pool tp(2);
    many_acquires_complete_once_each(tp.get_executor(), 500);
    tp.join();
}

TEST(adapter_api, a_pool_on_a_strand_completes_every_acquire_once) {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::thread a([&] { io.run(); }), b([&] { io.run(); });
    many_acquires_complete_once_each(boost::asio::make_strand(io), 500);
    work.reset();
    a.join();
    b.join();
}

TEST(adapter_api, a_handler_that_throws_leaves_the_pool_working) {
    boost::asio::io_context io;
    auto p = std::make_unique<pool<int>>(io.get_executor(), slots(1), []() -> boost::asio::awaitable<int> { co_return 7; });
    p->async_acquire([](error_code, pool<int>::lease_type) { throw std::runtime_error("user"); });
    EXPECT_THROW(io.run(), std::runtime_error);
    io.restart();
    io.poll();
    int got = 0;
    p->async_acquire([&](error_code ec, pool<int>::lease_type l) { if (!ec && l) got = *l; });
    io.restart();
    io.poll();
    EXPECT_EQ(got, 7);
    bool closed = false;
    p->async_close([&](error_code ec, close_report r) { closed = !ec && r.closed; });
    io.restart();
    io.run();
    EXPECT_TRUE(closed);
}


// An allocator that counts the blocks it has out, for a handler's associated allocator.
template <class T>
struct balance_allocator {
    using value_type = T;
    std::atomic<int>* live;
    explicit balance_allocator(std::atomic<int>* c) noexcept : live(c) {}
    template <class U>
    balance_allocator(const balance_allocator<U>& other) noexcept : live(other.live) {}  // NOLINT
    T* allocate(std::size_t n) {
        ++*live;
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        --*live;
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const balance_allocator<U>& other) const noexcept { return live == other.live; }
};

TEST(adapter_api, every_block_a_handlers_allocator_gives_is_freed_once_on_every_path) {
    std::atomic<int> live{0};
    std::atomic<int> outcomes{0};
    const auto h = [&](auto bind_ex) {
        return bind_ex(boost::asio::bind_allocator(balance_allocator<void>(&live),
                                                   [&](error_code, pool<int>::lease_type) { ++outcomes; }));
    };
    boost::asio::io_context io;
    boost::asio::thread_pool other(1);
    auto strand = boost::asio::make_strand(io);
    {
        pool_options o = slots(1);
        o.max_waiters = 1;
        o.mailbox_capacity = 1;
        auto p = std::make_unique<pool<int>>(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 1; });
        const auto plain = [](auto x) { return x; };
        const auto on_strand = [&](auto x) { return boost::asio::bind_executor(strand, x); };
        const auto on_other = [&](auto x) { return boost::asio::bind_executor(other, x); };
        int expected = 0;
        for (auto bind : {0, 1, 2}) {
            const auto go = [&](auto b) {
                p->async_acquire(h(b));                        // granted
                p->async_try_acquire(h(b));                    // timeout or grant
                p->async_acquire(h(b));                        // busy, maybe
                auto op = p->async_acquire(boost::asio::deferred);
                std::move(op)(h(b));
                expected += 4;
            };
            if (bind == 0) go(plain);
            if (bind == 1) go(on_strand);
            if (bind == 2) go(on_other);
            for (int i = 0; i < 1000 && outcomes.load() < expected; ++i) {
                io.restart();
                io.poll();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        EXPECT_EQ(outcomes.load(), expected);
        auto f = p->async_close(boost::asio::bind_executor(other, boost::asio::use_future));
        for (int i = 0; i < 1000 && f.wait_for(std::chrono::seconds(0)) != std::future_status::ready; ++i) {
            io.restart();
            io.poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    }
    other.join();
    EXPECT_EQ(live.load(), 0);
}

// A resource whose move throws at its throw_at-th move (0: never).
struct fragile {
    static inline int throw_at = 0;
    int moves = 0;
    fragile() = default;
    fragile(fragile&& o) : moves(o.moves + 1) {  // NOLINT: may throw, on purpose
        if (moves == throw_at) throw std::runtime_error("move");
    }
    fragile& operator=(fragile&&) = delete;
};

// Runs `io` until `done` or a second has passed.
template <class Done>
void run_until(boost::asio::io_context& io, Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_for(std::chrono::milliseconds(2));
    }
}

// How many moves a fragile resource takes from the factory into its slot (0 if none
// was granted).
int moves_into_a_slot() {
    int moves = 0;
    boost::asio::io_context io;
    fragile::throw_at = 0;
    pool<fragile> p(io.get_executor(), slots(1), []() -> boost::asio::awaitable<fragile> { co_return fragile(); });
    p.async_acquire([&](error_code ec, pool<fragile>::lease_type l) {
        if (!ec) moves = l->moves;
    });
    run_until(io, [&] { return moves != 0; });
    return moves;
}

TEST(adapter_api, a_resource_whose_move_into_its_slot_throws_is_a_failed_spawn) {
    const int moves_to_slot = moves_into_a_slot();
    ASSERT_GT(moves_to_slot, 0);
    boost::asio::io_context io;
    fragile::throw_at = moves_to_slot;  // the move into the slot throws
    auto o = slots(1);
    auto p = std::make_unique<pool<fragile>>(io.get_executor(), o,
                                             []() -> boost::asio::awaitable<fragile> { co_return fragile(); });
    int outcomes = 0;
    error_code got;
    p->async_acquire(std::chrono::milliseconds(20), [&](error_code ec, pool<fragile>::lease_type) {
        ++outcomes;
        got = ec;
    });
    run_until(io, [&] { return outcomes != 0; });
    EXPECT_EQ(outcomes, 1);
    EXPECT_EQ(got, make_error_code(error::timeout));
    EXPECT_GE(p->stats().spawn_failures, 1U);
    bool closed = false;
    p->async_close(std::chrono::milliseconds(200), [&](error_code ec, close_report) { closed = !ec; });
    run_until(io, [&] { return closed; });
    EXPECT_TRUE(closed) << "a slot left spawning keeps the close waiting";
    fragile::throw_at = 0;
}

TEST(adapter_api, a_resource_whose_move_out_of_its_slot_throws_still_retires) {
    const int moves_to_slot = moves_into_a_slot();
    ASSERT_GT(moves_to_slot, 0);
    boost::asio::io_context io;
    fragile::throw_at = moves_to_slot + 1;  // the move out of the slot, at its retirement, throws
    int closes = 0;
    auto p = std::make_unique<pool<fragile>>(
        io.get_executor(), slots(1), []() -> boost::asio::awaitable<fragile> { co_return fragile(); },
        [&](fragile&) -> boost::asio::awaitable<void> {
            ++closes;
            co_return;
        });
    int outcomes = 0;
    p->async_acquire([&](error_code ec, pool<fragile>::lease_type l) {
        ++outcomes;
        EXPECT_FALSE(ec);
        l.mark_dirty();  // retired when released
    });
    run_until(io, [&] { return outcomes != 0; });
    ASSERT_EQ(outcomes, 1);
    bool closed = false;
    p->async_close(std::chrono::milliseconds(200), [&](error_code ec, close_report) { closed = !ec; });
    run_until(io, [&] { return closed; });
    EXPECT_TRUE(closed) << "a slot left retiring keeps the close waiting";
    EXPECT_EQ(p->stats().slots_retiring, 0U);
    fragile::throw_at = 0;
}

TEST(adapter_api, a_thread_pool_destroyed_with_an_acquire_queued_frees_it) {
    std::unique_ptr<pool<int>> p;
    pool<int>::lease_type held;
    {
        boost::asio::thread_pool tp(1);
        p = std::make_unique<pool<int>>(tp.get_executor(), slots(1), []() -> boost::asio::awaitable<int> { co_return 1; });
        std::promise<void> got;
        p->async_acquire([&](error_code ec, pool<int>::lease_type l) { EXPECT_FALSE(ec); held = std::move(l); got.set_value(); });
        got.get_future().wait();
        p->async_acquire([](error_code, pool<int>::lease_type) { ADD_FAILURE() << "ran"; });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        tp.stop();
    }
    held.release();
    p.reset();
}


// resources.hpp: each hook call runs on a strand of its own. On an io_context that
// strand is made over the context's own executor, whose strand fits inside an
// any_io_executor: a strand over the type-erased executor does not, and every copy of
// the hook's executor (the coroutine machinery makes dozens) allocated (51 allocations
// a check instead of 18). On any other executor it is a strand over the pool's.
TEST(adapter_api, a_hooks_executor_is_a_strand_over_the_io_contexts_own_executor) {
    using io_strand = boost::asio::strand<boost::asio::io_context::executor_type>;
    using erased_strand = boost::asio::strand<boost::asio::any_io_executor>;
    struct seen {
        bool io = false, erased = false, running = false;
    };
    const auto factory = [](seen& s) {
        return [&s]() -> boost::asio::awaitable<int> {
            const auto ex = co_await boost::asio::this_coro::executor;
            s.io = ex.target<io_strand>() != nullptr;
            s.erased = ex.target<erased_strand>() != nullptr;
            if (s.io) s.running = ex.target<io_strand>()->running_in_this_thread();
            co_return 1;
        };
    };
    {
        boost::asio::io_context io;
        seen s;
        // Through an any_io_executor, as most servers hold their executor.
        pool<int> p(boost::asio::any_io_executor(io.get_executor()), slots(1), factory(s));
        bool granted = false;
        p.async_acquire([&](error_code ec, pool<int>::lease_type) { granted = !ec; });
        run_until(io, [&] { return granted; });
        ASSERT_TRUE(granted);
        EXPECT_TRUE(s.io);
        EXPECT_FALSE(s.erased);
        EXPECT_TRUE(s.running);
    }
    {
        boost::asio::thread_pool tp(1);
        seen s;
        pool<int> p(tp.get_executor(), slots(1), factory(s));
        std::promise<void> got;
        p.async_acquire([&](error_code ec, pool<int>::lease_type) {
            EXPECT_FALSE(ec);
            got.set_value();
        });
        ASSERT_EQ(got.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
        EXPECT_FALSE(s.io);
        EXPECT_TRUE(s.erased);
        auto closed = p.async_close(boost::asio::use_future);
        ASSERT_EQ(closed.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    }
}


// pool.hpp: an empty handle (default-constructed, reset or moved from) has id() 0, and a
// moved-from one acquires nothing (it throws std::logic_error).
TEST(adapter_api, a_moved_from_handle_is_empty_with_id_zero) {
    boost::asio::io_context io;
    pool<int> p(io.get_executor(), slots(1), []() -> boost::asio::awaitable<int> { co_return 1; });
    auto a = p.make_handle(handle_options{.weight = 3, .max_leases = 2, .name = "a"});
    const auto id = a.id();
    ASSERT_NE(id, 0U);
    auto b = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): what is left of it is the point
    EXPECT_EQ(a.id(), 0U);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(b.id(), id);
    auto c = p.make_handle();
    c = std::move(b);
    EXPECT_EQ(b.id(), 0U);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(c.id(), id);
}

// Many threads acquiring, cancelling, timing out, replacing handles and releasing dirty
// on a pool whose executor is not an io_context's: every drain is posted. Every acquire
// completes exactly once and the close gets every resource back.
template <class Executor>
void churn_on(Executor ex, int producers, int per_producer) {
    std::atomic<int> issued{0}, outcomes{0}, created{0}, destroyed{0}, in_use{0}, doubled{0};
    struct res {
        std::atomic<int>* destroyed;
        bool live = true;
        explicit res(std::atomic<int>* d) : destroyed(d) {}
        res(res&& o) noexcept : destroyed(o.destroyed) { o.live = false; }
        ~res() { if (live) ++*destroyed; }
    };
    pool_options o;
    o.max_slots = 3;
    o.max_waiters = 64;
    o.mailbox_capacity = 64;
    o.retire_grace = std::chrono::milliseconds(50);
    auto p = std::make_unique<pool<res>>(
        ex, o, [&]() -> boost::asio::awaitable<res> { ++created; co_return res(&destroyed); },
        [](res&) -> boost::asio::awaitable<void> { co_return; });
    std::vector<std::thread> threads;
    for (int t = 0; t < producers; ++t)
        threads.emplace_back([&, t] {
            auto h = p->make_handle();
            auto strand = boost::asio::make_strand(ex);
            unsigned seed = 1234 + t;
            const auto next = [&seed] { seed = seed * 1103515245 + 12345; return (seed >> 16) & 0x7fff; };
            for (int i = 0; i < per_producer; ++i) {
                ++issued;
                const unsigned kind = next() % 5;
                const bool dirty = next() % 7 == 0;
                auto done = [&, dirty](error_code ec, typename pool<res>::lease_type l) {
                    ++outcomes;
                    if (!ec) {
                        if (in_use.fetch_add(1) >= 3) ++doubled;
                        if (dirty) l.mark_dirty();
                        in_use.fetch_sub(1);
                    }
                };
                if (kind == 0) p->async_acquire(done);
                else if (kind == 1) h.async_acquire(std::chrono::microseconds(200), done);
                else if (kind == 2) {
                    auto sig = std::make_shared<boost::asio::cancellation_signal>();
                    h.async_acquire(boost::asio::bind_cancellation_slot(
                        sig->slot(), boost::asio::bind_executor(strand, [sig, done](error_code ec, typename pool<res>::lease_type l) {
                            done(ec, std::move(l));
                        })));
                    boost::asio::post(strand, [sig] { sig->emit(boost::asio::cancellation_type::terminal); });
                } else if (kind == 3) {
                    h.async_acquire(done);
                    if (next() % 4 == 0) h = p->make_handle();  // deregisters its queued waiters
                } else {
                    h.async_acquire(std::chrono::milliseconds(5), done);
                }
                if (issued.load() - outcomes.load() > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    for (auto& t : threads) t.join();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (outcomes.load() < issued.load() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(outcomes.load(), issued.load());
    EXPECT_EQ(doubled.load(), 0);
    auto f = p->async_close(boost::asio::use_future);
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    std::weak_ptr<const void> life = p->diagnostics().lifetime;
    p.reset();
    for (int i = 0; i < 1000 && !life.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(life.expired());
    EXPECT_EQ(created.load(), destroyed.load());
    EXPECT_EQ(outcomes.load(), issued.load());
}

TEST(adapter_api, churn_on_a_thread_pool_completes_every_acquire_once) {
    boost::asio::thread_pool tp(3);
    churn_on(tp.get_executor(), 3, 3000);
    tp.join();
}

TEST(adapter_api, churn_on_a_strand_completes_every_acquire_once) {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::thread a([&] { io.run(); }), b([&] { io.run(); });
    churn_on(boost::asio::make_strand(io), 3, 3000);
    work.reset();
    a.join();
    b.join();
}

TEST(adapter_api, churn_on_an_io_context_run_by_two_threads_completes_every_acquire_once) {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::thread a([&] { io.run(); }), b([&] { io.run(); });
    churn_on(io.get_executor(), 3, 3000);
    work.reset();
    a.join();
    b.join();
}


// dump_recording and recording_status from the main thread while two threads run the
// pool and a producer keeps it busy: every dump succeeds, nothing is touched freed.
TEST(adapter_api, dumps_while_the_pool_runs_on_other_threads) {
    for (const bool memory_only : {true, false}) {
        const auto root = std::filesystem::temp_directory_path() / ("fairpool-api-dump-" + std::to_string(::getpid()));
        std::filesystem::remove_all(root);
        boost::asio::io_context io;
        auto work = boost::asio::make_work_guard(io);
        std::thread a([&] { io.run(); }), b([&] { io.run(); });
        pool_options o = slots(2);
        recorder_options r;
        r.memory_only = memory_only;
        r.directory = root / "rec";
        r.segment_events = 300;
        r.keep_segments = 2;
        r.flush_interval = std::chrono::milliseconds(1);
        o.recording = r;
        auto p = std::make_unique<pool<int>>(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 1; });
        std::atomic<bool> stop{false};
        std::atomic<int> outcomes{0}, issued{0};
        std::thread producer([&] {
            while (!stop.load()) {
                ++issued;
                p->async_acquire(std::chrono::milliseconds(1), [&](error_code, pool<int>::lease_type) { ++outcomes; });
                if (issued.load() - outcomes.load() > 50) std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
        });
        for (int i = 0; i < 30; ++i) {
            EXPECT_FALSE(p->dump_recording(root / ("dump-" + std::to_string(i))));
            EXPECT_TRUE(p->recording_status().has_value());
        }
        stop = true;
        producer.join();
        for (int i = 0; i < 5000 && outcomes.load() < issued.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        EXPECT_EQ(outcomes.load(), issued.load());
        p.reset();
        work.reset();
        a.join();
        b.join();
        std::filesystem::remove_all(root);
    }
}



// Acquires after async_close (directly, from another thread, deferred) are rejected
// closed once each; two closes, one with a deadline that passes first, each complete once.
TEST(adapter_api, acquires_after_a_close_and_two_closes_complete_once_each) {
    boost::asio::io_context io;
    auto p = std::make_unique<pool<int>>(io.get_executor(), slots(1), []() -> boost::asio::awaitable<int> { co_return 1; });
    pool<int>::lease_type held;
    p->async_acquire([&](error_code ec, pool<int>::lease_type l) { EXPECT_FALSE(ec); held = std::move(l); });
    run_until(io, [&] { return bool(held); });
    ASSERT_TRUE(held);
    int first = 0, second = 0;
    error_code first_ec, second_ec;
    p->async_close(std::chrono::milliseconds(1), [&](error_code ec, close_report) { ++first; first_ec = ec; });
    p->async_close([&](error_code ec, close_report) { ++second; second_ec = ec; });
    int rejected = 0;
    const auto closed_once = [&](error_code ec, pool<int>::lease_type l) {
        EXPECT_EQ(ec, make_error_code(error::closed));
        EXPECT_FALSE(l);
        ++rejected;
    };
    p->async_acquire(closed_once);
    auto h = p->make_handle();
    std::thread([&] { h.async_acquire(closed_once); }).join();
    auto later = h.async_acquire(boost::asio::deferred);
    run_until(io, [&] { return first == 1 && rejected == 2; });
    std::move(later)(closed_once);
    EXPECT_EQ(p->resize(1, 0), make_error_code(error::closed));
    run_until(io, [&] { return rejected == 3; });
    EXPECT_EQ(first, 1);
    EXPECT_EQ(first_ec, make_error_code(error::timeout));
    EXPECT_EQ(second, 0);
    held.release();
    run_until(io, [&] { return second == 1; });
    EXPECT_EQ(second, 1);
    EXPECT_FALSE(second_ec);
    EXPECT_EQ(rejected, 3);
    EXPECT_EQ(first, 1);
}

}  // namespace
}  // namespace fairpool::testing
