#pragma once
// The flight recorder (pool_options::recording): the actor's side and the writer thread.
//
//   actor    before each core step: starts the next segment when one is due (a
//            segment marker and a snapshot of the state before the step), or ends a
//            gap; after it: copies the event and its effects into the ring, field by
//            field as trace format v3's records (flight_record.hpp). Never blocks,
//            allocates, formats or does I/O: when the ring has no room for a
//            step, the step is dropped and counted (a gap); once the ring has room for
//            a gap record, a segment start and a whole snapshot again, the gap is
//            pushed and a new segment starts with a fresh snapshot.
//   writer   a thread of its own, waking every flush_interval, for dump_recording and
//            the recorder's end, and when the actor wakes it: drains the ring into the
//            flight_writer.
//
// The wake: a POSIX semaphore (sem_post never blocks; it makes a system call only when
// the writer is waiting in sem_clockwait). The actor posts when a step leaves more than
// half the ring used (its high-water mark), at most once per half ring of records it
// pushes: after a post, the next waits for capacity/2 more records. Each post is
// followed by a drain that begins after it and takes everything pushed before it; so
// while the ring is more than half full, either a post is still to be served or more
// than half a ring was pushed since the last post, and the step that pushed the last of
// them posted. The ring never stays above its high-water mark until flush_interval. The
// actor's count of records pushed and the point of its next post are its own (no
// atomic, no fence): the check is two compares after the load of the ring's room the
// step makes anyway. commit, dump_recording and the end post the same semaphore, after
// saying why under the mutex.
//
// The ring (flight_ring.hpp) is a single-producer single-consumer queue of bytes: the actor is one producer at a
// time (whichever thread holds it; taking the actor orders it after the last holder),
// the writer thread the one consumer.
#include <boost/system/error_code.hpp>
#include <pthread.h>
#include <semaphore.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "fairpool/asio/detail/flight_record.hpp"
#include "fairpool/asio/detail/flight_ring.hpp"
#include "fairpool/asio/detail/flight_writer.hpp"
#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/scheduler.hpp"

namespace fairpool::detail {

class flight_recorder {
public:
    // Segment 0 starts at once, with a snapshot of `core` (not started yet); then the
    // writer thread starts, and waits for commit() before it touches the filesystem.
    flight_recorder(const recorder_options& o, const core::scheduler& core);
    flight_recorder(const flight_recorder&) = delete;
    flight_recorder& operator=(const flight_recorder&) = delete;
    // After the actor's last step: a pending gap is still written; everything in the
    // ring is written and the writer thread joined. Never committed (the pool's
    // construction threw after the recorder was made): the writer thread is joined and
    // nothing is written, so a pool that was never made leaves no file, no directory,
    // and an earlier recording where it was (not moved into previous/).
    ~flight_recorder();

    // The pool is made (pool_state::start, once nothing in its construction can throw
    // any more): the writer may create the directory, move an earlier recording aside
    // and write. Before this, it writes nothing.
    void commit() noexcept;

    // The actor, around each core step.
    void before_step(const core::scheduler& core) noexcept {
        if (events_left_ == 0 || in_gap_) [[unlikely]]
            start_segment(core);
    }
    void after_step(const core::event& e, const core::step_result& r) noexcept {
        ++events_seen_;
        if (in_gap_ || !ring_.has_room(trace::v3::max_step_bytes(r.effects.size()))) [[unlikely]]
            return lose_step();
        const std::size_t bytes = ring_.advance(trace::v3::put_step(ring_.tail(), base_, e, r.effects, r.error));
        ring_.publish();
        --events_left_;
        pushed(bytes, ring_.room_seen());
    }

    // Blocks until the writer has drained the ring and written the retained segments
    // into `dir`. From any thread but the actor.
    [[nodiscard]] boost::system::error_code dump(const std::filesystem::path& dir);
    [[nodiscard]] recording_status status() const;
    // The writer thread's CPU time so far, user and system (its thread's CPU clock,
    // pthread_getcpuclockid); what it had at its end once it has ended. Any thread.
    [[nodiscard]] std::chrono::nanoseconds writer_cpu_time() const noexcept;
    // The actor's high-water posts so far (at most one per half ring of bytes pushed).
    [[nodiscard]] std::uint64_t high_water_wakes() const noexcept {
        return high_water_wakes_.load(std::memory_order_relaxed);
    }

    // The seam for a writer that stalls (the tests' gap path) or drains only at the end
    // (bench/scenarios/recorder.cpp): while false, the actor never posts at its
    // high-water mark, so a writer whose flush_interval is hours drains only for a dump
    // and at the end. True everywhere else.
    static inline std::atomic<bool> wake_at_high_water{true};

