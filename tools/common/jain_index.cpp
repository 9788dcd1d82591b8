#include "jain_index.hpp"

namespace fairpool::tools {

double jain_index(std::span<const double> xs) noexcept {
    double sum = 0;
    double squares = 0;
    for (double x : xs) sum += x, squares += x * x;
    if (xs.empty() || squares == 0) return 1;
    return sum * sum / (static_cast<double>(xs.size()) * squares);
}

}  // namespace fairpool::tools
