#pragma once
// The scheduler's counters, published by the actor after each drain (and before it
// posts a completion) and readable from any thread (a sequence lock over relaxed atomic
// words, with a fallback that bounds a reader's wait). One writer at a time: the drain
// holding the actor. The writer never waits for a reader.
//
// Why the fallback. A sequence-lock read fails whenever a publish overlaps it, and a busy
// pool publishes back to back (every ~100-300 ns; a round trip publishes twice), while a
// read copies 103 words whose cache lines the writer keeps taking. Measured on 2 shared
// cores (release build, 1 s runs of back-to-back pool.stats() on one core against one
// io_context thread doing only acquire and release on the other, 3.6-4 M round trips/s),
// with the sequence lock alone: the median read succeeded at once and p99.9 after 39-64
// failed attempts, but the longest after 399 to 9,931, one of them losing to 212,878
// publishes; against a writer that only publishes (this board alone, ~100 M publishes/s)
// up to 34,309 failed attempts in a row, losing to millions of publishes. Nothing but luck
// ended them. So a reader that has failed attempts_before_asking attempts in a row asks
// the writer for a copy, and gets one a publish or so after asking (the same runs: median
// 1, max 3 publishes from the request to the serve against the pool, median 2-5, max 86
// against the publish-only writer, whose publishes take ~10 ns while the request takes a
// few hundred to reach it; a served read took ~0.4 us at the median, 1-2 us at p99 in all
// but one run, whose p99 was a yield that lost the CPU for 2 ms). What is left of long
// reads there is the machine's: the writer descheduled in the middle of a publish, or the
// reader itself (reads that succeeded at their first attempt took up to 10-57 ms in the
// same runs, before the change and after).
//
//  - Askers take askers_ (a mutex: only readers that have already failed
//    attempts_before_asking times touch it; the writer never does; its lock throws only
//    on errors a thread that never holds it twice cannot meet), so at most one request
//    is outstanding. ticket_ is odd while a request is outstanding, even
//    otherwise; only the holder of askers_ makes it odd (t to t + 1), only the writer
//    makes it even (t + 1 to t + 2).
//  - The writer, at the end of every publish (after its sequence store), loads ticket_
//    (one relaxed load and a test, of the word next to the sequence word). If it is odd, it
//    loads it again with acquire, copies the stats it has just published whole into
//    served_ (a plain copy, no atomics) and stores ticket_ + 1 with release.
//  - The asker makes ticket_ odd (unless it already is) and waits until it is that odd
//    value + 1 (acquire), then copies served_. Meanwhile it keeps trying the sequence
//    lock, which succeeds at once when nobody publishes (an idle pool serves nobody). If
//    that succeeds first, it returns it and leaves its request outstanding: the next
//    publish serves it into served_, unread, and an asker that finds ticket_ odd waits
//    for that serve instead of asking again.
//
// Why it is right. served_ is never written while a reader copies it: a reader copies it
// only once ticket_ is even again, and holds askers_ until it has copied, so no request,
// and so no serve, can come before it is done. Each serve's copy happens after every
// earlier copy of served_: the request it answers was made (with release) by a later
// holder of askers_ than the reader of that copy, which saw ticket_ even again, and the
// writer's acquire load read that request. An asker's copy happens after the writer's
// through ticket_'s release and acquire. What it gets is one whole publish P (the
// writer's own argument), complete on the sequence lock too (served after the sequence
// store, so a later read on the same thread never goes back), and no older than any
// publish completed before the read began: P's serve read the odd ticket_ that the asker
// saw or stored after the read began, so no publish after P can have completed before.
//
// The bound. The first publish that loads ticket_ once the request is visible serves
// it, and a writer that stops publishing lets the sequence lock succeed. So a read ends
// after attempts_before_asking failed attempts, the wait for askers_ (askers ahead,
// each bounded alike) and one publish after its request reaches the writer; only a
// writer preempted in the middle of a publish makes a reader wait (it spins, then
// yields so that the writer gets the CPU back), as the sequence lock alone does. The
// writer pays a load and a branch per publish (3 instructions; 6 per round trip of
// bench/scenarios, which publishes twice) and a copy of 824 bytes per request.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <thread>

