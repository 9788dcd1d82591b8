// A statement cancelled by its timeout is cancelled on the server (PQcancel) and its
// connection released dirty: that backend (pg_backend_pid()) never serves another
// request. Reset is off here, so that only the dirty release keeps the connection out
// (with reset on, DISCARD ALL on the interrupted connection would fail and retire it too).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <set>

#include "fixture.hpp"
#include "pooled.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(PostgresCancel, CancelledBackendNeverServesAnotherRequest) {
    auto& db = pg::testing::server();
    const std::string app = "fairpool-cancel";
    constexpr int cancelled_rounds = 3, workers = 2, requests_per_worker = 15;
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options options;
    options.max_slots = 2;
    pg::pool pool(io.get_executor(), options, pg::hooks(db.connect_parameters(), app, cancels));

    std::vector<int> cancelled;
    std::vector<bool> timed_out;
    std::vector<int> served;
    int failed = 0;
    int running = workers;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto tenant = pool.make_handle();
        for (int i = 0; i < cancelled_rounds; ++i) {
            auto l = co_await tenant.async_acquire(asio::use_awaitable);
            cancelled.push_back(l->backend_pid());
            auto o = co_await pg::run(l, "SELECT pg_sleep(30)", {}, 50ms);
            timed_out.push_back(o.timed_out);
        }
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(io, [&]() -> asio::awaitable<void> {
                auto mine = pool.make_handle();
                for (int i = 0; i < requests_per_worker; ++i) {
                    auto l = co_await mine.async_acquire(asio::use_awaitable);
                    auto o = co_await pg::run(l, "SELECT pg_backend_pid()", {}, 5s);
                    if (o) served.push_back(std::stoi(PQgetvalue(o.rows.get(), 0, 0)));
                    else ++failed;
                }
                if (--running == 0) co_await pool.async_close(asio::use_awaitable);
            }, asio::detached);
    }, asio::detached);
    io.run();

    EXPECT_EQ(timed_out, std::vector<bool>(cancelled_rounds, true));
    EXPECT_EQ(std::set<int>(cancelled.begin(), cancelled.end()).size(), static_cast<std::size_t>(cancelled_rounds))
        << "each cancelled statement ran on a connection of its own";
    EXPECT_EQ(failed, 0);
    ASSERT_EQ(served.size(), static_cast<std::size_t>(workers * requests_per_worker));
    for (const int pid : served)
        EXPECT_EQ(std::count(cancelled.begin(), cancelled.end(), pid), 0) << "backend " << pid << " served again";
    EXPECT_EQ(pool.stats().retired_dirty, static_cast<std::uint64_t>(cancelled_rounds));
    cancels.wait_idle();  // the last cancels may still be on the canceller's thread
    EXPECT_EQ(cancels.sent(), static_cast<std::uint64_t>(cancelled_rounds));
    // The server ended each cancelled pg_sleep(30): none of those backends runs it now.
    pg::testing::observer watch(db);
    std::string pids = "{";
    for (const int pid : cancelled) pids += (pids.size() > 1 ? "," : "") + std::to_string(pid);
    EXPECT_EQ(watch.number("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND state = 'active'",
                           {pids + "}"}),
              0);
}

}  // namespace
