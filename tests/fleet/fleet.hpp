#pragma once
// The fleet suite's world: one throwaway PostgreSQL cluster with the replicas' role
// (non-superuser, so that CONNECTION LIMIT applies to it), one redis-server, replica
// processes (fleet_replica), and a watcher sampling pg_stat_activity every 2 ms. The
// scenarios (scenarios.hpp) run on it; the fleet test asserts their figures and
// bench/fleet reports them.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster.hpp"
#include "fixture.hpp"  // tests/redis: client
#include "redis_process.hpp"

namespace fairpool::fleet {

using clock_type = std::chrono::steady_clock;

// One replica process and the last status line it wrote.
class replica_process {
public:
    replica_process(const std::string& program, const std::vector<std::string>& args, std::string status_file);
    replica_process(const replica_process&) = delete;
    replica_process& operator=(const replica_process&) = delete;
    ~replica_process();  // SIGKILL and reap, if still running

    void command(const std::string& line);  // "workers N", "quit"
    void signal(int sig);
    // Waits for the process to exit (up to `limit`, then SIGKILL); its exit status.
    int wait(std::chrono::milliseconds limit = std::chrono::seconds(10));
    [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
    // The status file's key=value pairs (empty if not written yet); 0 for a missing key.
    [[nodiscard]] std::map<std::string, std::string> status() const;
    [[nodiscard]] std::uint64_t status_number(const std::string& key) const;

private:
    pid_t pid_ = -1;
    int stdin_ = -1;
    std::string status_file_;
};

// A replica's settings (fleet_replica's options).
struct replica_settings {
    std::string member;          // also its application_name: "fp-" + member
    std::uint64_t workers = 4;
    std::uint64_t hold_ms = 20;
    std::uint64_t fallback = 0;
    std::uint64_t static_slots = 0;  // > 0: no budget client (the static split)
    bool report_grant_as_held = false;
};

class world {
public:
    // budget: B; the lease, grace and refresh interval every replica is given.
    explicit world(std::string replica_program, std::uint64_t budget = 12);
    ~world();

    [[nodiscard]] std::uint64_t budget() const noexcept { return budget_; }
    std::chrono::milliseconds lease{800}, grace{200}, refresh{200};

    // The fence: the replicas' role's CONNECTION LIMIT B (on) or none (off).
    void fence(bool on);
    // A fresh budget: its keys deleted and the script's counters read anew; every
    // replica killed.
    void reset();

    replica_process& start(const replica_settings& r);
    [[nodiscard]] std::vector<std::unique_ptr<replica_process>>& replicas() { return replicas_; }
    // The pool size member `id`'s replica last wrote in its status (0 if none yet).
    [[nodiscard]] std::uint64_t limit_of(const std::string& id) const;
    fairpool::demo::redis_process& redis() { return *redis_; }
    fairpool::demo::testing::client& redis_admin() { return *redis_admin_; }
    // A new admin connection (after redis().start()).
    void reset_admin();

    // The watcher: Σ backends of application_name fp-%, sampled every 2 ms.
    void watch_from_now();  // restarts its maximum and its samples
    [[nodiscard]] std::uint64_t max_connections() const noexcept { return max_.load(); }
    [[nodiscard]] std::uint64_t samples() const noexcept { return samples_.load(); }
    // The mean of the samples taken since the last watch_from_now.
    [[nodiscard]] double mean_connections() const;
    [[nodiscard]] std::uint64_t connections_now() const noexcept { return last_.load(); }

    // The allocator's view: member id -> grant, demand, weight; and its violation count.
    struct member_view {
        std::uint64_t grant = 0, held = 0, limit = 0, demand = 0, weight = 0;
    };
    [[nodiscard]] std::map<std::string, member_view> members();
    [[nodiscard]] std::uint64_t violations();
    // EVALSHA and EVAL calls Redis has served so far.
    [[nodiscard]] std::uint64_t script_calls();

    // Σ spawn_failures of every replica started since reset() (refused logins, with the fence on).
    [[nodiscard]] std::uint64_t refused_logins() const;

private:
    void watch_loop();

    std::string program_;
    std::uint64_t budget_;
    std::unique_ptr<pg::cluster> db_;
    std::unique_ptr<fairpool::demo::redis_process> redis_;
    std::unique_ptr<fairpool::demo::testing::client> redis_admin_;
    std::string dir_;
    std::vector<std::unique_ptr<replica_process>> replicas_;
    std::map<std::string, const replica_process*> by_member_;
    std::uint64_t started_ = 0;

    std::thread watcher_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> max_{0}, samples_{0}, sum_{0}, last_{0};
};

// Weighted max-min fair shares of `budget` over (demand, weight), by member id order:
// the test's own implementation, to check the allocator's.
[[nodiscard]] std::map<std::string, std::uint64_t> fair_shares(
    std::uint64_t budget, const std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>& demand_weight);

}  // namespace fairpool::fleet
