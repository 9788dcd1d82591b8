#pragma once
// Command-line options of fairpool-sim.
#include <cstdint>
#include <optional>
#include <string>

#include "workload.hpp"

namespace fairpool::sim {

struct options {
    std::uint64_t seed = 1;   // first seed
    std::uint64_t seeds = 1;  // how many, from `seed` on
    run_settings run;
    std::string out = ".";    // where traces go
    bool quiet = false;       // only failures and the summary
    bool trace_always = false;
    bool help = false;
};

// Parses argv; on a bad option returns nullopt and sets `error`.
[[nodiscard]] std::optional<options> parse(int argc, char** argv, std::string& error);

[[nodiscard]] const char* usage();

}  // namespace fairpool::sim
