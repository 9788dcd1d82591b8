// Lifetimes at the edges: what is left of a pool once its objects and its io_context
// are gone. Each case is deterministic (no sleeps, no races): the order of events is
// forced with explicit hand-offs between threads.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "fairpool/asio/pool.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

pool_options one_slot() {
    pool_options o;
    o.max_slots = 1;
    o.min_slots = 1;
    return o;
}

auto make_int_pool(boost::asio::io_context& io) {
    return std::make_unique<pool<int>>(io.get_executor(), one_slot(),
                                       []() -> boost::asio::awaitable<int> { co_return 1; });
}

// Runs every ready handler, and those they make ready, without waiting.
void settle(boost::asio::io_context& io) {
    for (;;) {
        io.restart();
        if (io.poll() == 0) return;
    }
}

// Acquires the pool's one idle slot and settles: the lease, or an empty one (a failed
// expectation) if it was not granted at once.
template <class Source>
auto lease_now(Source& source, boost::asio::io_context& io) {
    typename Source::lease_type held;
    source.async_acquire([&held](error_code ec, typename Source::lease_type l) {
        EXPECT_FALSE(ec);
        held = std::move(l);
    });
    settle(io);
    EXPECT_TRUE(held) << "not granted at once";
    return held;
}

// A one-shot gate between two threads (a wait gives up after 10 s: a failure, not a hang).
class gate {
public:
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        cv_.notify_all();
    }
    bool wait() {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, std::chrono::seconds(10), [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool open_ = false;
};

// An acquire's handler whose invocation and destruction the test sees from outside.
struct watched_handler {
    std::shared_ptr<int> alive = std::make_shared<int>(0);
    std::weak_ptr<int> probe = alive;
    bool invoked = false;
    // The handler itself (once: it takes `alive` with it).
    // Invocable as an acquire's handler or as a close's.
    auto take() {
        return [this, keep = std::move(alive)](error_code, auto&&) { invoked = true; };
    }
    [[nodiscard]] bool destroyed() const { return probe.expired(); }
};

// The pool object is dropped while an acquire is queued, and its io_context is then
// destroyed without running again (a server stopping its event loop). Asio destroys
// the handlers it holds; the pool's state, its queued operation and that operation's
// handler must go with them, not stay alive in a cycle.
TEST(adapter_lifetime, queued_acquire_does_not_outlive_a_destroyed_io_context) {
    std::weak_ptr<const void> state;
    watched_handler handler;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        settle(io);  // prewarmed
        lease<int> held = lease_now(*p, io);
        ASSERT_TRUE(held);
        p->async_acquire(handler.take());  // queued
        settle(io);
        held.release();
        p.reset();
    }  // io_context destroyed, its pending handlers with it
    EXPECT_FALSE(handler.invoked);
    EXPECT_TRUE(handler.destroyed()) << "the queued acquire's handler was never destroyed";
    EXPECT_TRUE(state.expired()) << "the pool's state outlived its io_context (a reference cycle)";
}

// The same for an acquire still in the mailbox: pushed from outside the pool's
// executor, its drain posted and never run. The context's shutdown frees it, its
// handler unrun, and nothing is left to keep the state alive.
TEST(adapter_lifetime, an_acquire_still_in_the_mailbox_does_not_outlive_a_destroyed_io_context) {
    std::weak_ptr<const void> state;
    watched_handler handler;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        settle(io);
        p->async_acquire(handler.take());
        ASSERT_FALSE(handler.destroyed());  // in the mailbox, its drain posted
        p.reset();
    }  // io_context destroyed without running again
    EXPECT_FALSE(handler.invoked);
    EXPECT_TRUE(handler.destroyed()) << "the acquire in the mailbox was never destroyed";
    EXPECT_TRUE(state.expired()) << "the pool's state outlived its io_context (a reference cycle)";
}

