#pragma once
// Drives the allocator script directly (EVAL on a blocking connection to a real
// redis-server) as members would, to test its rules one refresh at a time.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fixture.hpp"  // tests/redis: client, redis_process, start_redis_server
#include "fairpool/budget/refresh_script.hpp"

namespace fairpool::budget::testing {

using fairpool::demo::testing::client;

// The script's reply.
struct grant_reply {
    std::uint64_t grant = 0, epoch = 0, version = 0;
    bool learning = false;
    std::uint64_t target = 0, live = 0, committed = 0, violations = 0;
    std::string error;  // the error reply's text, if the script refused
};

struct budget_args {
    std::string name = "b";
    std::uint64_t budget = 12;
    std::uint64_t lease_ms = 3000, grace_ms = 1000, forget_ms = 600000;
    std::uint64_t fallback = 0;
};

// What a member reports; after a reply, apply() plays the pool: its limit becomes the
// grant, and it holds what it may (min(limit, demand)), unless `leased_surplus` keeps
// held above a lowered limit (leases not yet back).
struct member_report {
    std::string id;
    std::uint64_t demand = 0, weight = 1, held = 0, limit = 0, epoch = 0, version = 0;
};

class script_driver {
public:
    script_driver(std::uint16_t port, budget_args args) : redis_(port), args_(std::move(args)) {}

    grant_reply run(const member_report& m, const std::string& op = "refresh") {
        const std::string tag = "{" + args_.name + "}";
        const auto n = [](std::uint64_t v) { return std::to_string(v); };
        const auto r = redis_.call({"EVAL", std::string(refresh_script()), "3", tag + ":meta", tag + ":members",
                                    tag + ":violations", op, m.id, n(args_.budget), n(args_.lease_ms),
                                    n(args_.grace_ms), n(args_.forget_ms), n(args_.fallback), n(m.demand),
                                    n(m.weight), n(m.held), n(m.limit), n(m.epoch), n(m.version)});
        grant_reply g;
        if (r.type == fairpool::demo::resp::type::error) {
            g.error = r.text;
            return g;
        }
        EXPECT_EQ(r.elements.size(), 8u);
        if (r.elements.size() != 8) return g;
        const auto at = [&](std::size_t i) { return static_cast<std::uint64_t>(r.elements[i].integer); };
        g.grant = at(0), g.epoch = at(1), g.version = at(2), g.learning = at(3) != 0;
        g.target = at(4), g.live = at(5), g.committed = at(6), g.violations = at(7);
        return g;
    }

    // run(), then the member applies the grant as a pool would: limit = grant, and
    // held = min(limit, demand), or (keep_surplus) held stays where it was if higher.
    grant_reply refresh(member_report& m, bool keep_surplus = false) {
        const auto g = run(m);
        EXPECT_EQ(g.error, "") << m.id;
        m.limit = g.grant;
        m.epoch = g.epoch;
        m.version = g.version;
        const std::uint64_t may = std::min(m.limit, m.demand);
        m.held = keep_surplus ? std::max(m.held, may) : may;
        return g;
    }

    client& redis() { return redis_; }
    budget_args& args() { return args_; }

private:
    client redis_;
    budget_args args_;
};

}  // namespace fairpool::budget::testing
