#pragma once
// Jain's fairness index, shared by fairpool-replay (--stats) and fairpool-sim.
#include <span>

namespace fairpool::tools {

// J(x) = (sum x)^2 / (n * sum x^2): 1 when every x is the same, down to 1/n when one
// takes all. 1 for no values, or all zero (nothing to be unfair about).
[[nodiscard]] double jain_index(std::span<const double> xs) noexcept;

}  // namespace fairpool::tools