    // The ring's capacity in bytes for these options and this (resolved) config: ring_bytes
    // beyond a gap marker, a segment marker and the largest snapshot.
    [[nodiscard]] static std::size_t capacity(const recorder_options& o, const core::config& resolved) noexcept {
        return static_cast<std::size_t>(o.ring_bytes) + ring_record::gap_bytes + ring_record::segment_bytes +
               ring_record::max_snapshot_bytes(resolved);
    }
    // What the ring takes in memory: its capacity, and the largest record past its end.
    [[nodiscard]] static std::size_t memory(const recorder_options& o, const core::config& resolved) noexcept {
        return capacity(o, resolved) + ring_record::max_record_bytes(resolved);
    }

private:
    struct dump_request {
        std::filesystem::path dir;
        boost::system::error_code result;
        bool done = false;
    };

    void start_segment(const core::scheduler& core) noexcept;
    void lose_step() noexcept;
    // The actor pushed `bytes`, leaving `room` (as last seen): past the high-water mark
    // (more than half the ring used) and half a ring past the last post, it wakes the writer.
    void pushed(std::size_t bytes, std::size_t room) noexcept {
        pushed_ += bytes;
        if (room < high_water_room_ && pushed_ >= next_wake_at_) [[unlikely]]
            wake_writer();
    }
    void wake_writer() noexcept;
    void post() noexcept { ::sem_post(&wake_); }  // fails only past SEM_VALUE_MAX posts unserved
    // Only the actor writes these counters: a load and a store, not a read-modify-write.
    static void bump(std::atomic<std::uint64_t>& counter) noexcept {
        counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    void run_writer();
    void drain();
    [[nodiscard]] static std::chrono::nanoseconds cpu_time(clockid_t clock) noexcept;

    const recorder_options options_;
    const std::size_t capacity_;
    // The ring's room below which it is more than half full.
    const std::size_t high_water_room_ = capacity_ - capacity_ / 2;
    flight_ring ring_;

    // The actor's.
    std::uint64_t events_seen_ = 0;  // recorded or lost
    std::uint64_t events_left_ = 0;  // in the current segment
    std::uint64_t next_segment_ = 0;
    std::uint64_t lost_ = 0;  // in the open gap
    // In a gap: the ring's room the last attempt to end it found too small (0 before the
    // first attempt). The ring only gains room when the writer drains it, so until it has
    // more than this, each step of the gap costs one load of the writer's index, not a
    // count of the state.
    std::size_t room_lacking_ = 0;
    bool in_gap_ = false;
    trace::v3::delta_base base_;  // the segment's steps so far (v3 deltas), zero at its start
    std::uint32_t snapshot_left_ = 0;  // the writer's: snapshot records of a segment still to read
    std::uint64_t pushed_ = 0;        // bytes pushed into the ring
    std::uint64_t next_wake_at_ = 0;  // pushed_ at which a post is due again (half a ring past the last)

    // Written by the actor, read by status().
    std::atomic<std::uint64_t> segments_started_{0};
    std::atomic<std::uint64_t> events_lost_{0};
    std::atomic<std::uint64_t> gaps_{0};
    std::atomic<std::uint64_t> high_water_wakes_{0};

    // The writer's wake: posted by the actor (its high-water mark), commit, dump and the
    // end; the writer waits on it, until flush_interval has passed at most.
    sem_t wake_{};
    mutable std::mutex mutex_;
    std::condition_variable dumped_;
    std::vector<dump_request*> requests_;  // guarded by mutex_
    bool stopping_ = false;                 // guarded by mutex_
    bool committed_ = false;                // guarded by mutex_ (the destructor's after the join)
    recording_status written_;              // guarded by mutex_: the writer's part, after each drain

    flight_writer writer_;  // the writer thread's (the destructor's after the join)
    // The writer thread's CPU clock; its reading at the thread's end (-1 before).
    clockid_t writer_clock_{};
    bool writer_clock_known_ = false;
    std::atomic<std::int64_t> writer_cpu_at_end_{-1};
    std::thread thread_;
};

inline flight_recorder::flight_recorder(const recorder_options& o, const core::scheduler& core)
    : options_(o),
      capacity_(capacity(o, core.configuration())),
      ring_(capacity_, ring_record::max_record_bytes(core.configuration())),
      writer_(o, core.configuration()) {
    ::sem_init(&wake_, 0, 0);  // cannot fail: not shared between processes, value 0
    start_segment(core);
    thread_ = std::thread([this] { run_writer(); });
    writer_clock_known_ = ::pthread_getcpuclockid(thread_.native_handle(), &writer_clock_) == 0;
}

inline flight_recorder::~flight_recorder() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    post();
    thread_.join();
    ::sem_destroy(&wake_);
    if (!committed_) return;  // the pool was never made: what the ring holds is dropped
    if (in_gap_ && lost_ > 0) {
        writer_.gap(lost_);
        bump(gaps_);
    }
    writer_.finish();
}

// Rare: a segment is due, or the ring is full.
[[gnu::noinline]] inline void flight_recorder::start_segment(const core::scheduler& core) noexcept {
    const std::size_t room = ring_.fresh_room();
    if (in_gap_ && room <= room_lacking_) return;  // no room gained: this step is lost too
    const std::uint64_t records = core.snapshot_size();
    const std::size_t snapshot = static_cast<std::size_t>(records) * trace::v3::max_snapshot_record_bytes;
    std::size_t bytes = 0;
    if (in_gap_) {
        if (room < ring_record::gap_bytes + ring_record::segment_bytes + snapshot) {  // still too little: lost too
            room_lacking_ = room;
            return;
        }
        unsigned char* p = ring_.tail();
        *p = ring_record::gap_tag;
        std::memcpy(p + 1, &lost_, 8);
        bytes += ring_.advance(p + ring_record::gap_bytes);
        bump(gaps_);
        in_gap_ = false;
        lost_ = 0;
    } else if (room < ring_record::segment_bytes + snapshot) {
        in_gap_ = true;  // the segment is due but cannot start: the steps until it can are lost
        room_lacking_ = room;
        return;
    }
    unsigned char* p = ring_.tail();
    const segment_start s{next_segment_++, events_seen_};
    const auto count = static_cast<std::uint32_t>(records);
    *p = ring_record::segment_tag;
    std::memcpy(p + 1, &s.number, 8);
    std::memcpy(p + 9, &s.events_before, 8);
    std::memcpy(p + 17, &count, 4);
    bytes += ring_.advance(p + ring_record::segment_bytes);
    auto put = [this, &bytes](const core::snapshot_record& r) {
        bytes += ring_.advance(trace::v3::put_snapshot_record(ring_.tail(), r));
    };
    core.snapshot(put);
    ring_.publish();
    base_ = trace::v3::delta_base{};  // a segment is a file: its steps' deltas start from zero
    events_left_ = options_.segment_events;
    bump(segments_started_);
    pushed(bytes, ring_.room_seen());
}

// Rare: at most once per half ring of bytes.
[[gnu::noinline]] inline void flight_recorder::wake_writer() noexcept {
    if (!wake_at_high_water.load(std::memory_order_relaxed)) return;
    next_wake_at_ = pushed_ + capacity_ / 2;
    bump(high_water_wakes_);
    post();
}

[[gnu::noinline]] inline void flight_recorder::lose_step() noexcept {
    // The room this step lacked was its own (a step of many effects may need more than
    // a snapshot): nothing is known yet about the room the gap's end needs, so the next
    // start_segment measures the snapshot against the ring.
    if (!in_gap_) room_lacking_ = 0;
    in_gap_ = true;
    ++lost_;
    bump(events_lost_);
}

inline void flight_recorder::commit() noexcept {
    {
        std::lock_guard lock(mutex_);
        committed_ = true;
    }
    post();
}

inline void flight_recorder::run_writer() {
    // The CPU time this thread had, for writer_cpu_time once it has ended.
    struct at_end {
        flight_recorder& r;
        ~at_end() { r.writer_cpu_at_end_.store(cpu_time(CLOCK_THREAD_CPUTIME_ID).count(), std::memory_order_release); }
    } end{*this};
    // validate() refuses a longer interval; a recorder made without it still must not
    // wait until an overflowed time (an overflowed deadline is in the past: a busy loop).
    const auto interval = std::min(options_.flush_interval, recorder_options::max_flush_interval);
    // Nothing is written before the pool is made: a construction that throws later
    // leaves no file behind (~flight_recorder). Each commit and the end post once, after
    // saying so under the mutex: every wake here is followed by a look.
    for (;;) {
        while (::sem_wait(&wake_) != 0) {  // EINTR
        }
        std::lock_guard lock(mutex_);
        if (stopping_ && !committed_) return;
        if (committed_) break;
    }
    // The wait above may have taken a post of the actor's (steps before the commit, or
    // the first segment's snapshot, left the ring more than half full): drain at once then.
    bool woken = high_water_wakes_.load(std::memory_order_relaxed) > 0;
    std::vector<dump_request*> serving;
    for (;;) {
        if (!woken) {
            timespec deadline{};
            ::clock_gettime(CLOCK_MONOTONIC, &deadline);
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count() + deadline.tv_nsec;
            deadline.tv_sec += static_cast<std::time_t>(ns / 1'000'000'000);
            deadline.tv_nsec = static_cast<long>(ns % 1'000'000'000);
            // Until a post (the actor's high-water mark, a dump, the end) or the deadline.
            while (::sem_clockwait(&wake_, CLOCK_MONOTONIC, &deadline) != 0 && errno == EINTR) {
            }
        }
        woken = false;
        bool stop = false;
        {
            std::lock_guard lock(mutex_);
            serving.swap(requests_);
            stop = stopping_;
        }
        drain();  // what was pushed before each request, before the stop, and before each post
        for (dump_request* r : serving) r->result = writer_.dump(r->dir);
        {
            std::lock_guard lock(mutex_);
            writer_.fill(written_);
            for (dump_request* r : serving) r->done = true;
        }
        if (!serving.empty()) dumped_.notify_all();
        serving.clear();
        if (stop) return;
    }
}

// Everything the actor published, into the writer: runs of steps (each contiguous in the
// ring, at most a block's worth), the segment markers with their snapshot records, the
// gaps; the room handed back to the actor after each batch.
inline void flight_recorder::drain() {
    while (std::size_t n = ring_.readable()) {
        while (n > 0) {
            const unsigned char* p = ring_.head();
            std::size_t size = 0;
            if (snapshot_left_ > 0) {
                size = trace::v3::snapshot_record_bytes(p);
                writer_.snapshot_record(p, size);
                --snapshot_left_;
            } else if (*p == ring_record::segment_tag) {
                size = ring_record::segment_bytes;
                segment_start s;
                std::memcpy(&s.number, p + 1, 8);
                std::memcpy(&s.events_before, p + 9, 8);
                std::memcpy(&snapshot_left_, p + 17, 4);
                writer_.segment(s, snapshot_left_);
            } else if (*p == ring_record::gap_tag) {
                size = ring_record::gap_bytes;
                std::uint64_t events = 0;
                std::memcpy(&events, p + 1, 8);
                writer_.gap(events);
            } else {
                // Steps up to the next marker, the end of the readable bytes, a record that
                // runs past the ring's end (the next is at its front) or a block's worth.
                const std::size_t contiguous = ring_.contiguous();
                std::uint32_t steps = 0;
                while (size < n && size < flight_writer::block_limit && p[size] < ring_record::segment_tag) {
                    __builtin_prefetch(p + size + 2048);
                    size += trace::v3::step_bytes(p + size);
                    ++steps;
                    if (size >= contiguous) break;
                }
                writer_.steps(p, size, steps);
            }
            ring_.consume(size);
            n -= size;
        }
        ring_.release();
    }
    writer_.flush();
}

inline boost::system::error_code flight_recorder::dump(const std::filesystem::path& dir) {
    dump_request request;
    request.dir = dir;
    std::unique_lock lock(mutex_);
    requests_.push_back(&request);
    post();
    dumped_.wait(lock, [&request] { return request.done; });
    return request.result;
}

inline recording_status flight_recorder::status() const {
    recording_status s;
    {
        std::lock_guard lock(mutex_);
        s = written_;
    }
    s.segments_started = segments_started_.load(std::memory_order_relaxed);
    s.events_lost = events_lost_.load(std::memory_order_relaxed);
    s.gaps = gaps_.load(std::memory_order_relaxed);
    s.writer_cpu_time = writer_cpu_time();
    return s;
}

inline std::chrono::nanoseconds flight_recorder::cpu_time(clockid_t clock) noexcept {
    timespec t{};
    if (::clock_gettime(clock, &t) != 0) return std::chrono::nanoseconds(-1);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

inline std::chrono::nanoseconds flight_recorder::writer_cpu_time() const noexcept {
    if (const std::int64_t at_end = writer_cpu_at_end_.load(std::memory_order_acquire); at_end >= 0)
        return std::chrono::nanoseconds(at_end);
    const std::chrono::nanoseconds t = writer_clock_known_ ? cpu_time(writer_clock_) : std::chrono::nanoseconds(-1);
    return t.count() >= 0 ? t : std::chrono::nanoseconds(0);
}

}  // namespace fairpool::detail
