#pragma once
// A scrape's body: pools, their handles and any component's own series in the
// Prometheus text exposition format 0.0.4 (docs/METRICS.md lists every family). For a
// scrape handler, never the pool's path: it allocates its output.
//
//   std::string body = fairpool::prometheus_text(pool, "db", {a.observer(), b.observer()});
//
//   // Several pools in one scrape (each family once), with a component's series after:
//   const fairpool::prometheus_pool pools[] = {{db, "db", db_tenants}, {cache, "cache"}};
//   std::string body = fairpool::prometheus_text(pools, [&](std::string& out) { budget.append_prometheus(out); });
//
// Every pool sample carries pool="<label>"; every handle sample pool="..",tenant="<its
// name>". Labels and tenant names should be distinct: two of one name give two samples
// of one series, which a scrape must not contain.
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fairpool/asio/fwd.hpp"
#include "fairpool/asio/handle_observer.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool {

// Appends a component's own series (complete families: # HELP, # TYPE, samples) to a
// scrape's body, after the pools'.
using prometheus_appender = std::function<void(std::string& out)>;

// One pool's part of a scrape: its counters as of now, its label, its handles.
class prometheus_pool {
public:
    template <class Resource, class Clock, class WaitTraits>
    prometheus_pool(const pool<Resource, Clock, WaitTraits>& p, std::string_view label,
                    std::span<const handle_observer> handles = {})
        : counters_(p.diagnostics().scheduler), label_(label), handles_(handles.begin(), handles.end()) {}
    template <class Resource, class Clock, class WaitTraits>
    prometheus_pool(const pool<Resource, Clock, WaitTraits>& p, std::string_view label,
                    std::initializer_list<handle_observer> handles)
        : counters_(p.diagnostics().scheduler), label_(label), handles_(handles) {}

private:
    friend std::string prometheus_text(std::span<const prometheus_pool>, const prometheus_appender&);
    core::stats counters_;
    std::string_view label_;
    std::vector<handle_observer> handles_;
};

// Several pools (each family once, a sample per pool), then what `append` adds.
[[nodiscard]] std::string prometheus_text(std::span<const prometheus_pool> pools,
                                          const prometheus_appender& append = {});

// One pool and its handles, then what `append` adds.
template <class Resource, class Clock, class WaitTraits>
[[nodiscard]] std::string prometheus_text(const pool<Resource, Clock, WaitTraits>& p, std::string_view label,
                                          std::span<const handle_observer> handles = {},
                                          const prometheus_appender& append = {}) {
    const prometheus_pool one[] = {prometheus_pool(p, label, handles)};
    return prometheus_text(one, append);
}
template <class Resource, class Clock, class WaitTraits>
[[nodiscard]] std::string prometheus_text(const pool<Resource, Clock, WaitTraits>& p, std::string_view label,
                                          std::initializer_list<handle_observer> handles,
                                          const prometheus_appender& append = {}) {
    const prometheus_pool one[] = {prometheus_pool(p, label, handles)};
    return prometheus_text(one, append);
}

}  // namespace fairpool
