#include "canceller.hpp"

#include <array>

namespace pg {

canceller::canceller(std::size_t capacity) : capacity_(capacity), thread_([this] { run(); }) {}

canceller::~canceller() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

bool canceller::submit(PGcancel* request) {
    if (request == nullptr) return false;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() < capacity_ && !stopping_) {
            queue_.push_back(request);
            wake_.notify_one();
            return true;
        }
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    PQfreeCancel(request);
    return false;
}

void canceller::wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !sending_; });
}

void canceller::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything sent
        PGcancel* request = queue_.front();
        queue_.pop_front();
        sending_ = true;
        lock.unlock();
        std::array<char, 256> message{};
        const bool ok = PQcancel(request, message.data(), static_cast<int>(message.size())) == 1;
        PQfreeCancel(request);
        (ok ? sent_ : failed_).fetch_add(1, std::memory_order_relaxed);
        lock.lock();
        sending_ = false;
        if (queue_.empty()) idle_.notify_all();
    }
}

}  // namespace pg