// The handler runs on another executor (here a second io_context; use_future does the
// same on the system executor). Once the handler has its lease, the caller owns
// everything it got: it may give the lease back, drop the pool and destroy the pool's
// io_context, even while the handler is still returning on its own thread. So the
// adapter must not still hold the pool's state there: its last reference would go on
// the handler's thread, after the io_context, and destroying its strand then touches the
// io_context's freed strand service (heap-use-after-free under ASan; under TSan "use of
// an invalid mutex", seen in adapter.every_completion_token_works with use_future).
// Here the pool's io_context is kept until the handler has returned, so the test fails
// on the held reference instead of crashing or hanging on freed memory.
TEST(adapter_lifetime, nothing_of_the_pool_is_held_after_a_foreign_handler_has_its_lease) {
    boost::asio::io_context other;
    auto other_work = boost::asio::make_work_guard(other);
    std::thread other_thread([&other] { other.run(); });

    std::weak_ptr<const void> state;
    gate delivered, pool_gone;
    std::optional<lease<int>> got;
    boost::asio::io_context io;
    auto p = make_int_pool(io);
    state = p->diagnostics().lifetime;
    settle(io);
    p->async_acquire(boost::asio::bind_executor(other, [&](error_code ec, lease<int> l) {
        EXPECT_FALSE(ec);
        got.emplace(std::move(l));
        delivered.open();
        pool_gone.wait();  // the caller tears the pool down before this returns
    }));
    settle(io);  // the grant is posted to `other`, where the handler now waits
    if (!delivered.wait()) {
        ADD_FAILURE() << "the grant was never delivered";
        other.stop();
        other_thread.join();
        return;
    }
    got.reset();  // the lease goes back
    p.reset();    // and the pool
    settle(io);   // it shuts down and closes
    const bool expired_while_handler_runs = state.expired();
    pool_gone.open();
    other_work.reset();
    other_thread.join();
    EXPECT_TRUE(expired_while_handler_runs)
        << "the delivery holds the pool's state across the upcall: had the pool's io_context been destroyed "
           "now, the state would be destroyed after it";
    EXPECT_TRUE(state.expired());
}

// The grant is posted to the handler's executor, whose io_context is then destroyed
// before running it (Asio destroys such handlers without invoking them). The operation
// and its handler must be freed with it, and the slot it would have leased must come
// back, or the pool can never close and its state is never freed.
TEST(adapter_lifetime, a_grant_destroyed_undelivered_frees_its_handler_and_returns_its_slot) {
    std::weak_ptr<const void> state;
    watched_handler handler;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        settle(io);
        {
            boost::asio::io_context other;  // never run
            p->async_acquire(boost::asio::bind_executor(other, handler.take()));
            settle(io);  // granted: the delivery waits in `other`
            EXPECT_EQ(p->stats().slots_leased, 1u);
        }  // `other` destroyed with the delivery in it
        EXPECT_FALSE(handler.invoked);
        EXPECT_TRUE(handler.destroyed()) << "the undelivered handler was never destroyed";
        settle(io);
        EXPECT_EQ(p->stats().slots_leased, 0u)
            << "the slot granted to the undelivered operation never came back";
        bool closed = false;
        p->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
        settle(io);
        EXPECT_TRUE(closed);
        p.reset();
        settle(io);
    }
    EXPECT_TRUE(state.expired()) << "the pool's state outlived everything";
}

// A deferred acquire holds the pool's state, not a pointer to it: launched after the
// pool and the handle it came from are gone, it completes with closed (the pool shut
// down when its last object went), and the state goes once it has.
TEST(adapter_lifetime, a_deferred_acquire_launched_after_its_pool_and_handle_are_gone_is_closed) {
    boost::asio::io_context io;
    std::weak_ptr<const void> state;
    std::optional<error_code> outcome;
    {
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        auto h = p->make_handle();
        auto deferred_acquire = h.async_acquire(boost::asio::deferred);
        h.reset();
        p.reset();
        settle(io);
        ASSERT_FALSE(state.expired()) << "the deferred operation keeps the state";
        std::move(deferred_acquire)([&](error_code ec, pool<int>::lease_type lease) {
            outcome = ec;
            EXPECT_FALSE(lease);
        });
    }
    settle(io);
    ASSERT_TRUE(outcome.has_value());
    EXPECT_EQ(*outcome, make_error_code(error::closed));
    EXPECT_TRUE(state.expired());
}

// A rejection's delivery lets go of the operation's reference to the pool's state before
// its handler runs, as a grant's moves it into the lease: the handler (here on another
// io_context, run after the pool object is gone) may be the last to hold anything of the
// pool, and the state must not be destroyed on its thread after it returns.
TEST(adapter_lifetime, a_rejection_holds_no_reference_to_the_pool_while_its_handler_runs) {
    boost::asio::io_context io;
    boost::asio::io_context other;  // the handler's, run once the pool object is gone
    std::weak_ptr<const void> state;
    std::optional<bool> expired_in_handler;
    {
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        settle(io);
        bool closed = false;
        p->async_close([&closed](error_code ec, close_report r) { closed = !ec && r.closed; });
        settle(io);
        ASSERT_TRUE(closed);
        p->async_acquire(boost::asio::bind_executor(other, [&](error_code ec, lease<int> l) {
            EXPECT_EQ(ec, make_error_code(error::closed));
            EXPECT_FALSE(l);
            expired_in_handler = state.expired();
        }));
        settle(io);  // rejected `closed`: its delivery waits in `other`
    }
    settle(io);
    ASSERT_FALSE(state.expired()) << "the undelivered rejection holds the state";
    other.run();
    ASSERT_TRUE(expired_in_handler.has_value());
    EXPECT_TRUE(*expired_in_handler) << "the rejection's delivery held the pool's state across its upcall";
}

