#pragma once
// Counts every heap allocation of a program: the C allocation functions are wrapped at
// link time (link with `allocation_wrap_args` from the top-level meson.build; Asio's
// recycling allocator calls aligned_alloc directly) and every form of the global
// operator new is replaced to go through them, so each allocation is counted once.
//
// Include in exactly one file of a program, after defining
//   void count_allocation() noexcept;
// at global scope or in an enclosing anonymous namespace.
//
// Fault injection (optional): a program that also defines FAIRPOOL_FAILING_ALLOCATION
// before the include, and beside count_allocation
//   bool fail_allocation() noexcept;
// is asked after each allocation is counted whether it fails: true makes it fail as
// when memory runs out (the C functions return null, posix_memalign ENOMEM, realloc
// leaves the block as it was), so operator new throws std::bad_alloc. Without the
// macro nothing is asked: the functions are the plain counting ones.
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

#ifdef FAIRPOOL_FAILING_ALLOCATION
#define FAIRPOOL_ALLOCATION_FAILS() fail_allocation()
#else
#define FAIRPOOL_ALLOCATION_FAILS() false
#endif

extern "C" {
void* __real_malloc(std::size_t);
void* __real_calloc(std::size_t, std::size_t);
void* __real_realloc(void*, std::size_t);
void* __real_aligned_alloc(std::size_t, std::size_t);
int __real_posix_memalign(void**, std::size_t, std::size_t);
void* __real_memalign(std::size_t, std::size_t);

void* __wrap_malloc(std::size_t n) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return nullptr;
    return __real_malloc(n);
}
void* __wrap_calloc(std::size_t n, std::size_t size) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return nullptr;
    return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, std::size_t n) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return nullptr;
    return __real_realloc(p, n);
}
void* __wrap_aligned_alloc(std::size_t align, std::size_t n) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return nullptr;
    return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void** p, std::size_t align, std::size_t n) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return ENOMEM;
    return __real_posix_memalign(p, align, n);
}
void* __wrap_memalign(std::size_t align, std::size_t n) {
    count_allocation();
    if (FAIRPOOL_ALLOCATION_FAILS()) return nullptr;
    return __real_memalign(align, n);
}
}

#undef FAIRPOOL_ALLOCATION_FAILS

// operator new goes through malloc / aligned_alloc above (wrapped, so counted once).
// GCC 12 flags free() in a replaced operator delete inlined after a replaced operator
// new as mismatched (-Wmismatched-new-delete): a false positive here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return std::malloc(size == 0 ? 1 : size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return std::malloc(size == 0 ? 1 : size); }
void* operator new(std::size_t size, std::align_val_t align) {
    const auto a = static_cast<std::size_t>(align);
    if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
