#pragma once
// The scheduler's counters, published by the actor after each drain (and before it
// posts a completion) and readable from any thread without a lock (a sequence lock over
// relaxed atomic words). One writer at a time: the drain holding the actor.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

class stats_board {
public:
    // Stores only the groups of 8 words that differ from what was last published, and
    // nothing (not even the sequence) when nothing changed: a cycle changes a few
    // counters, gauges and one histogram bucket out of ~90 words.
    void publish(const core::stats& s) noexcept {
        std::array<std::uint64_t, padded_words> next{};
        std::memcpy(next.data(), &s, sizeof s);
        std::uint32_t changed = 0;  // a bit per group
        for (std::size_t g = 0; g < groups; ++g) {
            std::uint64_t diff = 0;
            for (std::size_t j = 0; j < group_words; ++j) diff |= next[g * group_words + j] ^ shadow_[g * group_words + j];
            changed |= static_cast<std::uint32_t>(diff != 0) << g;
        }
        if (changed == 0) return;
        const std::uint64_t seq = sequence_.load(std::memory_order_relaxed);
        sequence_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        for (std::size_t g = 0; g < groups; ++g) {
            if ((changed & (1U << g)) == 0) continue;
            for (std::size_t i = g * group_words; i < (g + 1) * group_words; ++i) {
                words_[i].store(next[i], std::memory_order_relaxed);
                shadow_[i] = next[i];
            }
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
    static constexpr std::size_t group_words = 8;
    static constexpr std::size_t groups = (words + group_words - 1) / group_words;
    static constexpr std::size_t padded_words = groups * group_words;
    static_assert(groups <= 32);
    static constexpr std::uint32_t spin_attempts = 64;
    std::atomic<std::uint64_t> sequence_{0};
    std::array<std::atomic<std::uint64_t>, padded_words> words_{};  // the padding stays 0
    std::array<std::uint64_t, padded_words> shadow_{};  // what words_ holds (the writer's copy)
};

}  // namespace fairpool::detail
