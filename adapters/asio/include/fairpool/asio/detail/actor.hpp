#pragma once
// The actor's protocol, whole: who drains the mailbox, when, and how a drain lets go.
// The scheduling state it runs on is actor_state.hpp (one atomic word, model-checked in
// model/wake_protocol.pml); what a drain does with the commands is its owner's
// (pool_drain.hpp: serve, after_serving).
//
//   producer    push a command into its mailbox queue, then announce(kind). If that
//               took the idle actor: on the pool's executor, drain inline (at most
//               inline_drain_budget commands); elsewhere, post one drain.
//   direct      on the pool's executor, with the actor idle and nothing pending
//               (fed_directly): take the actor and feed the caller's own command to the
//               core, without a queue round trip; then finish as any drain does.
//   drain       read the clock's stamp (before taking the actor; a producer's inline
//               drain, just after), serve the kinds taken, a budget of commands (which
//               commands are served past it: pool_drain.hpp, serve); if kinds are
//               left, hand off (scheduled, with the kinds left) and post one drain.
//   letting go  after_serving (publish, timer, close waiters); release the actor
//               unless something became pending meanwhile, which this drain then
//               serves (the re-check: no wake-up is lost). References the drain
//               dropped (lease tokens at close) go only after the actor is let go.
//   posted      a posted drain begins (scheduled -> running), then drains.
//
// Never two drains at once; at most one drain posted and not started; a drain runs no
// user code (its owner posts every completion and hook); and a drain cannot stop half
// way, so anything thrown in one is fatal (drain_or_die).
//
// Owner (CRTP; its members may be private, with `friend class actor<Owner>`) provides:
//   actor_state& scheduling()                      the mailbox's word
//   bool on_pool_executor() const                  may the caller drain inline
//   void post_to_executor(F)                       post to the pool's executor
//   std::uint64_t stamp(); void start_drain(stamp) the drain's one clock read
//   std::uint32_t serve(kinds, std::uint32_t& budget)   returns the kinds left
//   void after_serving()
//   bool has_dying_references(); take_dying_references()  dropped after letting go
//   drain_counts& drain_counts()                   the diagnostics below
// and derives from std::enable_shared_from_this<Owner> (a posted drain keeps it alive).
// The actor itself holds no data: an empty base, at its owner's own address, so the
// drain's code addresses the owner's members through one pointer.
#include <atomic>
#include <cstdint>
#include <memory>

#include "fairpool/asio/detail/actor_state.hpp"
#include "fairpool/core/detail/assert.hpp"

namespace fairpool::detail {

// Diagnostics: drains posted to the executor (wake-ups are coalesced: at most one per
// command), and drains run (inline or posted; written by the drain only).
struct drain_counts {
    std::atomic<std::uint64_t> posted{0};
    std::atomic<std::uint64_t> run{0};
};

template <class Owner>
class actor {
public:
    // Commands one drain serves at most before it lets the executor run other handlers:
    // inline (inside an initiating function or a release), and posted.
    static constexpr std::uint32_t inline_drain_budget = 32;
    static constexpr std::uint32_t posted_drain_budget = 1024;

