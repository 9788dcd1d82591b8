#pragma once
// The simulator's only source of randomness: std::mt19937_64 (its output sequence is
// fixed by the C++ standard) with integer-only draws of our own, so that a seed
// means the same run with any standard library. No clock, no std::random_device,
// no <random> distributions (their algorithms are implementation-defined).
#include <cstdint>
#include <random>

namespace fairpool::sim {

class rng {
public:
    explicit rng(std::uint64_t seed) : engine_(seed) {}

    std::uint64_t next() { return engine_(); }

    // Uniform in [0, n); n >= 1. Rejection sampling, so unbiased.
    std::uint64_t below(std::uint64_t n) {
        const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
        for (;;) {
            const std::uint64_t r = next();
            if (r >= threshold) return r % n;
        }
    }

    // Uniform in [lo, hi]; lo <= hi.
    std::uint64_t between(std::uint64_t lo, std::uint64_t hi) {
        if (hi - lo == ~std::uint64_t{0}) return next();
        return lo + below(hi - lo + 1);
    }

    // True with probability p (p <= 0: never, p >= 1: always). 53 random bits,
    // compared exactly: IEEE arithmetic makes this the same on every machine.
    bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

    // A percentage in [lo, hi] as a probability: between(lo, hi) / 100.
    double percent(std::uint64_t lo, std::uint64_t hi) { return static_cast<double>(between(lo, hi)) / 100.0; }

private:
    std::mt19937_64 engine_;
};

}  // namespace fairpool::sim
