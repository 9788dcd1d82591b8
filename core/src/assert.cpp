#include "fairpool/core/detail/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace fairpool::core::detail {

// Runs only when an invariant is broken, and then the process dies before a coverage
// build could write its counters: excluded from the line coverage of core/ (gcovr).
// GCOVR_EXCL_START
void assertion_failed(const char* expression, const char* file, int line) noexcept {
    // Nothing is left to do if the message cannot be written: abort either way.
    (void)std::fprintf(stderr, "%s:%d: fairpool invariant broken: %s\n", file, line, expression);
    std::abort();
}
// GCOVR_EXCL_STOP

}  // namespace fairpool::core::detail