// Lease tokens (slot_keeping.hpp). A lease released on the pool's executor, with the actor
// idle, hands its reference to the pool's state back to the actor, which gives it to the
// slot's next lease: a round trip changes no reference count. The three cases below pin
// that, and that the references the actor keeps go when the pool closes and when its
// io_context is destroyed without running again (they are references from the state to
// itself: kept, they would leak it).
struct round_trip_counts {
    long with_lease = 0;     // the first lease in hand
    long after_release = 0;  // released on the pool's executor
    long next_lease = 0;     // the next lease of the same slot in hand
};

// On `io`: an acquire, whose handler releases its lease and acquires again.
round_trip_counts round_trip_on_the_executor(boost::asio::io_context& io, pool<int>& p,
                                             const std::weak_ptr<const void>& state) {
    round_trip_counts counts;
    auto h = p.make_handle();
    boost::asio::post(io, [&] {
        h.async_acquire([&](error_code ec, lease<int> l) {
            ASSERT_FALSE(ec);
            counts.with_lease = state.use_count();
            l.release();
            counts.after_release = state.use_count();
            h.async_acquire([&](error_code ec2, lease<int> l2) {
                ASSERT_FALSE(ec2);
                ASSERT_TRUE(l2);
                counts.next_lease = state.use_count();
            });
        });
    });
    settle(io);
    return counts;
}

TEST(adapter_lifetime, a_lease_released_on_the_pool_executor_hands_its_reference_to_the_next_lease) {
    boost::asio::io_context io;
    auto p = make_int_pool(io);
    const std::weak_ptr<const void> state = p->diagnostics().lifetime;
    settle(io);
    const round_trip_counts counts = round_trip_on_the_executor(io, *p, state);
    ASSERT_GT(counts.with_lease, 1);  // the pool's and the lease's, at least
    EXPECT_EQ(counts.after_release, counts.with_lease) << "the lease's reference was dropped, not kept by the actor";
    EXPECT_EQ(counts.next_lease, counts.with_lease) << "the next lease took a new reference, not the kept one";
}

TEST(adapter_lifetime, the_references_the_actor_keeps_go_when_the_pool_closes) {
    boost::asio::io_context io;
    auto p = make_int_pool(io);
    const std::weak_ptr<const void> state = p->diagnostics().lifetime;
    settle(io);
    round_trip_on_the_executor(io, *p, state);
    p.reset();   // shuts down
    settle(io);  // and closes
    EXPECT_TRUE(state.expired()) << "the actor still keeps a lease token: the state keeps itself alive";
}

TEST(adapter_lifetime, the_references_the_actor_keeps_go_with_an_io_context_destroyed_unrun) {
    std::weak_ptr<const void> state;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        state = p->diagnostics().lifetime;
        settle(io);
        round_trip_on_the_executor(io, *p, state);
        p.reset();  // its shutdown is posted, and never runs
    }
    EXPECT_TRUE(state.expired()) << "the actor's lease tokens outlived the io_context: the state leaked";
}

// A lease may outlive its pool's io_context (docs/CONTRACT.md section 8), and so may a
// handle and the pool object: releasing or destroying them after the context is gone
// must touch nothing of it (it is freed: a heap-use-after-free under ASan, before the
// actor was taken for good at the context's shutdown). The state, its resource and
// nothing else go with the last of them.
TEST(adapter_lifetime, a_lease_handle_and_pool_outliving_their_io_context_touch_nothing_of_it) {
    std::weak_ptr<const void> state;
    std::weak_ptr<int> resource;
    auto io = std::make_unique<boost::asio::io_context>();
    auto p = std::make_unique<pool<std::shared_ptr<int>>>(
        io->get_executor(), one_slot(), []() -> boost::asio::awaitable<std::shared_ptr<int>> {
            co_return std::make_shared<int>(7);
        });
    state = p->diagnostics().lifetime;
    auto h = p->make_handle();
    lease<std::shared_ptr<int>> held = lease_now(h, *io);
    ASSERT_TRUE(held);
    resource = *held;
    io.reset();  // the context goes first, with the pool, its handle and the lease alive
    EXPECT_FALSE(state.expired());
    held.release();
    h.reset();
    p.reset();
    EXPECT_TRUE(state.expired()) << "the pool's state outlived everything";
    EXPECT_TRUE(resource.expired()) << "the resource outlived the pool's state";
}

