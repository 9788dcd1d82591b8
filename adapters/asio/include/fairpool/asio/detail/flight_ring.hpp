#pragma once
// The flight recorder's ring: a single-producer single-consumer queue of bytes, into
// which the actor copies each step as the records of trace format v3 (an event record
// and its effect records, field by field: fairpool/trace/binary.hpp), and from which the
// writer copies them into blocks. A few bytes an event, where a ring of fixed-size
// records took 88 a record: what the actor writes, and what moves between the cores as
// the writer reads it, is the size of the file.
//
// A record never wraps: the buffer has `slack` bytes past its capacity, at least the
// largest record, and one that starts near the end runs on into them. Counted by the
// monotonic write and read counters, the bytes it takes past the end are the ones at
// the front of the ring, which stay unused until the counters pass them: so a record is
// always contiguous where it starts, and the next one starts at the front. Producer and
// consumer follow the same positions, each advancing its own by each record's size.
//
// The producer publishes its counter after each whole step (a release store), so the
// consumer only ever sees whole steps; each side keeps the other's counter as last read
// and reads it again only when that is not enough (the producer, when the room it knew
// of runs out; the consumer, when it has read all it knew of).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace fairpool::detail {

class flight_ring {
public:
    // `capacity` bytes, plus `slack` past the end (at least the largest record).
    flight_ring(std::size_t capacity, std::size_t slack)
        : capacity_(capacity), buffer_(new unsigned char[capacity + slack]) {
        // Every page touched once, here: otherwise the actor takes the kernel's first-touch
        // page faults as it first fills the ring.
        std::memset(buffer_.get(), 0, capacity + slack);
    }

    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

    // The producer. Whether `n` more bytes fit: the room as last seen, the consumer's
    // counter read again if that looks short.
    [[nodiscard]] bool has_room(std::size_t n) noexcept {
        if (write_ - read_seen_ + n <= capacity_) return true;
        read_seen_ = read_.load(std::memory_order_acquire);
        return write_ - read_seen_ + n <= capacity_;
    }
    // The room free now: the consumer's counter read again.
    [[nodiscard]] std::size_t fresh_room() noexcept {
        read_seen_ = read_.load(std::memory_order_acquire);
        return room_seen();
    }
    // The room free as last seen (it can only have grown since).
    [[nodiscard]] std::size_t room_seen() const noexcept { return capacity_ - (write_ - read_seen_); }
    // Where the next record goes: contiguous for up to `slack` bytes.
    [[nodiscard]] unsigned char* tail() noexcept { return buffer_.get() + write_at_; }
    // The bytes from tail() to `end` are a record: advance past it (not yet published);
    // its size.
    std::size_t advance(const unsigned char* end) noexcept {
        const auto n = static_cast<std::size_t>(end - tail());
        write_ += n;
        write_at_ += n;
        if (write_at_ >= capacity_) write_at_ -= capacity_;
        return n;
    }
    // Makes what was written so far visible to the consumer.
    void publish() noexcept { write_published_.store(write_, std::memory_order_release); }

    // The consumer. The bytes published and not consumed yet (whole steps), read again
    // if none are known.
    [[nodiscard]] std::size_t readable() noexcept {
        if (read_own_ == write_seen_) write_seen_ = write_published_.load(std::memory_order_acquire);
        return write_seen_ - read_own_;
    }
    // Bytes from the read position to the end of the capacity: records that start
    // before it are contiguous (the last may run on past it); the next is at the front.
    [[nodiscard]] std::size_t contiguous() const noexcept { return capacity_ - read_at_; }
    // The record at the read position, contiguous.
    [[nodiscard]] const unsigned char* head() const noexcept { return buffer_.get() + read_at_; }
    // Past the record at head() (`n` bytes).
    void consume(std::size_t n) noexcept {
        read_own_ += n;
        read_at_ += n;
        if (read_at_ >= capacity_) read_at_ -= capacity_;
    }
    // Hands the room consumed so far back to the producer.
    void release() noexcept { read_.store(read_own_, std::memory_order_release); }

private:
    const std::size_t capacity_;
    std::unique_ptr<unsigned char[]> buffer_;
    // The producer's line: its counter and position, and the consumer's counter as last read.
    alignas(64) std::size_t write_ = 0;
    std::size_t write_at_ = 0;
    std::size_t read_seen_ = 0;
    // Published by the producer.
    alignas(64) std::atomic<std::size_t> write_published_{0};
    // The consumer's line.
    alignas(64) std::size_t read_own_ = 0;
    std::size_t read_at_ = 0;
    std::size_t write_seen_ = 0;
    // Published by the consumer.
    alignas(64) std::atomic<std::size_t> read_{0};
};

}  // namespace fairpool::detail
