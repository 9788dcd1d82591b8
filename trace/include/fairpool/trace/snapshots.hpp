#pragma once
// Snapshots as the tools use them (docs/CONTRACT.md section 7.2): a scheduler's
// snapshot in a vector, a trace's snapshot records, and the scheduler a trace starts
// from. These allocate; the scheduler's own snapshot() does not.
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::trace {

[[nodiscard]] inline std::vector<core::snapshot_record> snapshot_of(const core::scheduler& s) {
    std::vector<core::snapshot_record> records;
    records.reserve(s.snapshot_size());
    auto put = [&records](const core::snapshot_record& r) { records.push_back(r); };
    s.snapshot(put);
    return records;
}

[[nodiscard]] inline std::vector<core::snapshot_record> snapshot_of(const trace& t) {
    std::vector<core::snapshot_record> records;
    records.reserve(t.snapshot.size());
    for (const snapshot_line& l : t.snapshot) records.push_back(l.record);
    return records;
}

// The scheduler a trace starts from: restored from its snapshot, or new. The reader
// has restored every snapshot it accepted once already, so this cannot throw on a
// trace it read.
[[nodiscard]] inline core::scheduler starting_scheduler(const core::config& c, const std::vector<core::snapshot_record>& snapshot,
                                                        std::uint64_t hash_seed = 1) {
    if (snapshot.empty()) return core::scheduler(c, hash_seed);
    return core::scheduler(c, snapshot, hash_seed);
}

}  // namespace fairpool::trace
