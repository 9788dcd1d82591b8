#include "fairpool/asio/recorder_options.hpp"

namespace fairpool {

std::optional<std::string> validate(const recorder_options& o) {
    if (!o.memory_only && o.directory.empty())
        return std::string("directory: must be given (or memory_only set)");
    if (o.segment_events < 1) return std::string("segment_events: must be at least 1");
    if (o.keep_segments < 1) return std::string("keep_segments: must be at least 1");
    if (o.ring_bytes < 1) return std::string("ring_bytes: must be at least 1");
    if (o.ring_bytes > recorder_options::max_ring_bytes)
        return "ring_bytes: " + std::to_string(o.ring_bytes) + " is above 1073741824";
    if (o.flush_interval.count() <= 0) return std::string("flush_interval: must be positive");
    // The writer waits until now + flush_interval: milliseconds::max() would overflow it.
    if (o.flush_interval > recorder_options::max_flush_interval)
        return "flush_interval: " + std::to_string(o.flush_interval.count()) + " ms is above 86400000 (24 hours)";
    return std::nullopt;
}

}  // namespace fairpool
