#pragma once
// Snapshots as the tools use them (docs/CONTRACT.md section 7.2): a scheduler's
// snapshot in a vector, a trace's snapshot records, and the scheduler a trace starts
// from. These allocate; the scheduler's own snapshot() does not.
#include <optional>
#include <span>
#include <string>
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

[[nodiscard]] inline std::vector<core::snapshot_record> snapshot_of(std::span<const snapshot_line> lines) {
    std::vector<core::snapshot_record> records;
    records.reserve(lines.size());
    for (const snapshot_line& l : lines) records.push_back(l.record);
    return records;
}

[[nodiscard]] inline std::vector<core::snapshot_record> snapshot_of(const trace& t) { return snapshot_of(t.snapshot); }

// Why no scheduler with config `c` could be in the snapshot of these lines: the index of
// the record refused (their count for one that ends early) and what is wrong; empty if
// one could. Restoring it is the check, as for an invalid config: the core owns the
// rules. Both readers (text and v3) refuse a trace with such a snapshot.
struct snapshot_refusal {
    std::size_t record = 0;
    std::string message;
};
[[nodiscard]] inline std::optional<snapshot_refusal> refusal_of(const core::config& c,
                                                                std::span<const snapshot_line> lines) {
    try {
        const core::scheduler restored(c, snapshot_of(lines), 0);
    } catch (const core::snapshot_error& e) {
        return snapshot_refusal{e.record(), e.what()};
    }
    return std::nullopt;
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
