// A server restart (pg_ctl restart -m fast: every session terminated) under load through
// the HTTP service's request path: every request gets exactly one answer (200, or an
// error status), the pool recovers (requests succeed again once the server is back),
// and after a restart while the pool sits idle, checks before reuse (SELECT 1) replace
// every dead connection: each later request succeeds. This test has a cluster of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <future>
#include <map>

#include "fixture.hpp"
#include "service.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(PostgresRestart, EveryRequestAnsweredAndThePoolRecovers) {
    pg::cluster db;
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options options;
    options.max_slots = 4;
    options.check_after_idle = std::chrono::nanoseconds(1);  // check every connection before reusing it
    options.reset_on_release = true;
    options.spawn_backoff_initial = std::chrono::milliseconds(20);
    options.spawn_backoff_max = std::chrono::milliseconds(200);
    pg::pool pool(io.get_executor(), options, pg::hooks(db.connect_parameters(), "fairpool-restart", cancels));
    pg::service_options service_options;
    service_options.acquire_timeout = 2s;
    service_options.statement_timeout = 2s;
    service_options.work = 5ms;
    pg::item_service service(pool, service_options);
    auto work = asio::make_work_guard(io);
    std::thread io_thread([&] { io.run(); });
    asio::co_spawn(io, service.prepare(100), asio::use_future).get();

    // The load: workers sending requests until told to stop, each request's answers
    // counted by its number (the io thread writes them; read after the workers end).
    constexpr std::size_t max_requests = 1'000'000;
    std::vector<int> answers(max_requests, 0);
    std::map<unsigned, int> by_status;
    std::size_t issued = 0;
    std::atomic<int> succeeded{0};
    std::atomic<bool> stop{false};
    std::vector<std::future<void>> workers;
    for (int w = 0; w < 8; ++w)
        workers.push_back(asio::co_spawn(io, [&, w]() -> asio::awaitable<void> {
            const std::string tenant = "tenant-" + std::to_string(w % 2);
            while (!stop.load() && issued < max_requests) {
                const std::size_t id = issued++;
                const auto r = co_await service.answer("/items/" + std::to_string(id % 100 + 1), tenant);
                ++answers[id];
                ++by_status[r.status];
                if (r.status == 200) ++succeeded;
            }
        }, asio::use_future));
    // EXPECT, not ASSERT: returning here would destroy io_thread joinable (std::terminate,
    // and the failure's message lost); the rest still runs and reports.
    EXPECT_TRUE(pg::testing::eventually([&] { return succeeded.load() >= 50; }))
        << "no 50 successes within 20 s of the start; " << succeeded.load() << " so far";
    db.restart("fast");
    const int at_restart = succeeded.load();
    const bool recovered = pg::testing::eventually([&] { return succeeded.load() >= at_restart + 50; }, 30s);
    stop = true;
    for (auto& f : workers) f.get();

    // Restarted while the pool is idle: every idle connection is dead, and found so by
    // its check before reuse.
    db.restart("fast");
    const auto after = asio::co_spawn(io, [&]() -> asio::awaitable<std::vector<unsigned>> {
        std::vector<unsigned> statuses;
        for (int i = 1; i <= 20; ++i) statuses.push_back((co_await service.answer("/items/" + std::to_string(i), "late")).status);
        co_return statuses;
    }, asio::use_future).get();
    asio::co_spawn(io, pool.async_close(std::chrono::steady_clock::now() + 5s, asio::use_awaitable), asio::use_future)
        .get();
    work.reset();
    io_thread.join();

    EXPECT_TRUE(recovered) << "no 50 successes within 30 s of the restart";
    int answered_once = 0;
    for (std::size_t id = 0; id < issued; ++id) answered_once += answers[id] == 1;
    EXPECT_EQ(answered_once, static_cast<int>(issued));
    int total = 0;
    for (const auto& [status, n] : by_status) total += n;
    EXPECT_EQ(total, static_cast<int>(issued));
    EXPECT_EQ(after, std::vector<unsigned>(20, 200));
    std::string statuses;
    for (const auto& [status, n] : by_status) statuses += " " + std::to_string(status) + ":" + std::to_string(n);
    std::printf("%zu requests under load, by status:%s; spawns %llu, checks failed %llu\n", issued, statuses.c_str(),
                static_cast<unsigned long long>(pool.stats().spawns),
                static_cast<unsigned long long>(pool.stats().checks_failed));
}

}  // namespace
