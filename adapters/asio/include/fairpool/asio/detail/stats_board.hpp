#pragma once
// The scheduler's counters, published by the actor after each drain and readable from
// any thread without a lock (a sequence lock over relaxed atomic words).
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

class stats_board {
public:
    void publish(const core::stats& s) noexcept {
        const auto* raw = reinterpret_cast<const unsigned char*>(&s);
        const std::uint64_t seq = sequence_.load(std::memory_order_relaxed);
        sequence_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        for (std::size_t i = 0; i < words; ++i) {
            std::uint64_t word;
            std::memcpy(&word, raw + i * 8, 8);
            words_[i].store(word, std::memory_order_relaxed);
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
    static constexpr std::uint32_t spin_attempts = 64;
    std::atomic<std::uint64_t> sequence_{0};
    std::array<std::atomic<std::uint64_t>, words> words_{};
};

}  // namespace fairpool::detail