// The same with a queued acquire bounded by a timeout, so that the pool's deadline
// timer is armed when the context goes: the timer must go with the context's shutdown,
// while its service exists, not with the state afterwards (a heap-use-after-free in the
// timer service under ASan, before abandon_pending dropped it).
TEST(adapter_lifetime, a_pool_whose_deadline_timer_is_armed_outliving_its_io_context_touches_nothing_of_it) {
    std::weak_ptr<const void> state;
    auto io = std::make_unique<boost::asio::io_context>();
    auto p = make_int_pool(*io);
    state = p->diagnostics().lifetime;
    lease<int> held = lease_now(*p, *io);
    ASSERT_TRUE(held);
    bool completed = false;
    p->async_acquire(std::chrono::hours(1), [&completed](error_code, lease<int>) { completed = true; });  // queued
    settle(*io);
    io.reset();  // the timer is armed for the queued acquire's deadline
    EXPECT_FALSE(completed);
    held.release();
    p.reset();
    EXPECT_TRUE(state.expired()) << "the pool's state outlived everything";
}

// A close waiting for a lease when the pool's context goes (the pool object and the
// lease outliving it): the context's shutdown abandons the pool, and each waiting
// close's handler is destroyed unrun with its wait (a close without a deadline, one
// with a deadline, one with a cancellation slot, which is cleared as its handler goes,
// as an acquire's is). Releasing the lease afterwards touches nothing of the context,
// and nothing keeps the state alive.
TEST(adapter_lifetime, closes_waiting_when_the_io_context_goes_are_destroyed_unrun) {
    std::weak_ptr<const void> state;
    watched_handler unbounded;
    watched_handler bounded;
    watched_handler cancellable;
    boost::asio::cancellation_signal signal;
    auto io = std::make_unique<boost::asio::io_context>();
    auto p = make_int_pool(*io);
    state = p->diagnostics().lifetime;
    lease<int> held = lease_now(*p, *io);
    ASSERT_TRUE(held);
    p->async_close(unbounded.take());
    p->async_close(std::chrono::hours(1), bounded.take());
    p->async_close(boost::asio::bind_cancellation_slot(signal.slot(), cancellable.take()));
    settle(*io);
    ASSERT_TRUE(signal.slot().has_handler());
    ASSERT_FALSE(unbounded.destroyed() || bounded.destroyed() || cancellable.destroyed()) << "not waiting";
    io.reset();  // the closes wait for the lease
    for (const watched_handler* h : {&unbounded, &bounded, &cancellable}) {
        EXPECT_FALSE(h->invoked);
        EXPECT_TRUE(h->destroyed()) << "a waiting close's handler outlived its io_context";
    }
    EXPECT_FALSE(signal.slot().has_handler()) << "a close abandoned at shutdown left its cancellation handler";
    held.release();
    p.reset();
    EXPECT_TRUE(state.expired()) << "the pool's state outlived everything";
    for (const watched_handler* h : {&unbounded, &bounded, &cancellable}) EXPECT_FALSE(h->invoked);
}

