#pragma once
// The side-by-side scenarios; each prints its rows (common.hpp: row()).
#include <chrono>
#include <cstddef>
#include <string>

namespace fairpool_bench {

// Uncontended acquire → completion → release, one thread: time, heap allocations and
// handlers run per cycle; fairpool also with the flight recorder on.
void scenario_round_trip(int reps, std::size_t cycles);
// Only `cycles` round trips of the named design (false if there is none so named).
// `threaded`: first start and join one thread, so the process runs as a server's does
// (glibc and libstdc++ skip the lock prefix of their mutexes and reference counts in a
// process that never started a thread): for counting locked instructions.
bool round_trip_cycles(const char* design, std::size_t cycles, bool threaded = false);
// The design name round_trip_cycles takes for fairpool with check_after_idle = 1 ns.
inline constexpr const char* checking_design = "fairpool_check_after_idle";
// ... and for fairpool with the flight recorder on (fairpool_recording_design).
inline constexpr const char* recording_design = "fairpool_recorder";

// The flight recorder's writer alone: N steps pushed into its ring, then the time the
// writer takes to drain them into segment files: records and events per second.
void scenario_recorder(int reps, std::size_t steps);
// Bytes per event on disk, text (v2) against binary (v3), over `size_events` round-trip
// steps; then `fairpool-replay --check` of a v3 recording of `replay_events` events, timed
// (FAIRPOOL_REPLAY names the tool).
void scenario_recording_files(std::uint64_t size_events, std::uint64_t replay_events);

// Pool size 4/8/16 × workers 4/16/64/256, 10 cycles each, 2 threads: total time and
// per-acquire wait median, p99, p99.9, max.
void scenario_grid(int reps, int cycles);

// Only `runs` contended runs of the named design (false if there is none so named) on
// one thread, one pool: grid_one_thread_size workers … (below) each cycling
// grid_cycles_per_worker times per run. Run under callgrind by
// bench/round_trip_instructions.py: instructions per contended acquire, which neither
// the machine's load nor the two-thread modes of the grid (common.hpp) move.
bool grid_one_thread_runs(const char* design, int runs);
inline constexpr std::size_t grid_one_thread_size = 4;
inline constexpr int grid_one_thread_workers = 64;
inline constexpr int grid_cycles_per_worker = 10;

// `runs` runs of one grid cell (size, workers) per design, interleaved: the runs that
// stayed on one thread and those that ran on both, counted, and each mode's median total.
void scenario_grid_modes(std::size_t size, int workers, int runs);

// The contended cells (size 4/8/16 × workers 16/64/256; with `quick` only size 4 with 16
// and 64 workers), grid_cycles_per_worker cycles each, every lease held across one
// asynchronous operation: a zero-delay post round trip, then a 20 µs timer. The
// asynchronous designs on 2 threads, the blocking pool on one per worker: total time,
// per-acquire wait median and p99, handlers per cycle, and fairpool's total over
// servicing_task's and channel's.
void scenario_hold_grid(int reps, bool quick);

// How often a later request was served before an earlier one.
void scenario_inversions(int reps, int cycles);

// HikariCP issue #2192: 4 workers, 2 resources, a fixed short hold, for `duration`:
// mean, p99.9 and max wait, and max ÷ mean.
void scenario_tail(int reps, std::chrono::milliseconds duration);

// One greedy tenant with 20× the demand of 9 light ones: grants per tenant, Jain's index.
void scenario_tenants(int reps, std::chrono::milliseconds duration);

// One greedy tenant holding 20× longer than 9 light ones, fairpool with and without a
// lease cap of 1: light waits, shares of held time, the greedy tenant's leases.
void scenario_long_hold(int reps, std::chrono::milliseconds duration);

}  // namespace fairpool_bench
