#pragma once
// The demo's load: one greedy tenant with many connections and several light tenants
// with one or two each, all sending INCR to their own counter as fast as replies come
// back, through the proxy over real TCP. Prints a live status line, then a table per
// tenant and checks each tenant's counter against the successes it saw. With
// greedy_hold, the greedy tenant's requests hold their backend connection that long
// instead: `BLPOP` on a key that is never written, with greedy_hold as its timeout (its
// reply, the null array, is its success; it has no counter).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "proxy_server.hpp"

namespace fairpool::demo {

struct load_options {
    std::chrono::milliseconds duration{5000};
    int greedy_connections = 32;
    int light_tenants = 3;
    int light_connections = 1;
    std::chrono::milliseconds greedy_hold{0};  // 0: the greedy tenant sends INCR too
    std::chrono::milliseconds status_every{250};
    bool live = true;  // rewrite the status line in place (a terminal); else print one per second
    std::FILE* out = stdout;
};

struct tenant_report {
    std::string name;
    int connections = 0;
    std::uint64_t ok = 0;
    std::uint64_t errors = 0;
    double p50_us = 0, p99_us = 0;
    double share = 0;  // of all successful requests
    std::int64_t counter = -1;  // the backend's counter at the end (GET), -1 if unread
    bool counted = true;        // false: no counter (the greedy tenant's BLPOPs)
    std::uint64_t turns = 0;    // grants of the tenant's handle: a turn carries one or more of its requests
    double turn_share = 0;      // of all tenants' turns
};

// Runs the load against the proxy and returns one report per tenant (greedy first).
boost::asio::awaitable<std::vector<tenant_report>> run_load(proxy_server& proxy, load_options options);

void print_reports(std::FILE* out, const std::vector<tenant_report>& reports);
// The pool's counters, by name; `slot_capacity` (proxy_server::slot_capacity) gives the
// empty slots.
void print_pool_stats(std::FILE* out, const fairpool::pool_stats& s, std::size_t slot_capacity);

}  // namespace fairpool::demo
