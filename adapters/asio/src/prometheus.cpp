#include "fairpool/asio/prometheus.hpp"

#include "fairpool/asio/detail/prometheus_handles.hpp"
#include "fairpool/core/prometheus.hpp"

namespace fairpool {

std::string prometheus_text(std::span<const prometheus_pool> pools, const prometheus_appender& append) {
    std::vector<core::prometheus_pool> counters;
    std::vector<std::vector<detail::prometheus_handle>> handles(pools.size());
    std::vector<detail::prometheus_pool_handles> per_pool;
    counters.reserve(pools.size());
    per_pool.reserve(pools.size());
    bool any_handle = false;
    for (std::size_t i = 0; i < pools.size(); ++i) {
        const prometheus_pool& p = pools[i];
        counters.push_back({&p.counters_, p.label_});
        handles[i].reserve(p.handles_.size());
        for (const handle_observer& h : p.handles_) handles[i].push_back({h.name(), h.stats()});
        per_pool.push_back({p.label_, handles[i]});
        any_handle = any_handle || !handles[i].empty();
    }
    std::string out;
    core::append_prometheus_text(out, counters);
    if (any_handle) detail::append_prometheus_handles(out, per_pool);
    if (append) append(out);
    return out;
}

}  // namespace fairpool
