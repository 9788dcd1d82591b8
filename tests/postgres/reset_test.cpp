// With reset on (DISCARD ALL), what a lease holder leaves on its session — settings,
// temporary tables, prepared statements, search_path — is gone for the next lease of the
// same connection, and the pool's application_name (a connection parameter) stays.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "fixture.hpp"
#include "pooled.hpp"

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The first column of the first row, or the error.
asio::awaitable<std::string> value(pg::lease& l, std::string sql) {
    auto o = co_await pg::run(l, std::move(sql), {}, 5s);
    if (!o) co_return "error: " + o.error;
    if (PQntuples(o.rows.get()) == 0) co_return std::string("ok");
    co_return std::string(PQgetvalue(o.rows.get(), 0, 0));
}

// What a lease holder leaves behind, and how the next one looks for it. (Arrays here,
// not braced lists in the coroutine: g++ 12 cannot compile those.)
constexpr const char* leave_behind[] = {"SET statement_timeout = '1234ms'", "SET search_path = leak, public",
                                        "CREATE TEMP TABLE leftover (x int)", "PREPARE leftover_plan AS SELECT 1",
                                        "SET application_name = 'someone-else'"};
constexpr const char* look_for[] = {"SHOW statement_timeout", "SHOW search_path",
                                    "SELECT to_regclass('pg_temp.leftover') IS NULL",
                                    "SELECT count(*) FROM pg_prepared_statements", "SHOW application_name"};

TEST(PostgresReset, SessionStateNeverLeaksToTheNextLease) {
    auto& db = pg::testing::server();
    const std::string app = "fairpool-reset";
    asio::io_context io;
    pg::canceller cancels;
    fairpool::pool_options options;
    options.max_slots = 1;  // the second lease gets the same connection
    options.reset_on_release = true;
    pg::pool pool(io.get_executor(), options, pg::hooks(db.connect_parameters(), app, cancels));

    struct seen {
        int first_pid = 0, second_pid = 0;
        std::vector<std::string> left, after;
    };
    auto done = asio::co_spawn(io, [&]() -> asio::awaitable<seen> {
        seen s;
        {
            auto l = co_await pool.async_acquire(asio::use_awaitable);
            s.first_pid = l->backend_pid();
            for (const char* sql : leave_behind) s.left.push_back(co_await value(l, sql));
        }  // released clean: the pool runs DISCARD ALL
        auto l = co_await pool.async_acquire(asio::use_awaitable);
        s.second_pid = l->backend_pid();
        for (const char* sql : look_for) s.after.push_back(co_await value(l, sql));
        l.release();
        co_await pool.async_close(asio::use_awaitable);
        co_return s;
    }, asio::use_future);
    io.run();
    const seen s = done.get();

    EXPECT_EQ(s.left, (std::vector<std::string>(5, "ok"))) << "setup ran";
    EXPECT_EQ(s.second_pid, s.first_pid) << "the same connection, reset rather than replaced";
    EXPECT_EQ(s.after, (std::vector<std::string>{"0", "\"$user\", public", "t", "0", app}));
    EXPECT_EQ(pool.stats().resets_started, 2u);
    EXPECT_EQ(pool.stats().resets_failed, 0u);
}

}  // namespace
