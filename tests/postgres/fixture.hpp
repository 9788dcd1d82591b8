#pragma once
// What the postgres suite shares: one throwaway PostgreSQL 15 cluster for the whole
// program (examples/postgres/cluster.hpp: initdb in a temp dir, a free loopback port,
// pg_ctl start, stopped and removed at exit; as root it runs as an unprivileged user
// through runuser), and a blocking observer connection that the test's own thread uses
// to read pg_stat_activity while the pool runs on an io thread.
#include <libpq-fe.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cluster.hpp"

namespace pg::testing {

// The suite's cluster, made on first use.
[[nodiscard]] pg::cluster& server();

// A plain blocking libpq connection (never on an io thread).
class observer {
public:
    explicit observer(const pg::cluster& db);
    observer(const observer&) = delete;
    observer& operator=(const observer&) = delete;
    ~observer();

    // The first column of every row; throws std::runtime_error if the statement fails.
    [[nodiscard]] std::vector<std::string> column(const std::string& sql, const std::vector<std::string>& params = {});
    // A single integer (count(*), say).
    [[nodiscard]] long long number(const std::string& sql, const std::vector<std::string>& params = {});

private:
    PGconn* conn_ = nullptr;
};

// Statements of the pool's application_name running right now.
inline const char* const active_of_application =
    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND application_name = $1";

// Polls `done` every 10 ms for up to `limit`; returns its last value.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace pg::testing
