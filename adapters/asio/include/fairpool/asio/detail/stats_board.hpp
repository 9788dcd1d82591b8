#pragma once
// The scheduler's counters, published by the actor after each drain (and before it
// posts a completion) and readable from any thread without a lock (a sequence lock over
// relaxed atomic words). One writer at a time: the drain holding the actor.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <thread>

#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

class stats_board {
public:
    // Pays for what moves. The words that move with every acquire and release
    // (acquires, grants, the gauges: 14 words) are stored as they are, since comparing
    // them costs more than storing them. The other counters (rejections, spawns,
    // retirements, leaks, health, resizes, busy: 23 words) are stored only when the
    // caller says one of them may have moved: only a step that emits an effect other
    // than a grant, or feeds an event other than an acquire or a release, moves one
    // (docs/CONTRACT.md section 9). Of the histogram (65 words) only the buckets in
    // `touched_buckets` are stored (the scheduler's take_touched_wait_buckets(): bit b
    // for bucket b, bit 63 for buckets 63 and 64). Both promises are checked here in
    // debug builds. The writer keeps no copy of its own: the board's words are what it
    // last stored, and its relaxed loads of them see its own stores.
    void publish(const core::stats& s, bool rare_moved, std::uint64_t touched_buckets) noexcept {
        const auto* next = reinterpret_cast<const unsigned char*>(&s);
        FAIRPOOL_DEBUG_ASSERT(rare_moved || same_as_board(next, rare_begin, rare_end));
        const std::uint64_t seq = sequence_.load(std::memory_order_relaxed);
        sequence_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        store(next, 0, rare_begin);
        if (rare_moved) store(next, rare_begin, rare_end);
        store(next, rare_end, scalar_words);
        for (std::uint64_t left = touched_buckets; left != 0; left &= left - 1) {
            const auto bucket = static_cast<std::size_t>(std::countr_zero(left));
            store(next, scalar_words + bucket, scalar_words + bucket + 1);
            if (bucket == 63) store(next, scalar_words + 64, words);
        }
        FAIRPOOL_DEBUG_ASSERT(same_as_board(next, scalar_words, words));
        sequence_.store(seq + 2, std::memory_order_release);
    }

    // Every word, whatever moved: the first publish, and readers of a scheduler that
    // did not start at zero.
    void publish_all(const core::stats& s) noexcept { publish(s, true, all_buckets); }

    [[nodiscard]] core::stats read() const noexcept {
        std::array<std::uint64_t, words> raw;
        // Bound: an attempt fails only when a publish overlapped it, and the one writer
        // publishes at most once per drain (a few dozen stores), so k failed attempts
        // mean k overlapping publishes. Past spin_attempts in a row the reader yields
        // between attempts, so a writer preempted mid-publish gets the CPU to finish.
        for (std::uint32_t attempt = 0;; ++attempt) {
            if (attempt >= spin_attempts) std::this_thread::yield();
            const std::uint64_t before = sequence_.load(std::memory_order_acquire);
            if (before % 2 != 0) continue;
            for (std::size_t i = 0; i < words; ++i) raw[i] = words_[i].load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (sequence_.load(std::memory_order_relaxed) == before) break;
        }
        core::stats s;
        std::memcpy(static_cast<void*>(&s), raw.data(), sizeof s);
        return s;
    }

private:
    static_assert(std::is_trivially_copyable_v<core::stats> && sizeof(core::stats) % 8 == 0);
    static constexpr std::size_t words = sizeof(core::stats) / 8;
    static constexpr std::size_t scalar_words = offsetof(core::stats, wait_histogram) / 8;
    static_assert(offsetof(core::stats, wait_histogram) % 8 == 0 &&
                  sizeof(core::stats::wait_histogram) == (words - scalar_words) * 8);
    // The rare counters: those a steady acquire and release leave alone, from the
    // rejections up to the gauges.
    static constexpr std::size_t rare_begin = offsetof(core::stats, rejections) / 8;
    static constexpr std::size_t rare_end = offsetof(core::stats, queued_waiters) / 8;
    static_assert(offsetof(core::stats, grants_after_wait) / 8 < rare_begin && rare_begin < rare_end &&
                  rare_end < scalar_words);
    static constexpr std::uint32_t spin_attempts = 64;
    static constexpr std::uint64_t all_buckets = ~std::uint64_t{0};
    static_assert(words - scalar_words == 65, "buckets 0..64: bit 63 stands for 63 and 64");

    static std::uint64_t word(const unsigned char* raw, std::size_t i) noexcept {
        std::uint64_t w;
        std::memcpy(&w, raw + i * 8, 8);
        return w;
    }

    // Word i as the writer last stored it (only the writer calls this).
    [[nodiscard]] std::uint64_t on_board(std::size_t i) const noexcept { return words_[i].load(std::memory_order_relaxed); }

    // Whether words [first, last) of `raw` are what the board holds.
    [[nodiscard]] bool same_as_board(const unsigned char* raw, std::size_t first, std::size_t last) const noexcept {
        for (std::size_t i = first; i < last; ++i)
            if (word(raw, i) != on_board(i)) return false;
        return true;
    }

    // Words [first, last) of `raw` into the board.
    void store(const unsigned char* raw, std::size_t first, std::size_t last) noexcept {
#pragma GCC unroll 32
        for (std::size_t i = first; i < last; ++i) words_[i].store(word(raw, i), std::memory_order_relaxed);
    }

    std::atomic<std::uint64_t> sequence_{0};
    std::array<std::atomic<std::uint64_t>, words> words_{};
};

}  // namespace fairpool::detail