    [[nodiscard]] std::uint64_t drains_posted() const noexcept {
        return owner().drain_counts().posted.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t drains_run() const noexcept {
        return owner().drain_counts().run.load(std::memory_order_relaxed);
    }

protected:
    actor() = default;
    ~actor() = default;

    // A drain whose budget runs out posts the next one, which clang-tidy's call graph
    // sees as a recursion through Asio's post (drain -> post -> the posted drain's
    // operator() -> drain). It is not one: the posted drain runs later, from the
    // executor, on a stack of its own, and at most one is ever posted.
    // NOLINTBEGIN(misc-no-recursion)

    // A producer, after pushing a command of the given kinds into the mailbox.
    void announce(std::uint32_t kinds) noexcept {
        switch (owner().scheduling().announce(kinds, owner().on_pool_executor())) {
            case actor_state::wake::none: return;
            case actor_state::wake::drain_inline: return drain(inline_drain_budget, owner().stamp());
            case actor_state::wake::post_drain: return post_drain();
        }
    }

    // The caller runs on the pool's executor. With the actor idle and nothing pending: a
    // drain whose first command is the caller's own, fed to the core without a queue
    // round trip. False if the caller must push it instead.
    template <class Feed>
    bool fed_directly(Feed&& feed_command) noexcept {
        const std::uint64_t stamp = owner().stamp();
        if (!owner().scheduling().try_take_idle()) return false;
        drain_or_die([&] {
            begin_drain(stamp);
            feed_command();
            finish_drain(inline_drain_budget - 1);
        });
        return true;
    }

private:
    [[nodiscard]] Owner& owner() noexcept { return static_cast<Owner&>(*this); }
    [[nodiscard]] const Owner& owner() const noexcept { return static_cast<const Owner&>(*this); }

    // Once announce() or hand_off() made the actor `scheduled`, this post is the only one
    // that will serve what is pending. If it cannot be made (posting allocates), the
    // pool could never drain again, and the caller could not take its command back:
    // fatal on every path, like a broken invariant (and the noexcept release path needs
    // it so).
    [[gnu::noinline]] void post_drain() noexcept {
        owner().drain_counts().posted.fetch_add(1, std::memory_order_relaxed);
        try {
            owner().post_to_executor(posted_drain{owner().shared_from_this()});
        } catch (...) {
            core::detail::assertion_failed("a drain could be posted to the pool's executor", __FILE__, __LINE__);
        }
    }

    // What the pool's executor runs for a posted drain.
    struct posted_drain {
        std::shared_ptr<Owner> self;
        void operator()() const noexcept { static_cast<actor&>(*self).run_posted_drain(); }
    };

    void run_posted_drain() noexcept {
        const std::uint64_t stamp = owner().stamp();
        owner().scheduling().begin();
        drain(posted_drain_budget, stamp);
    }

    // Holding the actor: one drain, from the pending kinds on.
    void drain(std::uint32_t budget, std::uint64_t stamp) noexcept {
        drain_or_die([this, budget, stamp] {
            begin_drain(stamp);
            std::uint32_t rest = budget;
            const std::uint32_t left = owner().serve(owner().scheduling().take(), rest);
            if (left != 0) return hand_off(left);
            finish_drain(rest);
        });
    }

    // A drain cannot stop half-way: the effects of a completed step must all be
    // performed and the actor let go, and what can throw in a drain (an allocation
    // failure posting a completion) would leave the pool unable to keep its promises.
    // Fatal, like a broken invariant.
    template <class Drain>
    static void drain_or_die(Drain&& drain) noexcept {
        try {
            drain();
        } catch (...) {
            core::detail::assertion_failed("a drain ran to its end (nothing in it may throw)", __FILE__, __LINE__);
        }
    }

    // `stamp`: read before the actor was taken.
    // Always inlined into its two callers: left to GCC's unit-growth limit it went out
    // of line once the hooks' strand added an instantiation, +32 instructions per
    // contended acquire (callgrind).
    [[gnu::always_inline]] void begin_drain(std::uint64_t stamp) noexcept {
        std::atomic<std::uint64_t>& run = owner().drain_counts().run;
        run.store(run.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        owner().start_drain(stamp);
    }

    // Lets go of the actor, re-checking the mailbox: what arrived meanwhile is served
    // by this drain (within its budget) before the actor is idle again.
    void finish_drain(std::uint32_t budget) {
        for (;;) {
            owner().after_serving();
            if (owner().has_dying_references()) [[unlikely]]
                return finish_drain_dropping_references(budget);
            if (owner().scheduling().release()) return;
            const std::uint32_t left = owner().serve(owner().scheduling().take(), budget);
            if (left != 0) return hand_off(left);
        }
    }

    // References this drain dropped go last, after the actor is let go: they may be the
    // last ones to the owner, and nothing after them in this drain's call chain touches
    // it.
    [[gnu::noinline]] void finish_drain_dropping_references(std::uint32_t budget) {
        auto dying = owner().take_dying_references();
        finish_drain(budget);
    }

    [[gnu::noinline]] void hand_off(std::uint32_t left) {
        owner().after_serving();
        owner().scheduling().hand_off(left);
        post_drain();
    }
    // NOLINTEND(misc-no-recursion)
};

}  // namespace fairpool::detail
