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
    const auto n = [](std::uint64_t v) { return std::to_string(v); };
    family(out, clients, s, "fairpool_budget_limit", "gauge", "The pool's max_slots as the budget client last set it.",
           [&](const budget_stats& b) { return n(b.limit); });
    family(out, clients, s, "fairpool_budget_grant", "gauge", "The last grant from the budget's allocator.",
           [&](const budget_stats& b) { return n(b.grant); });
    family(out, clients, s, "fairpool_budget_target", "gauge", "This member's weighted max-min fair share of the budget.",
           [&](const budget_stats& b) { return n(b.target); });
    family(out, clients, s, "fairpool_budget_demand", "gauge", "The demand the last refresh sent (peak since the one before).",
           [&](const budget_stats& b) { return n(b.demand); });
    family(out, clients, s, "fairpool_budget_weight", "gauge", "The weight the last refresh sent.",
           [&](const budget_stats& b) { return n(b.weight); });
    family(out, clients, s, "fairpool_budget_held", "gauge", "Connections held (live and retiring) as the last refresh sent.",
           [&](const budget_stats& b) { return n(b.held); });
    family(out, clients, s, "fairpool_budget_fleet_committed", "gauge",
           "Connections committed across the fleet as the last refresh saw it.",
           [&](const budget_stats& b) { return n(b.fleet_committed); });
    family(out, clients, s, "fairpool_budget_members_live", "gauge", "Live members as the last refresh saw them.",
           [&](const budget_stats& b) { return n(b.members_live); });
    family(out, clients, s, "fairpool_budget_violations", "gauge",
           "The allocator's count of runs that found more committed than the budget.",
           [&](const budget_stats& b) { return n(b.violations); });
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
    family(out, clients, s, "fairpool_budget_refreshes_total", "counter", "Refreshes Redis answered.",
           [&](const budget_stats& b) { return n(b.refreshes); });
    family(out, clients, s, "fairpool_budget_refresh_failures_total", "counter",
           "Refreshes that failed (timeout, broken connection, an error reply).",
           [&](const budget_stats& b) { return n(b.refresh_failures); });
    family(out, clients, s, "fairpool_budget_connects_total", "counter", "Connections made to Redis.",
           [&](const budget_stats& b) { return n(b.connects); });
    family(out, clients, s, "fairpool_budget_connect_failures_total", "counter", "Connects to Redis that failed.",
           [&](const budget_stats& b) { return n(b.connect_failures); });
    family(out, clients, s, "fairpool_budget_refresh_seconds_total", "counter", "Sum of the refreshes' round trips.",
           [&](const budget_stats& b) { return seconds(b.latency_total); });
    family(out, clients, s, "fairpool_budget_refresh_seconds_max", "gauge", "The longest refresh round trip.",
           [&](const budget_stats& b) { return seconds(b.latency_max); });
}

void budget_client::append_prometheus(std::string& out) const {
    const budget_client* one[] = {this};
    fairpool::budget::append_prometheus(out, one);
}

}  // namespace fairpool::budget
