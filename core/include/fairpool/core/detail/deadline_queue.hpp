#pragma once
// Waiters' deadlines, earliest (deadline, arrival) first. Most deadlines arrive in
// order (the default `now + acquire_timeout` only grows), so they go to a sorted run,
// an intrusive list where push, remove and earliest are O(1); a deadline earlier than
// the run's last goes to an indexed heap (O(log W)). The earliest of the two fronts is
// the queue's earliest. Nothing allocates after construction.
#include <cstdint>
#include <vector>

#include "fairpool/core/detail/index_list.hpp"
#include "fairpool/core/detail/indexed_heap.hpp"

namespace fairpool::core::detail {

class deadline_queue {
public:
    using entry = indexed_heap::entry;  // primary = deadline, secondary = arrival

    explicit deadline_queue(std::uint32_t capacity)
        : keys_(capacity), in_heap_(capacity, 0), run_links_(capacity), heap_(capacity) {}

    [[nodiscard]] bool empty() const noexcept { return run_.empty() && heap_.empty(); }

    // Arrivals must increase from push to push.
    void push(std::uint64_t deadline, std::uint64_t arrival, std::uint32_t item) noexcept {
        keys_[item] = {deadline, arrival, item};
        const bool in_order = run_.empty() || keys_[run_.tail].primary <= deadline;
        in_heap_[item] = in_order ? 0 : 1;
        if (in_order) {
            FAIRPOOL_ASSERT(run_.empty() || keys_[run_.tail].secondary < arrival);
            run_links_.push_back(run_, item);
        } else {
            heap_.push(deadline, arrival, item);
        }
    }

    void remove(std::uint32_t item) noexcept {
        if (in_heap_[item] != 0) heap_.remove(item); else run_links_.remove(run_, item);
    }

    [[nodiscard]] const entry& earliest() const noexcept {
        FAIRPOOL_ASSERT(!empty());
        if (heap_.empty()) return keys_[run_.head];
        if (run_.empty()) return heap_.top();
        const entry& a = keys_[run_.head];
        const entry& b = heap_.top();
        return a.primary != b.primary ? (a.primary < b.primary ? a : b) : (a.secondary < b.secondary ? a : b);
    }

private:
    std::vector<entry> keys_;
    std::vector<std::uint8_t> in_heap_;  // bytes, not std::vector<bool>'s bits: no read-modify-write
    list_links run_links_;
    list_ends run_;
    indexed_heap heap_;
};

}  // namespace fairpool::core::detail
