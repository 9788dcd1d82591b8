#pragma once
// fairpool's version, as meson.build's project() gives it (the build checks they agree).
#define FAIRPOOL_VERSION_MAJOR 0
#define FAIRPOOL_VERSION_MINOR 2
#define FAIRPOOL_VERSION_PATCH 0
#define FAIRPOOL_VERSION "0.2.0"
// MAJOR * 10000 + MINOR * 100 + PATCH, for #if tests.
#define FAIRPOOL_VERSION_NUMBER 200

#include <string_view>

namespace fairpool {
inline constexpr std::string_view version = FAIRPOOL_VERSION;
}  // namespace fairpool
