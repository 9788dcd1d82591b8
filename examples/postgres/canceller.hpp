#pragma once
// Sends PQcancel requests on a thread of its own. PQcancel blocks (it opens a new
// connection to the server and waits for it to close), and Debian 12's libpq 15 has no
// non-blocking cancel, so it must never run on an io thread. The queue is bounded: past
// `capacity` pending cancels a new one is dropped (and counted), and the connection it
// came from is closed anyway, so the server ends that statement at its next check of the
// client socket at the latest.
#include <libpq-fe.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace pg {

class canceller {
public:
    explicit canceller(std::size_t capacity = 64);
    canceller(const canceller&) = delete;
    canceller& operator=(const canceller&) = delete;
    // Sends what is queued, then joins the thread.
    ~canceller();

    // Takes ownership of `request` (from PQgetCancel). False if the queue was full: the
    // request is freed unsent.
    bool submit(PGcancel* request);

    // Blocks until every request submitted so far has been sent or has failed (a test,
    // or a shutdown report, reads sent() after it: the sends run on their own thread).
    void wait_idle();

    [[nodiscard]] std::uint64_t sent() const noexcept { return sent_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    void run();

    const std::size_t capacity_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;  // the queue emptied and no request is being sent
    std::deque<PGcancel*> queue_;
    bool sending_ = false;
    bool stopping_ = false;
    std::atomic<std::uint64_t> sent_{0}, failed_{0}, dropped_{0};
    std::thread thread_;  // last: starts once the rest is built
};

}  // namespace pg
