// Counts every heap allocation of the scenarios program, as
// tests/adapter/allocation_test.cpp does: the C allocation functions are wrapped at link
// time (-Wl,--wrap=..., see the top-level meson.build; Asio's recycling allocator calls
// std::aligned_alloc directly) and the global operator new goes through them. Every
// design pays the same relaxed increment (and a thread-local one: the round trip
// counts the allocations of the thread that runs it, the pool's thread).
#include <atomic>
#include <cstdint>

namespace {
std::atomic<std::uint64_t> g_allocations{0};
thread_local std::uint64_t t_allocations = 0;
inline void count_allocation() noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    ++t_allocations;
}
}  // namespace

#include "../../tests/support/counting_allocation.hpp"

namespace fairpool_bench {
std::uint64_t allocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }
std::uint64_t allocations_on_this_thread() noexcept { return t_allocations; }
}  // namespace fairpool_bench
