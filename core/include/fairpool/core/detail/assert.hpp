#pragma once
// Invariant checks that stay on in every build: a broken invariant in the core is a
// bug that must stop the process at once, not corrupt a pool quietly.

namespace fairpool::core::detail {

[[noreturn]] void assertion_failed(const char* expression, const char* file, int line) noexcept;

}  // namespace fairpool::core::detail

#define FAIRPOOL_ASSERT(expression) \
    ((expression) ? void(0) : ::fairpool::core::detail::assertion_failed(#expression, __FILE__, __LINE__))

// Checks whose cost would show in a step (a hash probe, a whole-state post-condition):
// on in every build that tests, sanitizes or fuzzes, compiled out only where NDEBUG
// is defined (Meson's `release` build type). FAIRPOOL_ASSERT stays on everywhere.
#ifdef NDEBUG
#define FAIRPOOL_DEBUG_ASSERT(expression) ((void)0)
#else
#define FAIRPOOL_DEBUG_ASSERT(expression) FAIRPOOL_ASSERT(expression)
#endif
