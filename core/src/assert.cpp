#include "fairpool/core/detail/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace fairpool::core::detail {

void assertion_failed(const char* expression, const char* file, int line) noexcept {
    std::fprintf(stderr, "%s:%d: fairpool invariant broken: %s\n", file, line, expression);
    std::abort();
}

}  // namespace fairpool::core::detail
