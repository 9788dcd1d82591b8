// Per-tenant fairness through the HTTP service's request path: a greedy tenant with 16
// requests in flight and three light tenants with 3 each share a pool of 2 connections.
// While every tenant is backlogged, each light tenant gets at least 0.8 of its fair share
// (a quarter) of the answered requests: the service gives each tenant a handle of its own.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <map>

#include "fixture.hpp"
#include "service.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(PostgresFairness, LightTenantsGetTheirShareBesideAGreedyOne) {
    auto& db = pg::testing::server();
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options options;
    options.max_slots = 2;
    pg::pool pool(io.get_executor(), options, pg::hooks(db.connect_parameters(), "fairpool-fairness", cancels));
    pg::service_options service_options;
    service_options.acquire_timeout = 10s;
    service_options.work = 2ms;
    pg::item_service service(pool, service_options);

    const std::vector<std::pair<std::string, int>> tenants = {{"greedy", 16}, {"a", 3}, {"b", 3}, {"c", 3}};
    constexpr int counted = 400;  // answers counted while every tenant is backlogged
    std::map<std::string, int> answered;
    int total = 0, not_ok = 0, running = 0;
    for (const auto& [name, clients] : tenants) running += clients;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        co_await service.prepare(100);
        for (const auto& [name, clients] : tenants)
            for (int c = 0; c < clients; ++c)
                asio::co_spawn(io, [&, tenant = name, c]() -> asio::awaitable<void> {
                    for (int i = 0; total < counted; ++i) {
                        const auto r = co_await service.answer("/items/" + std::to_string((c + i) % 100 + 1), tenant);
                        if (r.status != 200) ++not_ok;
                        if (total < counted) ++answered[tenant], ++total;
                    }
                    if (--running == 0) co_await pool.async_close(asio::use_awaitable);
                }, asio::detached);
    }, asio::detached);
    io.run();

    EXPECT_EQ(not_ok, 0);
    EXPECT_EQ(total, counted);
    const double fair = counted / static_cast<double>(tenants.size());
    for (const char* light : {"a", "b", "c"})
        EXPECT_GE(answered[light], 0.8 * fair) << light << " got " << answered[light] << " of " << counted
                                               << " (greedy " << answered["greedy"] << ")";
}

}  // namespace
