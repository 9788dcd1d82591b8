// The connection budget the server can trust: while tenants keep more statements in
// flight than the pool has slots, some of them timed out and cancelled, the server never
// runs more than max_slots statements of the pool's application_name at once, and does
// run exactly max_slots at some point (the pool is used to its limit).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "fixture.hpp"
#include "pooled.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(PostgresBudget, ActiveStatementsNeverExceedMaxSlots) {
    auto& db = pg::testing::server();
    const std::string app = "fairpool-budget";
    constexpr int tenants = 4, workers_per_tenant = 4, statements_per_worker = 6;
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options options;
    options.max_slots = 3;
    options.reset_on_release = true;
    pg::pool pool(io.get_executor(), options, pg::hooks(db.connect_parameters(), app, cancels));

    int succeeded = 0, timed_out = 0, failed = 0;
    int running = tenants * workers_per_tenant;
    std::vector<pg::handle> handles;
    for (int t = 0; t < tenants; ++t) handles.push_back(pool.make_handle());
    for (int t = 0; t < tenants; ++t)
        for (int w = 0; w < workers_per_tenant; ++w)
            asio::co_spawn(io, [&, t, w]() -> asio::awaitable<void> {
                for (int i = 0; i < statements_per_worker; ++i) {
                    auto l = co_await handles[t].async_acquire(asio::use_awaitable);
                    // Every third statement of every other worker outlives its timeout.
                    const bool hang = w % 2 == 0 && i % 3 == 2;
                    auto o = co_await pg::run(l, hang ? "SELECT pg_sleep(5)" : "SELECT pg_sleep(0.03)", {},
                                              hang ? 20ms : 5s);
                    (o ? succeeded : o.timed_out ? timed_out : failed) += 1;
                }
                if (--running == 0) co_await pool.async_close(asio::use_awaitable);
            }, asio::detached);

    std::atomic<bool> done{false};
    long long most = 0, samples = 0;
    std::thread watcher([&] {
        pg::testing::observer watch(db);
        while (!done.load()) {
            most = std::max(most, watch.number(pg::testing::active_of_application, {app}));
            ++samples;
            std::this_thread::sleep_for(2ms);
        }
    });
    io.run();
    done = true;
    watcher.join();

    const int hangs = (workers_per_tenant / 2) * tenants * (statements_per_worker / 3);
    EXPECT_EQ(succeeded, tenants * workers_per_tenant * statements_per_worker - hangs);
    EXPECT_EQ(timed_out, hangs);
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(most, 3) << "over " << samples << " samples of pg_stat_activity";
    EXPECT_EQ(pool.stats().retired_dirty, static_cast<std::uint64_t>(hangs));
    cancels.wait_idle();  // the last cancels may still be on the canceller's thread
    EXPECT_EQ(cancels.sent(), static_cast<std::uint64_t>(hangs));
    // Every cancelled statement has ended on the server, not just been given up on.
    pg::testing::observer after(db);
    EXPECT_EQ(after.number(pg::testing::active_of_application, {app}), 0);
}

}  // namespace
