#pragma once
// Decision 13 of docs/CONTRACT.md: one splitmix64 draw, all arithmetic mod 2^64. Shared
// by the reference model and the invariant checker, which reduce its draws to a range
// in two different ways (the core has its own copy: the oracle must not share its code).
#include <cstdint>

namespace fairpool::model::detail {

inline std::uint64_t splitmix64(std::uint64_t& state) {
    state += 0x9e3779b97f4a7c15U;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9U;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebU;
    return z ^ (z >> 31);
}

}  // namespace fairpool::model::detail
