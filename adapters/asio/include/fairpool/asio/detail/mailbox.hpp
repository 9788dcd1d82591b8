#pragma once
// The actor's mailbox: fixed-capacity Boost.Lockfree queues, one per kind of command,
// and the scheduling state that says which kinds are pending and who holds the actor
// (actor_state.hpp). Commands without a payload (start, shutdown, a timer's expiry) are
// a pending bit alone; a resize is a pending bit and one word of sizes, latest wins (a
// resize not yet taken by a drain is replaced by a later one: the sizes in force are
// the last asked for, and nothing can overflow).
//
// Capacities, so that a command that cannot be refused never finds its queue full
// (L = max_waiters + mailbox_capacity, the limit on outstanding acquires, admission;
// the actor may count one acquire beyond it, fed directly and queued after its own
// admission check: at most L + 1 outstanding):
//   acquires ..... L: only acquires admitted on their caller's thread are pushed
//   slot events .. slot_capacity: per slot at most one release, or spawn, check, reset
//                  or retire result
//   cancels ...... 2(L + 1): only an outstanding acquire's cancellation slot has a
//                  handler (installed when it is counted: admitted on its caller's
//                  thread, or queued by the scheduler after being fed directly), and it
//                  sends at most one. Admission counts the cancels queued and admits
//                  no acquire while they and the acquires outstanding exceed 2L
//                  (admission.hpp): the outstanding acquires that may still send one
//                  plus those queued only grow by an admission, so they stay within
//                  2(L + 1), the actor's one beyond included. (Counting on every drain
//                  serving them all is not enough: with several threads, acquires
//                  completed by a drain are delivered, and new ones admitted, pushed
//                  and completed by the same drain, while it serves.)
//   deregisters .. 2(L + 1): only a handle with an outstanding acquire sends one (the
//                  same bound, counted the same way)
// Boost.Lockfree's fixed-size queues hold at most 65535 nodes (one of them a dummy):
// hence L <= 32766 and slot_capacity <= 65534 (validate, error.cpp).
#include <boost/lockfree/queue.hpp>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fairpool/asio/detail/actor_state.hpp"
#include "fairpool/asio/detail/commands.hpp"

namespace fairpool::detail {

// The kinds of command: one pending bit each.
namespace command_kind {
inline constexpr std::uint32_t start = 1U << 0;
inline constexpr std::uint32_t slot_event = 1U << 1;  // release and the results of resource work
inline constexpr std::uint32_t acquire = 1U << 2;
inline constexpr std::uint32_t cancel = 1U << 3;
inline constexpr std::uint32_t deregister = 1U << 4;
inline constexpr std::uint32_t shutdown = 1U << 5;
inline constexpr std::uint32_t tick = 1U << 6;  // the deadline timer expired
inline constexpr std::uint32_t resize = 1U << 7;
}  // namespace command_kind

// The sizes of a resize in one word (each at most core::max_slots_limit, below bit 48),
// whether one is pending (bit 62: a resize to max_slots 0 and min_slots 0 is a resize
// too) and whether the pool is shutting down (the top bit): a resize and the shutdown
// decide their order in this one word.
// Once `shut` is set no resize is posted; a resize posted before it is taken by the
// drain that feeds the shutdown, ahead of it, even if its own announcement comes
// later (it then finds nothing to take). So a resize that was accepted is fed before
// the shutdown, and one that was not is refused `closed`.
class resize_request {
public:
    // A producer, before it announces command_kind::resize: false if the pool is
    // shutting down (nothing posted).
    [[nodiscard]] bool post(std::uint64_t max_slots, std::uint64_t min_slots) noexcept {
        std::uint64_t w = word_.load(std::memory_order_relaxed);
        do {
            if ((w & shut_bit) != 0) return false;
        } while (!word_.compare_exchange_weak(w, pending_bit | max_slots << 32 | min_slots, std::memory_order_release,
                                              std::memory_order_relaxed));
        return true;
    }
    // request_shutdown, before it announces command_kind::shutdown.
    void shut() noexcept { word_.fetch_or(shut_bit, std::memory_order_acq_rel); }
    // The drain: the latest sizes posted and not yet taken, if any.
    [[nodiscard]] bool take(std::uint64_t& max_slots, std::uint64_t& min_slots) noexcept {
        const std::uint64_t w = word_.fetch_and(shut_bit, std::memory_order_acquire) & ~shut_bit;
        max_slots = (w & ~pending_bit) >> 32, min_slots = w & 0xffff'ffffU;
        return (w & pending_bit) != 0;
    }

private:
    static constexpr std::uint64_t shut_bit = std::uint64_t{1} << 63;
    static constexpr std::uint64_t pending_bit = std::uint64_t{1} << 62;
    std::atomic<std::uint64_t> word_{0};
};

struct mailbox {
    mailbox(std::uint32_t acquire_limit, std::uint32_t slot_capacity)
        : acquires(acquire_limit),
          slot_events(slot_capacity),
          cancels(2 * (std::size_t{acquire_limit} + 1)),
          deregisters(2 * (std::size_t{acquire_limit} + 1)) {}

    template <class T>
    using queue = boost::lockfree::queue<T, boost::lockfree::fixed_sized<true>>;

    actor_state state;
    queue<acquire_command> acquires;
    queue<slot_command> slot_events;
    queue<std::uint64_t> cancels;      // waiter ids
    queue<std::uint64_t> deregisters;  // handle ids
    resize_request resize;
};

}  // namespace fairpool::detail