#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::detail {

class stats_board {
public:
    // Pays for what moves. The words that move with every acquire and release
    // (acquires, grants, the gauges: 15 words) are stored as they are, since comparing
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
        if (ticket_.load(std::memory_order_relaxed) % 2 != 0) [[unlikely]]
            serve(s);
    }

    // Every word, whatever moved: the first publish, and readers of a scheduler that
    // did not start at zero.
    void publish_all(const core::stats& s) noexcept { publish(s, true, all_buckets); }

    // A whole publish: the last one completed before the call, or a later one.
    [[nodiscard]] core::stats read() const noexcept {
        core::stats s;
        // An attempt fails only when a publish overlapped it.
        for (std::uint32_t attempt = 0; attempt < attempts_before_asking; ++attempt)
            if (try_read(s)) return s;
        return read_by_asking();
    }

    // The fallback alone (see the top of this file): ask the writer for a copy of its
    // next publish, trying the sequence lock meanwhile unless told not to (then only a
    // publish can complete it: tests/adapter/stats_board_test.cpp).
    [[nodiscard, gnu::noinline]] core::stats read_by_asking(bool meanwhile_try_sequence = true) const noexcept {
        const std::lock_guard<std::mutex> one_asker(askers_);
        std::uint64_t asked = ticket_.load(std::memory_order_relaxed);
        if (asked % 2 == 0) ticket_.store(++asked, std::memory_order_release);
        core::stats s;
        for (std::uint32_t attempt = 0;; ++attempt) {
            if (ticket_.load(std::memory_order_acquire) == asked + 1) return served_;
            if (meanwhile_try_sequence && try_read(s)) return s;
            if (attempt >= spin_attempts) std::this_thread::yield();
        }
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
    // Failed sequence-lock attempts in a row before a reader asks the writer; then
    // rounds of waiting (a look at ticket_, an attempt) before it yields between them, so
    // that a writer preempted mid-publish gets the CPU back. A serve takes a few hundred
    // ns to come back, longer than 64 rounds that fail at once on an odd sequence.
    static constexpr std::uint32_t attempts_before_asking = 16;
    static constexpr std::uint32_t spin_attempts = 256;
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

    // One sequence-lock attempt: false if a publish overlapped it.
    bool try_read(core::stats& out) const noexcept {
        std::array<std::uint64_t, words> raw;
        const std::uint64_t before = sequence_.load(std::memory_order_acquire);
        if (before % 2 != 0) return false;
        for (std::size_t i = 0; i < words; ++i) raw[i] = words_[i].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (sequence_.load(std::memory_order_relaxed) != before) return false;
        std::memcpy(static_cast<void*>(&out), raw.data(), sizeof out);
        return true;
    }

    // The writer's side of the fallback: `s` (just published) whole into served_.
    [[gnu::cold, gnu::noinline]] void serve(const core::stats& s) noexcept {
        const std::uint64_t asked = ticket_.load(std::memory_order_acquire);
        served_ = s;
        ticket_.store(asked + 1, std::memory_order_release);
    }

    // Words [first, last) of `raw` into the board.
    void store(const unsigned char* raw, std::size_t first, std::size_t last) noexcept {
#pragma GCC unroll 32
        for (std::size_t i = first; i < last; ++i) words_[i].store(word(raw, i), std::memory_order_relaxed);
    }

    std::atomic<std::uint64_t> sequence_{0};
    // Odd while a reader's request is outstanding (read_by_asking, serve).
    mutable std::atomic<std::uint64_t> ticket_{0};
    std::array<std::atomic<std::uint64_t>, words> words_{};
    core::stats served_{};
    mutable std::mutex askers_;
};

}  // namespace fairpool::detail
