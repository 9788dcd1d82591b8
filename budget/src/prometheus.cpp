// A budget member's series in the Prometheus text exposition format 0.0.4.
#include <cstdio>
#include <string>

#include "fairpool/budget/client.hpp"

namespace fairpool::budget {

namespace {

void escape_into(std::string& out, std::string_view v) {
    for (const char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
}

std::string labels(const budget_client& c) {
    std::string l = "budget=\"";
    escape_into(l, c.options().name);
    l += "\",member=\"";
    escape_into(l, c.options().member_id);
    l += '"';
    return l;
}

std::string seconds(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9f", static_cast<double>(d.count()) / 1e9);
    return buf;
}

template <class Value>
void family(std::string& out, std::span<const budget_client* const> clients, const budget_stats* stats,
            const char* name, const char* type, const char* help, Value value) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
    for (std::size_t i = 0; i < clients.size(); ++i) {
        out += name;
        out += '{';
        out += labels(*clients[i]);
        out += "} ";
        out += value(stats[i]);
        out += '\n';
    }
}

}  // namespace

void append_prometheus(std::string& out, std::span<const budget_client* const> clients) {
    std::vector<budget_stats> stats;
    stats.reserve(clients.size());
    for (const auto* c : clients) stats.push_back(c->stats());
    const auto* s = stats.data();
    // Families of a count, and of a duration in seconds, in the order they are written.
    struct count_family {
        const char* name;
        const char* type;
        const char* help;
        std::uint64_t budget_stats::*field;
    };
    struct seconds_family {
        const char* name;
        const char* type;
        const char* help;
        std::chrono::nanoseconds budget_stats::*field;
    };
    static constexpr count_family gauges[] = {
        {"fairpool_budget_limit", "gauge", "The pool's max_slots as the budget client last set it.", &budget_stats::limit},
        {"fairpool_budget_grant", "gauge", "The last grant from the budget's allocator.", &budget_stats::grant},
        {"fairpool_budget_target", "gauge", "This member's weighted max-min fair share of the budget.",
         &budget_stats::target},
        {"fairpool_budget_demand", "gauge", "The demand the last refresh sent (peak since the one before).",
         &budget_stats::demand},
        {"fairpool_budget_weight", "gauge", "The weight the last refresh sent.", &budget_stats::weight},
        {"fairpool_budget_held", "gauge", "Connections held (live and retiring) as the last refresh sent.",
         &budget_stats::held},
        {"fairpool_budget_fleet_committed", "gauge", "Connections committed across the fleet as the last refresh saw it.",
         &budget_stats::fleet_committed},
        {"fairpool_budget_members_live", "gauge", "Live members as the last refresh saw them.",
         &budget_stats::members_live},
        {"fairpool_budget_violations", "gauge", "The allocator's count of runs that found more committed than the budget.",
         &budget_stats::violations},
    };
    static constexpr count_family counters[] = {
        {"fairpool_budget_refreshes_total", "counter", "Refreshes Redis answered.", &budget_stats::refreshes},
        {"fairpool_budget_refresh_failures_total", "counter",
         "Refreshes that failed (timeout, broken connection, an error reply).", &budget_stats::refresh_failures},
        {"fairpool_budget_connects_total", "counter", "Connections made to Redis.", &budget_stats::connects},
        {"fairpool_budget_connect_failures_total", "counter", "Connects to Redis that failed.",
         &budget_stats::connect_failures},
    };
    static constexpr seconds_family latencies[] = {
        {"fairpool_budget_refresh_seconds_total", "counter", "Sum of the refreshes' round trips.",
         &budget_stats::latency_total},
        {"fairpool_budget_refresh_seconds_max", "gauge", "The longest refresh round trip.", &budget_stats::latency_max},
    };
    const auto counts = [&](std::span<const count_family> families) {
        for (const auto& f : families)
            family(out, clients, s, f.name, f.type, f.help,
                   [&](const budget_stats& b) { return std::to_string(b.*f.field); });
    };
    counts(gauges);
    family(out, clients, s, "fairpool_budget_lease_left_seconds", "gauge", "Time left on the lease by this member's clock.",
           [&](const budget_stats& b) { return seconds(b.lease_left); });
    out += "# HELP fairpool_budget_state 1 for the state the budget client is in, 0 for the others.\n"
           "# TYPE fairpool_budget_state gauge\n";
    for (std::size_t i = 0; i < clients.size(); ++i)
        for (const auto st : {member_state::joining, member_state::granted, member_state::learning,
                              member_state::fallback, member_state::forgotten, member_state::stopped}) {
            out += "fairpool_budget_state{";
            out += labels(*clients[i]);
            out += ",state=\"";
            out += to_string(st);
            out += "\"} ";
            out += s[i].state == st ? "1\n" : "0\n";
        }
    counts(counters);
    for (const auto& f : latencies)
        family(out, clients, s, f.name, f.type, f.help, [&](const budget_stats& b) { return seconds(b.*f.field); });
}

void budget_client::append_prometheus(std::string& out) const {
    const budget_client* one[] = {this};
    fairpool::budget::append_prometheus(out, one);
}

}  // namespace fairpool::budget
