// The guide's fleet budget page (docs/guide/11-fleet-budget.md): a pool whose size a
// budget client sets, sharing B = 6 connections with every other replica that joins the
// budget "orders-db" in the same Redis. Run as `guide-fleet-budget REDIS_PORT` (the docs
// suite starts a redis-server for it).
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "fairpool/asio.hpp"
#include "fairpool/budget/client.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct connection {
    int id;
};

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });

    // [pool]
    fairpool::pool_options options;
    options.max_slots = 1;      // the budget client sets the size: it starts it at 0
    options.min_slots = 0;      // nothing opened before the first grant
    options.slot_capacity = 6;  // room for the largest grant: up to B
    int next_id = 0;
    fairpool::pool<connection> pool(io.get_executor(), options, [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; });
    // [/pool]

    // [member]
    fairpool::budget::budget_options budget;
    budget.name = "orders-db";  // every replica of the fleet joins the same name
    budget.budget = 6;          // B: the connections the whole fleet may hold
    budget.redis = {asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(std::atoi(argv[1]))};
    budget.fallback = 2;        // kept past the lease if Redis is unreachable (N_max x 2 <= 6)
    fairpool::budget::budget_client member(io.get_executor(), budget, fairpool::budget::target_of(pool));
    member.start();
    // [/member]

    // A new budget learns for lease + grace before it grants: the acquire waits.
    auto handle = pool.make_handle();
    auto lease = handle.async_acquire(10s, asio::use_future).get();
    const auto s = member.stats();
    std::printf("granted %llu of %llu, state %s\n", static_cast<unsigned long long>(s.grant),
                static_cast<unsigned long long>(budget.budget), std::string(to_string(s.state)).c_str());

    // [scrape]
    std::string text = fairpool::prometheus_text(pool, "orders", {},
                                                 [&](std::string& out) { member.append_prometheus(out); });
    // [/scrape]
    const bool ok = s.grant >= 1 && text.find("fairpool_budget_grant{budget=\"orders-db\"") != std::string::npos;

    // [stop]
    lease = {};
    pool.async_close(asio::use_future).get();
    member.leave();  // hands its share back at once (its pool holds nothing now)
    // [/stop]
    while (member.stats().state != fairpool::budget::member_state::stopped) std::this_thread::sleep_for(10ms);
    work.reset();
    runner.join();
    return ok ? 0 : 1;
}