// A close handler whose move constructor throws, at each of its moves in turn, bound to
// a cancellation slot: a call that throws leaves no cancellation handler in the slot
// (it would keep the closing alive, and its id, never taken, would be the next
// close's: an emit on this signal cancelled a later close that was never bound to it).
// (Here, not in the adapter's unit tests: clang-tidy checks those, and a handler whose
// move throws makes every wrapper's move constructor one that may throw.)
TEST(adapter_lifetime, a_close_whose_handler_throws_when_moved_leaves_its_slot_clear) {
    struct close_count {
        int completions = 0;
        error_code ec;
        bool closed = false;
        void record(error_code e, const close_report& r) {
            ++completions;
            ec = e;
            closed = r.closed;
        }
    };
    struct moved_handler {
        int* moves_left;  // the move that throws: when it reaches 0
        close_count* out;
        moved_handler(int* m, close_count* o) : moves_left(m), out(o) {}
        moved_handler(moved_handler&& other) : moves_left(other.moves_left), out(other.out) {
            if ((*moves_left)-- == 0) throw std::runtime_error("move");
        }
        moved_handler(const moved_handler&) = delete;
        moved_handler& operator=(const moved_handler&) = delete;
        moved_handler& operator=(moved_handler&&) = delete;
        ~moved_handler() = default;
        void operator()(error_code ec, const close_report& r) const { out->record(ec, r); }
    };
    boost::asio::io_context io;
    auto p = make_int_pool(io);
    settle(io);
    lease<int> held = lease_now(*p, io);
    ASSERT_TRUE(held);
    int threw = 0;
    std::list<close_count> later_closes;  // each waits for the lease, past its iteration
    for (int fail_at = 0;; ++fail_at) {
        SCOPED_TRACE(fail_at);
        boost::asio::cancellation_signal signal;
        close_count failed;
        int moves_left = fail_at;
        try {
            p->async_close(std::chrono::hours(1),
                           boost::asio::bind_cancellation_slot(signal.slot(), moved_handler(&moves_left, &failed)));
        } catch (const std::runtime_error&) {
            ++threw;
            EXPECT_FALSE(signal.slot().has_handler()) << "a close that threw left its cancellation handler";
            close_count& later = later_closes.emplace_back();
            p->async_close(std::chrono::hours(1),
                           [&later](error_code ec, const close_report& r) { later.record(ec, r); });
            signal.emit(boost::asio::cancellation_type::terminal);
            settle(io);
            EXPECT_EQ(later.completions, 0) << "an emit on the failed close's signal reached another close";
            EXPECT_EQ(failed.completions, 0);
            continue;
        }
        moves_left = -1;  // its later moves, on the way to the upcall, do not throw
        settle(io);
        EXPECT_TRUE(signal.slot().has_handler()) << "the close is waiting, cancellable";
        signal.emit(boost::asio::cancellation_type::terminal);
        settle(io);
        EXPECT_EQ(failed.completions, 1);
        EXPECT_EQ(failed.ec, boost::asio::error::operation_aborted);
        break;
    }
    EXPECT_GE(threw, 2) << "the handler was moved fewer times than this test expects";
    ASSERT_EQ(later_closes.size(), static_cast<std::size_t>(threw));
    held.release();
    settle(io);
    for (const close_count& later : later_closes) {
        EXPECT_EQ(later.completions, 1) << "a later close, never bound to a signal, did not complete once";
        EXPECT_FALSE(later.ec);
        EXPECT_TRUE(later.closed);
    }
}

// An acquire whose operation is destroyed without its handler being invoked (its
// handler's context destroyed with the grant in it; the pool's context shut down with
// the acquire queued) clears the cancellation slot it installed: a cancellation emitted
// later must find no handler: the handler's pointer to the pool's state may dangle by
// then (emitting spun on the freed mailbox before the fix), and its cancel would use up
// room in the cancels queue that only an outstanding acquire may take.
TEST(adapter_lifetime, an_acquire_destroyed_unrun_clears_its_cancellation_slot) {
    boost::asio::cancellation_signal undelivered;
    boost::asio::cancellation_signal abandoned;
    {
        boost::asio::io_context io;
        auto p = make_int_pool(io);
        settle(io);
        {
            boost::asio::io_context other;  // never run
            p->async_acquire(boost::asio::bind_cancellation_slot(
                undelivered.slot(), boost::asio::bind_executor(other, [](error_code, lease<int>) {})));
            settle(io);  // granted: the delivery waits in `other`
            ASSERT_EQ(p->stats().slots_leased, 1u);
        }  // `other` destroyed with the delivery in it
        EXPECT_FALSE(undelivered.slot().has_handler()) << "an undelivered grant left its cancellation handler";
        settle(io);  // the slot is back
        lease<int> held = lease_now(*p, io);
        ASSERT_TRUE(held);
        p->async_acquire(boost::asio::bind_cancellation_slot(abandoned.slot(), [](error_code, lease<int>) {}));
        settle(io);  // queued behind the held lease
        ASSERT_TRUE(abandoned.slot().has_handler());
        held.release();
        p.reset();
    }  // io_context destroyed with the acquire queued
    EXPECT_FALSE(abandoned.slot().has_handler()) << "an acquire abandoned at shutdown left its cancellation handler";
}

}  // namespace
}  // namespace fairpool::testing
