#pragma once
// One pending acquire: the caller's completion handler, allocated with the handler's
// associated allocator (Asio's recycling allocator when it has none, so a steady
// stream of acquires reuses memory instead of allocating), plus the work it counts on
// the handler's executor while it waits (handler_work.hpp). The actor completes it by
// posting its delivery to that executor:
// the handler never runs inside the actor, and its cancellation slot is cleared on the
// handler's own executor, where Asio requires cancellation to be emitted.
//
// On an io_context's executor (the common case), the operation itself is what is
// posted: it is an Asio scheduler operation, queued on the io_context's scheduler as
// io_context::executor_type::execute queues the operation it would otherwise allocate
// around the delivery (post_immediate_completion: the same work counting, the same
// per-thread queue). That saves an allocation from Asio's recycling cache, its release
// and a wrapper's moves on every completion: ~60 instructions of a ~1,430-instruction
// round trip. The scheduler destroys a queued operation it will not run (its context
// shut down) as it destroys its own: the delivery is dropped (drop_delivery). On any
// other executor the delivery is posted through boost::asio::post.
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/asio/execution/relationship.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/system/error_code.hpp>

#include "fairpool/asio/detail/handle_block.hpp"
#include "fairpool/asio/detail/handler_work.hpp"
#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/event.hpp"
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace fairpool::detail {

class acquire_operation : public boost::asio::detail::scheduler_operation {
public:
    // On the actor: hands the outcome over to the handler's executor. For a grant,
    // `slot` and `lease` name it; otherwise `ec` says why not.
    void complete(const boost::system::error_code& ec, std::uint32_t slot, std::uint64_t lease) {
        complete_(this, ec, slot, lease);
    }

    // When the pool's execution context shuts down with this operation still pending:
    // destroys it and its handler without invoking it (as Asio destroys its own pending
    // handlers), which also breaks the pool ↔ handler reference cycle.
    void abandon() noexcept { abandon_(this); }

    // From now until its delivery the operation is outstanding work on its handler's
    // executor (handler_work.hpp): called before the acquire is pushed into the mailbox,
    // and by the actor when the scheduler queues it; idempotent.
    void keep_work() noexcept { keep_work_(this); }

    // Its handle's block (null for pool.async_acquire), valid until it is delivered.
    [[nodiscard]] handle_block* block() const noexcept { return block_; }
    // Whether it counts among the pool's outstanding acquires and its handle's (the
    // pool's admission): from its initiating function on, or, fed to the scheduler
    // directly, from when the scheduler queues it; its delivery counts it back.
    [[nodiscard]] bool counted() const noexcept { return counted_; }
    void set_counted() noexcept { counted_ = true; }

    // Its references to the pool's state and to its handle's block. Fed to the scheduler
    // directly and completed in that very step, an operation needs neither before its
    // completion: the initiating function's caller holds both throughout. Queued by the
    // scheduler in that step, it holds its block from then on, and the state's from its
    // completion (pool_drain.hpp: count_queued says why not before). Pushed into the
    // mailbox, it holds both from then on. Every operation holds the pool's from its
    // completion on, which its delivery moves into the lease (slot_keeping.hpp: lease
    // tokens).
    [[nodiscard]] bool holds_pool() const noexcept { return pool_ != nullptr; }
    void hold_pool(std::shared_ptr<void> pool) noexcept { pool_ = std::move(pool); }
    [[nodiscard]] bool holds_block() const noexcept { return block_owner_ != nullptr; }
    void hold_block(const std::shared_ptr<handle_block>& owner) noexcept { block_owner_ = owner; }
    // On the actor, at its grant: the block's ownership, for the lease's time (the
    // operation keeps the raw pointer, to count its delivery, which comes before the
    // lease exists and so before its release).
    [[nodiscard]] std::shared_ptr<handle_block> take_block_owner() noexcept { return std::move(block_owner_); }
    // On the actor: when its acquire reached the scheduler (for the handle's wait).
    void arrived_at(core::nanos now) noexcept { arrived_ = now; }
    [[nodiscard]] core::nanos arrived() const noexcept { return arrived_; }

protected:
    using complete_fn = void (*)(acquire_operation*, const boost::system::error_code&, std::uint32_t, std::uint64_t);
    using abandon_fn = void (*)(acquire_operation*) noexcept;
    using keep_work_fn = void (*)(acquire_operation*) noexcept;
    // run: what the io_context's scheduler calls once the operation is posted to it.
    acquire_operation(func_type run, complete_fn c, abandon_fn a, keep_work_fn k, handle_block* block) noexcept
        : scheduler_operation(run), complete_(c), abandon_(a), keep_work_(k), block_(block) {}
    ~acquire_operation() = default;

    std::shared_ptr<void> pool_;  // the pool's state, once held (holds_pool)

private:
    complete_fn complete_;
    abandon_fn abandon_;
    keep_work_fn keep_work_;
    handle_block* block_;
    std::shared_ptr<handle_block> block_owner_;  // once held (holds_block), until the grant (take_block_owner)
    core::nanos arrived_ = 0;
    bool counted_ = false;
};

// One cached block per operation type and thread, for handlers without an allocator of
// their own: an acquire started from a completion handler reuses the memory of the one
// that just completed there. (Asio's recycling allocator would do, but its two-block
// cache is shared with every other handler on the thread and misses once per cycle.)
template <std::size_t Size, std::size_t Align>
class thread_block_cache {
public:
    static void* take() noexcept { return std::exchange(holder().block, nullptr); }
    // False if the cache is full: the caller frees the block.
    static bool give(void* block) noexcept {
        if (holder().block != nullptr) return false;
        holder().block = block;
        return true;
    }

private:
    struct slot {
        void* block = nullptr;
        ~slot() { ::operator delete(block, std::align_val_t(Align)); }
    };
    static slot& holder() noexcept {
        thread_local slot s;
        return s;
    }
};

template <class Handler, class DefaultExecutor>
using handler_executor_t = boost::asio::associated_executor_t<Handler, DefaultExecutor>;

template <class Handler>
using handler_allocator_t = boost::asio::associated_allocator_t<Handler, boost::asio::recycling_allocator<void>>;

// State: the pool's actor type; it provides lease_type, make_lease(state, slot, lease)
// (static), operation_delivered(block, counted) and release(slot, lease, outcome, state). Handler:
// void(error_code, lease_type).
// DefaultExecutor: the pool's executor, as the concrete io_context executor when it is
// one (a work guard and a post through it cost no type erasure), for a handler without
// an associated executor of its own.
template <class State, class Handler, class DefaultExecutor>
class typed_acquire_operation final : public acquire_operation {
public:
    using executor_type = handler_executor_t<Handler, DefaultExecutor>;
    using allocator_type = handler_allocator_t<Handler>;

    // It holds no reference yet (holds_pool, holds_block).
    static typed_acquire_operation* create(Handler&& handler, const DefaultExecutor& ex, State* state,
                                           handle_block* block) {
        const allocator_type alloc =
            boost::asio::get_associated_allocator(handler, boost::asio::recycling_allocator<void>());
        void* memory = allocate(alloc);
        try {
            return ::new (memory) typed_acquire_operation(std::move(handler), ex, state, block);
        } catch (...) {  // the handler's move threw: the memory goes back
            deallocate(alloc, static_cast<typed_acquire_operation*>(memory));
            throw;
        }
    }

private:
    using rebound_allocator =
        typename std::allocator_traits<allocator_type>::template rebind_alloc<typed_acquire_operation>;

    static rebound_allocator rebound(const allocator_type& a) { return rebound_allocator(a); }

    static constexpr bool default_allocator =
        std::is_same_v<allocator_type, boost::asio::recycling_allocator<void>>;

    static void* allocate(const allocator_type& a) {
        if constexpr (default_allocator) {
            using cache = thread_block_cache<sizeof(typed_acquire_operation), alignof(typed_acquire_operation)>;
            if (void* block = cache::take()) return block;
            return ::operator new(sizeof(typed_acquire_operation), std::align_val_t(alignof(typed_acquire_operation)));
        } else {
            auto alloc = rebound(a);
            return std::allocator_traits<rebound_allocator>::allocate(alloc, 1);
        }
    }

    static void deallocate(const allocator_type& a, typed_acquire_operation* op) {
        if constexpr (default_allocator) {
            using cache = thread_block_cache<sizeof(typed_acquire_operation), alignof(typed_acquire_operation)>;
            if (!cache::give(op)) ::operator delete(op, std::align_val_t(alignof(typed_acquire_operation)));
        } else {
            auto alloc = rebound(a);
            std::allocator_traits<rebound_allocator>::deallocate(alloc, op, 1);
        }
    }

    typed_acquire_operation(Handler&& handler, const DefaultExecutor& ex, State* state, handle_block* block)
        : acquire_operation(&typed_acquire_operation::run_posted, &typed_acquire_operation::do_complete,
                            &typed_acquire_operation::do_abandon, &typed_acquire_operation::do_keep_work, block),
          work_(boost::asio::get_associated_executor(handler, ex)),
          handler_(std::move(handler)),
          state_(state) {}

    // The outcome, run on the handler's executor. If that executor's context is
    // destroyed first, the delivery is destroyed without running: the operation and its
    // handler are freed then, and a granted slot is given back (after the delivery is
    // counted: the release lets the actor drop the handle's block). One pointer (the
    // outcome waits in the operation): Asio moves it several times on its way.
    // For any executor but an io_context's (whose scheduler runs the operation itself:
    // run_posted).
    struct delivery {
        typed_acquire_operation* op;

        explicit delivery(typed_acquire_operation* o) noexcept : op(o) {}
        delivery(delivery&& other) noexcept : op(std::exchange(other.op, nullptr)) {}
        delivery& operator=(delivery&&) = delete;
        ~delivery() {
            if (op != nullptr) op->drop_delivery();
        }

        using allocator_type = typename typed_acquire_operation::allocator_type;
        [[nodiscard]] allocator_type get_allocator() const noexcept {
            return boost::asio::get_associated_allocator(op->handler_, boost::asio::recycling_allocator<void>());
        }

        void operator()() { std::exchange(op, nullptr)->deliver(); }
    };

    // The io_context's scheduler runs the operation (owner set) or destroys it unrun
    // (null owner: its context shut down), as it does its own operations.
    static void run_posted(void* owner, boost::asio::detail::scheduler_operation* base,
                           const boost::system::error_code&, std::size_t) {
        auto* o = static_cast<typed_acquire_operation*>(static_cast<acquire_operation*>(base));
        if (owner == nullptr) return o->drop_delivery();
        const boost::asio::detail::fenced_block fence(boost::asio::detail::fenced_block::half);
        o->deliver();
    }

    // Frees the operation, then calls the handler with the outcome.
    void deliver() {
        const outcome out = outcome_;
        boost::asio::get_associated_cancellation_slot(handler_).clear();
        // Free the operation before the upcall, as Asio does, so the handler may
        // start the next acquire into the same memory.
        const allocator_type alloc = handler_allocator();
        Handler handler(std::move(handler_));
        std::shared_ptr<State> state = free_delivered(alloc);
        // The operation's reference to the pool moves into the lease; a rejection drops
        // it before the upcall: a handler on a foreign executor (the system executor
        // of use_future, say) may complete after the pool's owner let go of
        // everything; the last reference must not die on this thread later.
        // The lease is made in the handler's argument itself: one move (and one read of
        // the thread's exception count, lease.hpp) fewer per grant.
        std::move(handler)(out.ec, out.ec ? (state.reset(), typename State::lease_type())
                                          : State::make_lease(std::move(state), out.slot, out.lease));
    }

    // A delivery destroyed without running (out of line: every delivery's moved-from
    // copy is destroyed on the round trip's path).
    [[gnu::noinline]] void drop_delivery() noexcept {
        const outcome out = outcome_;
        std::shared_ptr<State> state = free_unrun();
        if (!out.ec) state->release(out.slot, out.lease, core::release_outcome::clean, state);
    }

    // Frees the operation and its handler without invoking it.
    void finish_without_upcall() noexcept { free_unrun(); }

    // The way out without an upcall. Like deliver, it clears the handler's cancellation
    // slot first: a cancellation emitted later must not reach a pool state that may be
    // gone.
    std::shared_ptr<State> free_unrun() noexcept {
        boost::asio::get_associated_cancellation_slot(handler_).clear();
        return free_delivered(handler_allocator());
    }

    [[nodiscard]] allocator_type handler_allocator() const noexcept {
        return boost::asio::get_associated_allocator(handler_, boost::asio::recycling_allocator<void>());
    }

    // Frees the operation (with what is left of its handler: all of it, unless the
    // delivery moved it out), then counts its delivery; returns its reference to the pool
    // (held since its completion, or since it was pushed into the mailbox; null for one
    // abandoned while queued, whose state the registry keeps alive meanwhile).
    std::shared_ptr<State> free_delivered(const allocator_type& alloc) noexcept {
        std::shared_ptr<State> state = std::static_pointer_cast<State>(std::move(pool_));
        State* const pool_state = state_;
        FAIRPOOL_DEBUG_ASSERT(state == nullptr || state.get() == pool_state);
        handle_block* const b = block();
        const bool was_counted = counted();
        // After a grant the actor owns the block for the lease's time (owner is null).
        const std::shared_ptr<handle_block> owner = take_block_owner();
        {
            auto work = std::move(work_);
            this->~typed_acquire_operation();
            deallocate(alloc, this);
        }
        pool_state->operation_delivered(b, was_counted);
        return state;
    }

    static void do_abandon(acquire_operation* base) noexcept {
        static_cast<typed_acquire_operation*>(base)->finish_without_upcall();
    }

    static void do_keep_work(acquire_operation* base) noexcept {
        static_cast<typed_acquire_operation*>(base)->work_.keep();
    }

    static void do_complete(acquire_operation* base, const boost::system::error_code& ec, std::uint32_t slot,
                            std::uint64_t lease) {
        auto* op = static_cast<typed_acquire_operation*>(base);
        op->outcome_ = {ec, slot, lease};
        // Copies: once posted, the delivery may run on another thread and free the op.
        if constexpr (std::is_same_v<executor_type, boost::asio::io_context::executor_type>) {
            return post_to_scheduler(executor_type(op->work_.get_executor()), op);
        } else if constexpr (std::is_same_v<executor_type, boost::asio::any_io_executor>) {
            if (const auto* io = op->work_.io_executor()) return post_to_scheduler(boost::asio::io_context::executor_type(*io), op);
        }
        boost::asio::post(op->work_.get_executor(), delivery{op});
    }

    // The operation itself into the io_context's scheduler, as the executor's execute()
    // queues an operation (never inline: a post).
    static void post_to_scheduler(const boost::asio::io_context::executor_type& io, typed_acquire_operation* op) {
        namespace execution = boost::asio::execution;
        const bool continuation = boost::asio::query(io, execution::relationship) == execution::relationship_t::continuation;
        boost::asio::use_service<boost::asio::detail::io_context_impl>(io.context())
            .post_immediate_completion(op, continuation);
    }

    // What complete() was given, for the delivery.
    struct outcome {
        boost::system::error_code ec;
        std::uint32_t slot = 0;
        std::uint64_t lease = 0;
    };

    outcome outcome_;
    handler_work<executor_type> work_;
    Handler handler_;
    State* state_;  // kept alive by pool_ (holds_pool), the initiating function's caller, or while
                    // queued by what runs the drain that completes it (count_queued)
};

}  // namespace fairpool::detail
