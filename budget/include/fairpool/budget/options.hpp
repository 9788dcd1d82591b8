#pragma once
// What a member of a fleet budget is told (docs/reference/budget.md lists every field
// with its unit and default; docs/guide/11-fleet-budget.md says how to choose them).
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fairpool::budget {

struct budget_options {
    // The budget's name: its keys are {name}:meta, {name}:members and {name}:violations
    // (one hash tag, so that they live on one Redis Cluster node). Letters, digits and
    // "-_.:" only, 1..64 characters.
    std::string name;
    // B: the connections every member of the fleet may hold together. At least 1.
    std::uint64_t budget = 0;
    // This member's id, unique in the fleet: empty = host:pid:boot-nonce (default_member_id).
    std::string member_id;

    // Redis, the allocator: a loopback or private address; plain TCP (TLS is not
    // supported). user empty and password empty: no AUTH; password alone: AUTH password;
    // both: AUTH user password (a Redis 6 ACL user).
    boost::asio::ip::tcp::endpoint redis;
    std::string user, password;

    // R: how often a member refreshes (each time jittered by +-refresh_jitter of R); a
    // demand above the grant refreshes sooner, but never within min_refresh_gap of the
    // last refresh.
    std::chrono::milliseconds refresh_interval{1000};
    double refresh_jitter = 0.1;
    std::chrono::milliseconds min_refresh_gap{200};
    // L: a grant's lease. Redis reserves a silent member's capacity for L + G
    // (grace) after its last refresh; the member itself trusts its grant until L -
    // lease_margin after it sent that refresh (its own steady clock), then falls back.
    std::chrono::milliseconds lease{3000};
    std::chrono::milliseconds grace{1000};
    std::chrono::milliseconds lease_margin{300};
    // D: how long Redis keeps a silent member's fallback reserved; the member itself
    // drops to 0 at D - lease_margin after its last successful refresh.
    std::chrono::milliseconds forget_after{std::chrono::minutes(10)};
    // The slots a member keeps when Redis cannot be reached past its lease: min(last
    // grant, fallback). 0 (the default): it stops using its backend until Redis is back.
    // Keep N_max x fallback <= B (N_max: the most members the fleet ever runs at once,
    // deploy surges included).
    std::uint64_t fallback = 0;
    // Whether a member never granted starts at `fallback` instead of 0 (fail closed).
    bool start_at_fallback = false;

    // Every connect (TCP and AUTH and SCRIPT LOAD) and every call is bounded; a failed
    // connect is retried after a backoff doubling from reconnect_backoff_initial to
    // reconnect_backoff_max.
    std::chrono::milliseconds connect_timeout{500};
    std::chrono::milliseconds call_timeout{500};
    std::chrono::milliseconds reconnect_backoff_initial{100};
    std::chrono::milliseconds reconnect_backoff_max{2000};
};

// What is wrong with `o`, or nullopt: B = 0, fallback > B, R >= L, a bad name, ...
[[nodiscard]] std::optional<std::string> validate(const budget_options& o);

// host:pid:nonce (the nonce random per process start).
[[nodiscard]] std::string default_member_id();

}  // namespace fairpool::budget
