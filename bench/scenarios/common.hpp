#pragma once
// What every scenario shares: the five designs behind one small interface, the row
// printer, and the few statistics the scenarios report.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../baselines/channel_pool.hpp"
#include "../baselines/mutex_condvar_pool.hpp"
#include "../baselines/notify_retry_pool.hpp"
#include "../baselines/servicing_task_pool.hpp"
#include "fairpool/asio/pool.hpp"

namespace fairpool_bench {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

// Every heap allocation of the program, and of the calling thread (allocation_counter.cpp).
std::uint64_t allocations() noexcept;
std::uint64_t allocations_on_this_thread() noexcept;

struct connection {
    int id;
};

inline std::int64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// --- Designs: how to make each pool, and what an acquirer calls ----------------------
//
// make() returns a ready pool (all resources created: fairpool prewarms min_slots =
// max_slots before the clock starts). source() returns what one tenant or worker
// acquires through: for fairpool a handle (its unit of fairness; the baselines have no
// such notion), for the baselines the pool itself.

template <class Pool>
struct direct_source {
    using lease_type = typename Pool::lease_type;
    Pool* pool;
    template <class Token>
    auto async_acquire(Token&& token) {
        return pool->async_acquire(std::forward<Token>(token));
    }
};

// From a coroutine: co_await the asynchronous acquire; the blocking pool is called
// directly (its inline completion must not be awaited, see mutex_condvar_pool.hpp).
template <class Source>
constexpr bool blocking_source = requires(Source& s) { s.pool->acquire_blocking(); };

struct fairpool_design {
    static constexpr const char* name = "fairpool";
    using pool_type = fairpool::pool<connection>;
    // check_after_idle not forever: a check hook that answers alive at once, so what is
    // measured is the pool's own cost of a check on checkout, not a backend's round trip.
    // `recording`: the flight recorder on, with these options. max_leases_per_handle > 0:
    // every handle capped at that many leases out (issue 15). Every other setting is the
    // default: acquire_timeout and create_timeout (30 s) in force, as a user's pool has them.
    static std::unique_ptr<pool_type> make(asio::io_context& io, std::size_t size,
                                           const fairpool::recorder_options* recording = nullptr,
                                           std::chrono::nanoseconds check_after_idle = fairpool::forever,
                                           std::size_t max_leases_per_handle = 0);
    // The options make() gives the pool.
    static fairpool::pool_options options(std::size_t size, const fairpool::recorder_options* recording = nullptr,
                                          std::chrono::nanoseconds check_after_idle = fairpool::forever,
                                          std::size_t max_leases_per_handle = 0);
    static auto source(pool_type& p) { return p.make_handle(); }
};

// fairpool with every handle capped at `Cap` leases out (max_leases_per_handle): a
// tenant at its cap waits while others are served, even beside an idle slot.
template <std::uint64_t Cap>
struct fairpool_capped_design : fairpool_design {
    static constexpr std::uint64_t cap = Cap;
    static std::unique_ptr<pool_type> make(asio::io_context& io, std::size_t size) {
        return fairpool_design::make(io, size, nullptr, fairpool::forever, Cap);
    }
};

// fairpool with the flight recorder on as a production pool would run it: the default
// recorder_options (a ring of 65,536 records, segments of 100,000 events, 8 kept, the
// writer waking every 10 ms) writing into recording_directory() on local disk.
struct fairpool_recording_design : fairpool_design {
    static std::unique_ptr<pool_type> make(asio::io_context& io, std::size_t size);
};

// A scratch directory under TMPDIR (or /tmp), made on first use, removed at exit.
const std::filesystem::path& recording_directory();
fairpool::recorder_options bench_recorder_options();

std::vector<connection> make_connections(std::size_t n);

// The actor's diagnostics, fairpool's alone (0 for a baseline).
template <class Pool>
std::uint64_t commands_fed(const Pool& p) {
    if constexpr (requires { p.diagnostics().commands_fed; }) return p.diagnostics().commands_fed;
    else return 0;
}
template <class Pool>
std::uint64_t drains_run(const Pool& p) {
    if constexpr (requires { p.diagnostics().drains_run; }) return p.diagnostics().drains_run;
    else return 0;
}

template <class Pool>
struct baseline_design {
    using pool_type = Pool;
    static std::unique_ptr<Pool> make(asio::io_context& io, std::size_t size) {
        if constexpr (std::is_constructible_v<Pool, std::vector<connection>>)
            return std::make_unique<Pool>(make_connections(size));
        else
            return std::make_unique<Pool>(io.get_executor(), make_connections(size));
    }
    static auto source(Pool& p) { return direct_source<Pool>{&p}; }
};

struct mutex_condvar_design : baseline_design<mutex_condvar_pool<connection>> {
    static constexpr const char* name = "mutex_condvar";
};
struct servicing_task_design : baseline_design<servicing_task_pool<connection>> {
    static constexpr const char* name = "servicing_task";
};
struct notify_retry_design : baseline_design<notify_retry_pool<connection>> {
    static constexpr const char* name = "notify_retry";
};
struct channel_design : baseline_design<channel_pool<connection>> {
    static constexpr const char* name = "channel";
};

inline constexpr std::size_t design_count = 5;

// Calls f(design) for each design in a fixed order, with its index 0..design_count-1.
template <class F>
void for_each_design(F&& f) {
    f(fairpool_design{}, std::size_t{0});
    f(mutex_condvar_design{}, std::size_t{1});
    f(servicing_task_design{}, std::size_t{2});
    f(notify_retry_design{}, std::size_t{3});
    f(channel_design{}, std::size_t{4});
}

// Calls f(design) for the design named `name`; false if there is none so named.
template <class F>
bool with_design_named(std::string_view name, F&& f) {
    bool found = false;
    for_each_design([&](auto d, std::size_t) {
        if (name != d.name) return;
        found = true;
        f(d);
    });
    return found;
}

// --- Output and statistics ------------------------------------------------------------

// One JSON row on stdout: {"scenario", "design", "metric", "value", "unit"}.
void row(const std::string& scenario, const char* design, const char* metric, double value, const char* unit);

double median(std::vector<double> v);
double quantile_sorted(const std::vector<std::int64_t>& v, double q);

// What io.run() reported on each thread of a run: the handlers run in all, and whether
// the run used both of its threads (every thread ran at least a tenth of them). On two
// threads Asio hands a handler to the second thread only when it finds it idle at the
// moment of a post, so a contended run settles either on one thread or on both, by
// the race at its start: the grid reports its times in each of the two modes apart.
struct handlers_run {
    std::size_t total = 0;
    bool every_thread = false;
};

// Runs io on `threads` threads (the caller's included) until it runs out of work.
handlers_run run_on(asio::io_context& io, int threads);

// Busy for d without suspending: a lease held across a suspension would deadlock the
// blocking pool on two threads.
void spin_for(std::chrono::nanoseconds d);

}  // namespace fairpool_bench
