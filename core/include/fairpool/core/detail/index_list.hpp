#pragma once
// Intrusive doubly linked lists over the indices 0..N-1 of a fixed table.
// Many lists may share one `list_links` table as long as every index is in at most
// one of them (e.g. one FIFO of waiters per handle). All operations are O(1) and
// allocate nothing after the links table is sized.
#include <cstdint>
#include <vector>

#include "fairpool/core/detail/assert.hpp"

namespace fairpool::core::detail {

inline constexpr std::uint32_t no_index = ~std::uint32_t{0};

struct list_ends {
    std::uint32_t head = no_index;
    std::uint32_t tail = no_index;
    std::uint32_t size = 0;

    [[nodiscard]] bool empty() const noexcept { return size == 0; }
};

class list_links {
public:
    explicit list_links(std::uint32_t capacity) : links_(capacity) {}

    void push_back(list_ends& list, std::uint32_t i) noexcept {
        FAIRPOOL_ASSERT(i < links_.size());
        links_[i] = {list.tail, no_index};
        if (list.tail == no_index) list.head = i; else links_[list.tail].next = i;
        list.tail = i;
        ++list.size;
    }

    void remove(list_ends& list, std::uint32_t i) noexcept {
        FAIRPOOL_ASSERT(list.size > 0);
        const auto [p, n] = links_[i];
        if (p == no_index) { FAIRPOOL_ASSERT(list.head == i); list.head = n; } else links_[p].next = n;
        if (n == no_index) { FAIRPOOL_ASSERT(list.tail == i); list.tail = p; } else links_[n].prev = p;
        links_[i] = {};
        --list.size;
    }

    // The index after i in its list, or no_index.
    [[nodiscard]] std::uint32_t next(std::uint32_t i) const noexcept { return links_[i].next; }

private:
    // An index's two links side by side: one cache line, one base pointer.
    struct link {
        std::uint32_t prev = no_index;
        std::uint32_t next = no_index;
    };
    std::vector<link> links_;
};

}  // namespace fairpool::core::detail
