#pragma once
// The actor's scheduling state: one atomic word that says who holds the actor and which
// kinds of command wait in the mailbox. It is the actor's only serializer (no
// boost::asio::strand on top): as in CAF or Akka, the actor runs when its mailbox goes
// from idle to non-empty. Model-checked in model/wake_protocol.pml.
//
//   owner    idle | running (one drain holds the actor: inline on a producer's thread,
//            or posted) | scheduled (one drain posted, not started yet)
//   pending  one bit per kind of command pushed and not yet taken by a drain
//
//   producer  push the command, then announce(kind): set its bit in one
//             read-modify-write; if the actor was idle, the same step takes it
//             (running: the producer drains inline) or schedules it (it posts a drain)
//   drain     take(): clear the pending bits and serve those queues; then release():
//             idle only if nothing became pending meanwhile, else take again (the
//             re-check). Or hand_off(): scheduled, with what is left, and post a drain.
//   posted    begin(): scheduled -> running
//
// Every announce is a read-modify-write of the word after the push (even when the bit
// is already set): either it comes before the drain's take() in the word's
// modification order (take() synchronizes with it, so the drain sees the push) or
// after it (it sets the bit again and release() fails). So no wake-up is lost, no two
// drains ever hold the actor, and at most one drain is posted and not started.
#include <atomic>
#include <cstdint>

#include "fairpool/core/detail/assert.hpp"

namespace fairpool::detail {

class actor_state {
public:
    static constexpr std::uint32_t running = 1U << 30;
    static constexpr std::uint32_t scheduled = 1U << 31;
    static constexpr std::uint32_t owner = running | scheduled;

    enum class wake : std::uint8_t { none, drain_inline, post_drain };

    // A producer, after pushing a command of the given kinds. may_drain_inline: the
    // caller runs on the pool's executor and may take the actor itself.
    [[nodiscard]] wake announce(std::uint32_t kinds, bool may_drain_inline) noexcept {
        FAIRPOOL_DEBUG_ASSERT(kinds != 0 && (kinds & owner) == 0);
        std::uint32_t s = word_.load(std::memory_order_relaxed);
        for (;;) {
            const bool idle = (s & owner) == 0;
            const std::uint32_t claim = !idle ? 0 : may_drain_inline ? running : scheduled;
            if (word_.compare_exchange_weak(s, s | kinds | claim, std::memory_order_acq_rel, std::memory_order_relaxed))
                return !idle ? wake::none : may_drain_inline ? wake::drain_inline : wake::post_drain;
        }
    }

    // Takes the actor only if it is idle with nothing pending: the caller may then feed
    // its own command to the core directly, in order, without a queue round trip.
    [[nodiscard]] bool try_take_idle() noexcept {
        std::uint32_t expected = 0;
        return word_.compare_exchange_strong(expected, running, std::memory_order_acquire, std::memory_order_relaxed);
    }

    // The drain holding the actor: the kinds pending now, cleared.
    [[nodiscard]] std::uint32_t take() noexcept {
        const std::uint32_t s = word_.exchange(running, std::memory_order_acq_rel);
        FAIRPOOL_DEBUG_ASSERT((s & owner) == running);
        return s & ~owner;
    }

    // The drain lets go: true (idle) if nothing became pending since its last take(),
    // false if something did (the drain takes again).
    [[nodiscard]] bool release() noexcept {
        std::uint32_t expected = running;
        return word_.compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed);
    }

    // The drain stops with `left` kinds still to serve: scheduled, and the caller posts
    // one drain.
    void hand_off(std::uint32_t left) noexcept {
        std::uint32_t s = word_.load(std::memory_order_relaxed);
        do {
            FAIRPOOL_DEBUG_ASSERT((s & owner) == running);
        } while (!word_.compare_exchange_weak(s, (s & ~owner) | scheduled | left, std::memory_order_release,
                                              std::memory_order_relaxed));
    }

    // The pool's execution context is gone (nothing will run on it again): the actor is
    // taken for good. announce() then only records kinds and try_take_idle() fails, so
    // no drain runs or is posted again.
    void take_for_good() noexcept { word_.fetch_or(owner, std::memory_order_relaxed); }

    // A posted drain starts: scheduled -> running.
    void begin() noexcept {
        [[maybe_unused]] const std::uint32_t s = word_.fetch_xor(owner, std::memory_order_acquire);
        FAIRPOOL_DEBUG_ASSERT((s & owner) == scheduled);
    }

private:
    std::atomic<std::uint32_t> word_{0};
};

}  // namespace fairpool::detail
