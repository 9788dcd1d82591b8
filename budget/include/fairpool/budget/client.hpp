#pragma once
// A member of a fleet budget: one pool's share of B connections, shared by every
// replica that joins the same budget, computed by Redis (weighted max-min fair) and
// applied with pool.resize. Acquire and release never touch the network: the client
// refreshes on its own timer (docs/guide/11-fleet-budget.md).
//
//   fairpool::budget::budget_options o;
//   o.name = "orders-db";  o.budget = 12;  o.redis = {address, 6379};
//   fairpool::budget::budget_client member(io.get_executor(), o, fairpool::budget::target_of(pool));
//   member.start();
//   ...
//   member.stop();  // before the pool closes
#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "fairpool/budget/options.hpp"
#include "fairpool/budget/stats.hpp"

namespace fairpool::budget {

// What the client reads of its pool at each refresh.
struct member_sample {
    std::uint64_t demand = 0;  // the peak of leased + spawning + eligible waiters since the last sample
    std::uint64_t weight = 0;  // Σ of the weights of the handles with a waiter queued (active_weight)
    std::uint64_t held = 0;    // live + retiring slots
};

// The pool a client drives: how to sample it, how to size it, its slot_capacity.
struct budget_target {
    std::function<member_sample()> sample;
    // The same, as of now, without starting a new peak interval (demand: the current
    // demand): polled between refreshes to refresh sooner. Optional.
    std::function<member_sample()> peek;
    // Sets max_slots; false if the pool refuses (it is closing): the client stops.
    std::function<bool(std::uint64_t max_slots)> apply;
    std::uint64_t capacity = 0;
    // How many sizes the pool has taken so far (pool_stats::resizes): start() waits for
    // its size to be taken. Optional.
    std::function<std::uint64_t()> resizes;
};

// The target for a fairpool::pool: samples take_demand_peak() and stats(), applies
// resize(n, min(min_slots, n)). The target keeps a copy of the pool (a shared handle)
// until the client has stopped. Make the pool with min_slots 0 (it opens nothing
// before its first grant) and slot_capacity at least the largest grant it may get.
template <class Pool>
[[nodiscard]] budget_target target_of(Pool pool, std::uint64_t min_slots = 0) {
    const std::uint64_t capacity = pool.slot_capacity();
    return {
        .sample = [pool]() mutable {
            const std::uint64_t demand = pool.take_demand_peak();
            const auto s = pool.stats();
            return member_sample{demand, s.active_weight, s.held};
        },
        .peek = [pool] {
            const auto s = pool.stats();
            return member_sample{s.demand, s.active_weight, s.held};
        },
        .apply = [pool, min_slots](std::uint64_t n) mutable { return !pool.resize(n, n < min_slots ? n : min_slots); },
        .capacity = capacity,
        .resizes = [pool] { return pool.stats().resizes; },
    };
}

class budget_client;

// Several members' series in one scrape (each family once).
void append_prometheus(std::string& out, std::span<const budget_client* const> clients);

class budget_client {
public:
    // Throws std::invalid_argument for bad options (validate) or a target without
    // sample/apply. Nothing runs before start().
    budget_client(boost::asio::any_io_executor ex, budget_options options, budget_target target);
    budget_client(const budget_client&) = delete;
    budget_client& operator=(const budget_client&) = delete;
    ~budget_client();  // stop()

    // Sizes the pool to 0 (or fallback if start_at_fallback), then refreshes on the
    // executor until stop(). Called off the pool's threads, it returns once the pool has
    // taken that size (at most 1 s), so that no acquire made afterwards is granted
    // before the first grant. Call it before the pool serves: an acquire already in the
    // pool's mailbox is fed before a resize taken in the same drain.
    void start();
    // Stops refreshing (from any thread; idempotent): the connection to Redis is
    // closed, the target (and its pool copy) released on the executor. The pool keeps
    // its size; Redis keeps the member's capacity reserved for lease + grace. Call
    // leave() first to hand it back at once.
    void stop();
    // Asks Redis, once, to forget this member if its pool holds nothing (after the
    // pool has closed): its capacity is then free at once instead of after lease +
    // grace. Runs on the executor; stop() follows.
    void leave();

    [[nodiscard]] budget_stats stats() const;
    [[nodiscard]] const budget_options& options() const noexcept;
    // This member's series in Prometheus text (docs/reference/prometheus.md), for
    // prometheus_text's append hook: labels budget="<name>", member="<id>".
    void append_prometheus(std::string& out) const;

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace fairpool::budget
