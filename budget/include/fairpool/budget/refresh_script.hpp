#pragma once
// The allocator's Lua script, run by every member once per refresh (EVALSHA, EVAL when
// Redis answers NOSCRIPT): docs/CONTRACT.md section 12.
#include <string_view>

namespace fairpool::budget {

[[nodiscard]] std::string_view refresh_script() noexcept;

}  // namespace fairpool::budget
