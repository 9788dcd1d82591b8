#pragma once
// Admission: at most `limit` acquires outstanding (max_waiters + mailbox_capacity, the
// mailbox's bound: mailbox.hpp), each counted in the pool's count and in its handle's
// block from its admission until its outcome is delivered. One past the limit is
// refused with error::busy, and counted here beside the core's counters
// (stats.busy_rejections) and in its handle's block.
//
// An acquire started elsewhere than on the pool's executor is admitted on its caller's
// thread (admit). One started on the pool's executor and fed to the core directly is
// admitted inside that drain (full), and counted only if the scheduler queues it
// (count): one completed in that very step can send nothing more.
#include <atomic>
#include <cstdint>

#include "fairpool/asio/detail/handle_block.hpp"

namespace fairpool::detail {

class admission {
public:
    explicit admission(std::uint32_t limit) noexcept : limit_(limit) {}

    [[nodiscard]] std::uint32_t limit() const noexcept { return limit_; }

    // Any thread: counts an acquire as outstanding (the pool's and its handle's), unless
    // `limit` already are.
    [[nodiscard]] bool admit(handle_block* block) noexcept {
        if (outstanding_.fetch_add(1, std::memory_order_acq_rel) >= limit_) {
            outstanding_.fetch_sub(1, std::memory_order_acq_rel);
            return false;
        }
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
        return true;
    }

    // The actor, for an acquire fed directly: whether it must be refused. (The actor
    // counts at most one acquire beyond the limit this way: mailbox.hpp.)
    [[nodiscard]] bool full() const noexcept { return outstanding_.load(std::memory_order_relaxed) >= limit_; }

    // The actor: an acquire fed directly and queued by the scheduler now counts.
    void count(handle_block* block) noexcept {
        outstanding_.fetch_add(1, std::memory_order_acq_rel);
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
    }

    // An operation's outcome reached its handler (or was dropped): it no longer counts.
    void delivered(handle_block* block, bool counted) noexcept {
        if (!counted) return;
        if (block) block->outstanding.fetch_sub(1, std::memory_order_acq_rel);
        outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    }

    // An acquire refused with error::busy.
    void refused(handle_block* block) noexcept {
        busy_rejections_.fetch_add(1, std::memory_order_relaxed);
        if (block) block->refused_busy();
    }

    [[nodiscard]] std::uint64_t busy_rejections() const noexcept {
        return busy_rejections_.load(std::memory_order_relaxed);
    }

private:
    const std::uint32_t limit_;
    std::atomic<std::uint32_t> outstanding_{0};
    std::atomic<std::uint64_t> busy_rejections_{0};
};

}  // namespace fairpool::detail
