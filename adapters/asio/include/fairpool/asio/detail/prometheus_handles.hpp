#pragma once
// Per-handle statistics (handle::stats()) in the Prometheus text exposition format
// 0.0.4, labelled pool="..",tenant="..": the handles' part of fairpool::prometheus_text
// (prometheus.hpp), a scrape handler's, never the pool's path (it allocates its
// output). docs/METRICS.md lists the families.
//
// Each family's # HELP and # TYPE come once, then a sample per handle, every rejection
// reason listed (zeros included). Tenant names should be distinct within a pool: two
// handles of one name give two samples of one series, which a scrape must not contain.
// Calling it twice on one string, for two pools, repeats the # HELP/# TYPE lines, which
// a scrape must not contain either: give several pools' handles to the span overload.
#include <span>
#include <string>
#include <string_view>

#include "fairpool/asio/handle_stats.hpp"

namespace fairpool::detail {

struct prometheus_handle {
    std::string_view tenant;
    handle_stats stats;
};

void append_prometheus_handles(std::string& out, std::string_view pool_label,
                               std::span<const prometheus_handle> handles);

// Several pools' handles in one exposition: each family once, then the samples of every
// handle of the first pool, of the second, and so on.
//
struct prometheus_pool_handles {
    std::string_view label;
    std::span<const prometheus_handle> handles;
};
void append_prometheus_handles(std::string& out, std::span<const prometheus_pool_handles> pools);

}  // namespace fairpool::detail
