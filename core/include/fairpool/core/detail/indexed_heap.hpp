#pragma once
// A binary min-heap of items 0..N-1 keyed by (primary, secondary), with removal of
// any item by index. Push, pop and remove are O(log N); nothing allocates after
// construction.
#include <cstdint>
#include <vector>

#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/detail/bounded_vector.hpp"
#include "fairpool/core/detail/index_list.hpp"

namespace fairpool::core::detail {

class indexed_heap {
public:
    struct entry {
        std::uint64_t primary;
        std::uint64_t secondary;
        std::uint32_t item;
    };

    explicit indexed_heap(std::uint32_t capacity) : heap_(capacity), position_(capacity, no_index) {}

    [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
    [[nodiscard]] bool contains(std::uint32_t item) const noexcept { return position_[item] != no_index; }
    [[nodiscard]] const entry& top() const noexcept {
        FAIRPOOL_ASSERT(!heap_.empty());
        return heap_.front();
    }

    void push(std::uint64_t primary, std::uint64_t secondary, std::uint32_t item) noexcept {
        FAIRPOOL_ASSERT(!contains(item));
        heap_.push_back({primary, secondary, item});
        place(heap_.size() - 1);
        sift_up(heap_.size() - 1);
    }

    std::uint32_t pop() noexcept {
        const std::uint32_t item = top().item;
        remove(item);
        return item;
    }

    void remove(std::uint32_t item) noexcept {
        FAIRPOOL_ASSERT(contains(item));
        const std::size_t at = position_[item];
        position_[item] = no_index;
        const std::size_t last = heap_.size() - 1;
        if (at != last) {
            heap_[at] = heap_[last];
            place(at);
        }
        heap_.pop_back();
        if (at < heap_.size()) {
            const std::uint32_t moved = heap_[at].item;
            sift_up(at);
            sift_down(position_[moved]);
        }
    }

private:
    static bool less(const entry& a, const entry& b) noexcept {
        return a.primary != b.primary ? a.primary < b.primary : a.secondary < b.secondary;
    }

    void place(std::size_t at) noexcept { position_[heap_[at].item] = static_cast<std::uint32_t>(at); }

    void swap_at(std::size_t a, std::size_t b) noexcept {
        std::swap(heap_[a], heap_[b]);
        place(a);
        place(b);
    }

    void sift_up(std::size_t at) noexcept {
        while (at > 0) {
            const std::size_t parent = (at - 1) / 2;
            if (!less(heap_[at], heap_[parent])) return;
            swap_at(at, parent);
            at = parent;
        }
    }

    void sift_down(std::size_t at) noexcept {
        for (;;) {
            const std::size_t left = 2 * at + 1;
            if (left >= heap_.size()) return;
            const std::size_t right = left + 1;
            const std::size_t least =
                right < heap_.size() && less(heap_[right], heap_[left]) ? right : left;
            if (!less(heap_[least], heap_[at])) return;
            swap_at(at, least);
            at = least;
        }
    }

    bounded_vector<entry> heap_;
    std::vector<std::uint32_t> position_;  // heap index of each item, or no_index
};

}  // namespace fairpool::core::detail
