#pragma once
// The lease every baseline pool hands out: RAII, movable, releases on destruction.
// Same shape as fairpool::lease (operator*, operator->, release(), explicit bool), so
// the scenario runner drives every design through the same code.
//
// A lease refers to its pool by pointer: the pool must outlive its leases (the
// benchmarks guarantee it; fairpool's own leases may outlive the pool, these may not).
#include <cstddef>
#include <utility>

namespace fairpool_bench {

template <class Pool>
class basic_lease {
public:
    using resource_type = typename Pool::resource_type;

    basic_lease() noexcept = default;
    basic_lease(Pool* pool, std::size_t index) noexcept : pool_(pool), index_(index) {}
    basic_lease(basic_lease&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)), index_(other.index_) {}
    basic_lease& operator=(basic_lease&& other) noexcept {
        if (this != &other) {
            release();
            pool_ = std::exchange(other.pool_, nullptr);
            index_ = other.index_;
        }
        return *this;
    }
    basic_lease(const basic_lease&) = delete;
    basic_lease& operator=(const basic_lease&) = delete;
    ~basic_lease() { release(); }

    [[nodiscard]] explicit operator bool() const noexcept { return pool_ != nullptr; }
    [[nodiscard]] resource_type& operator*() const noexcept { return pool_->resource(index_); }
    [[nodiscard]] resource_type* operator->() const noexcept { return &pool_->resource(index_); }

    // Gives the resource back now; idempotent.
    void release() noexcept {
        if (pool_) std::exchange(pool_, nullptr)->give_back(index_);
    }

private:
    Pool* pool_ = nullptr;
    std::size_t index_ = 0;
};

}  // namespace fairpool_bench
