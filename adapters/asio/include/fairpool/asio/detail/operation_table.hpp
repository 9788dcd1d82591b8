#pragma once
// The actor's map from waiter ids to their pending operations, with a fixed capacity
// (the pool's outstanding-acquire limit): nothing allocates after construction.
#include <cstdint>
#include <utility>
#include <vector>

#include "fairpool/core/detail/bounded_vector.hpp"
#include "fairpool/core/detail/id_map.hpp"

namespace fairpool::detail {

class acquire_operation;

class operation_table {
public:
    explicit operation_table(std::uint32_t capacity)
        : ids_(capacity, 0x5eedf00dULL), operations_(capacity, nullptr), free_(capacity) {
        for (std::uint32_t i = capacity; i > 0; --i) free_.push_back(i - 1);
    }

    void insert(std::uint64_t waiter, acquire_operation* op) noexcept {
        const std::uint32_t at = free_.back();
        free_.pop_back();
        operations_[at] = op;
        ids_.insert(waiter, at);
    }

    // The waiter's operation, removed from the table; every effect names a known waiter.
    acquire_operation* take(std::uint64_t waiter) noexcept {
        const std::uint32_t at = ids_.take(waiter);
        free_.push_back(at);
        return std::exchange(operations_[at], nullptr);
    }

    // Hands every operation still in the table to `f`, emptying it.
    template <class F>
    void take_all(F&& f) noexcept {
        for (acquire_operation*& op : operations_)
            if (op != nullptr) f(std::exchange(op, nullptr));
    }

private:
    core::detail::id_map ids_;
    std::vector<acquire_operation*> operations_;
    core::detail::bounded_vector<std::uint32_t> free_;
};

}  // namespace fairpool::detail
