#pragma once
// A vector whose capacity is fixed at construction: its storage is allocated once, so
// push_back never allocates (pushing past the capacity is a broken invariant) and is a
// store and an increment; a copy gets the same capacity, so a copied scheduler is as
// allocation-free as the original. For small trivially copyable items (slot indices,
// effects, heap entries): the storage holds `capacity` of them from the start.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "fairpool/core/detail/assert.hpp"

namespace fairpool::core::detail {

template <class T>
class bounded_vector {
    static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>);

public:
    explicit bounded_vector(std::size_t capacity)
        : capacity_(capacity), items_(std::make_unique_for_overwrite<T[]>(capacity)) {}
    bounded_vector(const bounded_vector& other) : bounded_vector(other.capacity_) {
        size_ = other.size_;
        std::copy(other.begin(), other.end(), begin());
    }
    bounded_vector& operator=(const bounded_vector& other) {
        if (this != &other) *this = bounded_vector(other);
        return *this;
    }
    bounded_vector(bounded_vector&& other) noexcept
        : capacity_(other.capacity_), size_(std::exchange(other.size_, 0)), items_(std::move(other.items_)) {
        other.capacity_ = 0;
    }
    bounded_vector& operator=(bounded_vector&& other) noexcept {
        capacity_ = std::exchange(other.capacity_, 0), size_ = std::exchange(other.size_, 0);
        items_ = std::move(other.items_);
        return *this;
    }
    ~bounded_vector() = default;

    void push_back(const T& item) noexcept {
        FAIRPOOL_ASSERT(size_ < capacity_);
        items_[size_++] = item;
    }
    void pop_back() noexcept {
        FAIRPOOL_ASSERT(size_ > 0);
        --size_;
    }
    void clear() noexcept { size_ = 0; }
    // Drops the items from `first` on (std::unique's end).
    void erase_from(const T* first) noexcept {
        FAIRPOOL_ASSERT(first >= begin() && first <= end());
        size_ = static_cast<std::size_t>(first - begin());
    }

    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
    [[nodiscard]] const T* data() const noexcept { return items_.get(); }
    T& operator[](std::size_t i) noexcept { return items_[i]; }
    const T& operator[](std::size_t i) const noexcept { return items_[i]; }
    T& front() noexcept {
        FAIRPOOL_DEBUG_ASSERT(size_ > 0);
        return items_[0];
    }
    [[nodiscard]] const T& front() const noexcept {
        FAIRPOOL_DEBUG_ASSERT(size_ > 0);
        return items_[0];
    }
    T& back() noexcept {
        FAIRPOOL_DEBUG_ASSERT(size_ > 0);
        return items_[size_ - 1];
    }
    T* begin() noexcept { return items_.get(); }
    T* end() noexcept { return items_.get() + size_; }
    [[nodiscard]] const T* begin() const noexcept { return items_.get(); }
    [[nodiscard]] const T* end() const noexcept { return items_.get() + size_; }

private:
    std::size_t capacity_;
    std::size_t size_ = 0;
    std::unique_ptr<T[]> items_;
};

}  // namespace fairpool::core::detail
