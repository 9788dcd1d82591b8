#pragma once
// The scheduler's counters, published by the actor after each drain (and before it
// posts a completion) and readable from any thread without a lock (a sequence lock over
// relaxed atomic words). One writer at a time: the drain holding the actor.
#include <algorithm>
#include <array>
#include <atomic>
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
    // (docs/CONTRACT.md section 9; checked here in debug builds). Of the histogram (65
    // words) only the buckets that changed are stored: each grant adds one to exactly
    // one bucket, so the search for them, from bucket 0 (where immediate grants land)
    // up, stops once it has found as many new waits as there were new grants.
    // The writer keeps no copy of its own: the board's words are what it last stored,
    // and its relaxed loads of them see its own stores.
    void publish(const core::stats& s, bool rare_moved) noexcept {
        const auto* next = reinterpret_cast<const unsigned char*>(&s);
        FAIRPOOL_DEBUG_ASSERT(rare_moved || same_as_board(next, rare_begin, rare_end));
        // Read before the grants' words are overwritten below.
        std::uint64_t waits_to_find = grants(next) - (on_board(grants_immediate_word) + on_board(grants_after_wait_word));
        const std::uint64_t seq = sequence_.load(std::memory_order_relaxed);
        sequence_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        store(next, 0, rare_begin);
        if (rare_moved) store(next, rare_begin, rare_end);
        store(next, rare_end, scalar_words);
        for (std::size_t i = scalar_words; waits_to_find > 0; ++i) {
            FAIRPOOL_ASSERT(i < words);  // each grant is in exactly one bucket
            const std::uint64_t bucket = word(next, i);
            const std::uint64_t added = bucket - on_board(i);
            if (added == 0) continue;
            words_[i].store(bucket, std::memory_order_relaxed);
            waits_to_find -= added;
        }
        sequence_.store(seq + 2, std::memory_order_release);
    }

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
    static constexpr std::size_t grants_immediate_word = offsetof(core::stats, grants_immediate) / 8;
    static constexpr std::size_t grants_after_wait_word = offsetof(core::stats, grants_after_wait) / 8;
    static constexpr std::uint32_t spin_attempts = 64;

    static std::uint64_t word(const unsigned char* raw, std::size_t i) noexcept {
        std::uint64_t w;
        std::memcpy(&w, raw + i * 8, 8);
        return w;
    }

    static std::uint64_t grants(const unsigned char* raw) noexcept {
        return word(raw, grants_immediate_word) + word(raw, grants_after_wait_word);
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
