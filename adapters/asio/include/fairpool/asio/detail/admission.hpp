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
//
// The same word counts the cancels and the deregistrations queued in the mailbox (from
// before their push until a drain has served them), and admit also refuses while
// either kind, with the acquires outstanding, exceeds 2L. Without that, acquires whose
// outcomes are delivered on other threads while a drain is still serving could be
// replaced by new ones, each sending one more cancel or deregistration, without bound
// before a drain serves those queues; with it, the outstanding acquires that may still
// send one, plus those queued, never exceed the queues' 2(L + 1) (mailbox.hpp). In
// normal running fewer than L + 2 of a kind are ever queued, and this refuses nothing.
//
// One word, so that admit decides on one consistent reading and a refusal changes
// nothing (a compare-and-swap: a refused caller never makes another be refused):
// bits 0-31 the acquires outstanding, 32-47 the cancels queued, 48-63 the
// deregistrations queued (each at most 2(L + 1) <= 65534).
#include <atomic>
#include <cstdint>

#include "fairpool/asio/detail/handle_block.hpp"

namespace fairpool::detail {

class admission {
public:
    explicit admission(std::uint32_t limit) noexcept : limit_(limit) {}

    [[nodiscard]] std::uint32_t limit() const noexcept { return limit_; }

    // Any thread: counts an acquire as outstanding (the pool's and its handle's), unless
    // `limit` already are (or too many cancels or deregistrations are queued).
    [[nodiscard]] bool admit(handle_block* block) noexcept {
        std::uint64_t w = word_.load(std::memory_order_relaxed);
        do {
            if (!room(w)) return false;
        } while (!word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_relaxed));
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
        return true;
    }

    // The actor, for an acquire fed directly: whether it must be refused. (The actor
    // counts at most one acquire beyond the limit this way: mailbox.hpp. Only the
    // acquires: it runs only with nothing pending, so the cancels and deregistrations
    // counted then are only those whose senders are between their count and their
    // announcement.)
    [[nodiscard]] bool full() const noexcept {
        return static_cast<std::uint32_t>(word_.load(std::memory_order_relaxed)) >= limit_;
    }

    // The actor: an acquire fed directly and queued by the scheduler now counts.
    void count(handle_block* block) noexcept {
        word_.fetch_add(1, std::memory_order_acq_rel);
        if (block) block->outstanding.fetch_add(1, std::memory_order_acq_rel);
    }

    // An operation's outcome reached its handler (or was dropped): it no longer counts.
    void delivered(handle_block* block, bool counted) noexcept {
        if (!counted) return;
        if (block) block->outstanding.fetch_sub(1, std::memory_order_acq_rel);
        word_.fetch_sub(1, std::memory_order_acq_rel);
    }

    // A cancel or a deregistration: before its push (any thread), and once a drain has
    // served it.
    void cancel_queued() noexcept { word_.fetch_add(one_cancel, std::memory_order_relaxed); }
    void cancel_served() noexcept { word_.fetch_sub(one_cancel, std::memory_order_relaxed); }
    void deregistration_queued() noexcept { word_.fetch_add(one_deregistration, std::memory_order_seq_cst); }
    void deregistration_served() noexcept { word_.fetch_sub(one_deregistration, std::memory_order_relaxed); }

    // An acquire refused with error::busy: counted before its completion is posted, and
    // withdrawn if that post throws (pool_state::refuse_busy), so that only refusals
    // delivered stay counted.
    void refused(handle_block* block) noexcept {
        busy_rejections_.fetch_add(1, std::memory_order_relaxed);
        if (block) block->refused_busy();
    }
    void refusal_withdrawn(handle_block* block) noexcept {
        busy_rejections_.fetch_sub(1, std::memory_order_relaxed);
        if (block) block->busy_refusal_withdrawn();
    }

    [[nodiscard]] std::uint64_t busy_rejections() const noexcept {
        return busy_rejections_.load(std::memory_order_relaxed);
    }

private:
    static constexpr std::uint64_t one_cancel = std::uint64_t{1} << 32;
    static constexpr std::uint64_t one_deregistration = std::uint64_t{1} << 48;

    [[nodiscard]] bool room(std::uint64_t w) const noexcept {
        const std::uint64_t acquires = w & 0xffff'ffffU;
        const std::uint64_t cancels = (w >> 32) & 0xffffU;
        const std::uint64_t deregistrations = w >> 48;
        const std::uint64_t most = 2 * std::uint64_t{limit_};
        return acquires < limit_ && acquires + cancels <= most && acquires + deregistrations <= most;
    }

    const std::uint32_t limit_;
    std::atomic<std::uint64_t> word_{0};
    std::atomic<std::uint64_t> busy_rejections_{0};
};

}  // namespace fairpool::detail
