#pragma once
// A source of choices for event_generator.hpp from a seeded std::mt19937_64: the same
// seed, the same events (with one standard library). Allocates nothing.
#include <cstdint>
#include <random>

namespace fairpool::testing {

class seeded_choices {
public:
    explicit seeded_choices(std::uint64_t seed) : rng_(seed) {}

    std::uint64_t pick(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }

private:
    std::mt19937_64 rng_;
};

}  // namespace fairpool::testing
