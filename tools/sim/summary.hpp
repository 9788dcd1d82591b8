#pragma once
// The end-of-run summary: totals over every seed run, and fairness.
#include <cstdint>
#include <cstdio>
#include <optional>

#include "simulation.hpp"

namespace fairpool::sim {

class summary {
public:
    void add(const seed_result& r);
    // `wall_seconds` is printed only; nothing in a run ever depends on it.
    void print(std::FILE* out, double wall_seconds) const;

private:
    struct index_stats {
        double sum = 0;
        std::uint64_t seeds = 0;
        std::optional<double> worst;
        std::uint64_t worst_seed = 0;
        void add(double value, std::uint64_t seed);
        // "                round_robin mean 0.995 over 99 seeds, worst seed 19: 0.942"
        void print(std::FILE* out, const char* policy) const;
    };

    std::uint64_t seeds_ = 0;
    std::uint64_t first_seed_ = 0;
    std::uint64_t failed_ = 0;
    std::uint64_t events_ = 0;
    double virtual_seconds_ = 0;
    core::stats totals_{};
    adapter_counters adapter_{};
    std::uint64_t isolation_seeds_ = 0;  // caps or resizes in play
    std::uint64_t capped_seeds_ = 0;     // a handle reached its cap
    std::uint64_t resized_seeds_ = 0;
    std::uint64_t shut_down_ = 0;
    std::uint64_t closed_ = 0;
    index_stats share_[2];  // by fairness_policy
    index_stats grant_[2];
};

}  // namespace fairpool::sim
