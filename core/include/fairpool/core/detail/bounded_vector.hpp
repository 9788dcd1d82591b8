#pragma once
// A vector whose capacity is fixed at construction: push_back never allocates
// (pushing past the capacity is a broken invariant), and a copy gets the same
// capacity, so a copied scheduler is as allocation-free as the original.
#include <cstdint>
#include <vector>

#include "fairpool/core/detail/assert.hpp"

namespace fairpool::core::detail {

template <class T>
class bounded_vector {
public:
    explicit bounded_vector(std::size_t capacity) : capacity_(capacity) { items_.reserve(capacity); }
    bounded_vector(const bounded_vector& other) : capacity_(other.capacity_) {
        items_.reserve(capacity_);
        items_ = other.items_;
    }
    bounded_vector& operator=(const bounded_vector& other) {
        if (this != &other) {
            capacity_ = other.capacity_;
            items_.reserve(capacity_);
            items_ = other.items_;
        }
        return *this;
    }
    bounded_vector(bounded_vector&&) noexcept = default;
    bounded_vector& operator=(bounded_vector&&) noexcept = default;
    ~bounded_vector() = default;

    void push_back(const T& item) noexcept {
        FAIRPOOL_ASSERT(items_.size() < capacity_);
        items_.push_back(item);
    }
    void pop_back() noexcept {
        FAIRPOOL_ASSERT(!items_.empty());
        items_.pop_back();
    }
    void clear() noexcept { items_.clear(); }
    // Drops the items from `first` on (std::unique's end).
    void erase_from(typename std::vector<T>::iterator first) noexcept { items_.erase(first, items_.end()); }

    [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
    [[nodiscard]] const T* data() const noexcept { return items_.data(); }
    T& operator[](std::size_t i) noexcept { return items_[i]; }
    const T& operator[](std::size_t i) const noexcept { return items_[i]; }
    T& front() noexcept { return items_.front(); }
    [[nodiscard]] const T& front() const noexcept { return items_.front(); }
    T& back() noexcept { return items_.back(); }
    auto begin() noexcept { return items_.begin(); }
    auto end() noexcept { return items_.end(); }

private:
    std::size_t capacity_;
    std::vector<T> items_;
};

}  // namespace fairpool::core::detail
