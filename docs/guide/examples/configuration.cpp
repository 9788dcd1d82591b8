// Configuration: a server's pool_options, group by group; options the pool refuses, with
// the field each message names; the explicit "no bound", fairpool::forever.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct connection {
    int id;
};

int main() {
    // [options]
    const fairpool::pool_options options{
        // Sizes
        .max_slots = 8,                // what the backend grants this process
        .min_slots = 2,                // kept open while idle
        .max_waiters = 160,            // queued acquires; past it: error::saturated
        .max_waiters_per_handle = 40,  // one tenant's share of that queue
        .slot_capacity = 16,           // the most pool.resize may ask for
        // Fairness
        .policy = fairpool::fairness_policy::round_robin,
        .idle_order = fairpool::idle_order::lifo,
        .max_leases_per_handle = 4,  // a tenant holds at most half the pool
        // Waits, making and closing
        .acquire_timeout = 2s,  // a request's wait; past it: error::timeout
        .create_timeout = 5s,   // a connect; past it: a failed spawn
        .spawn_backoff_initial = 100ms,
        .spawn_backoff_max = 10s,
        .max_concurrent_spawns = 2,  // connects at once
        .retire_grace = 1s,          // a graceful close, then the slot is freed anyway
        // Recycling
        .idle_timeout = 10min,  // idle above min_slots this long: closed
        .max_lifetime = 30min,
        .max_lifetime_jitter = 3min,  // each lifetime 27 to 30 minutes
        .jitter_seed = 1,
        .max_uses = 0,  // no limit
        // Health (check_after_idle and keepalive_interval need the check hook)
        .check_after_idle = 30s,
        .keepalive_interval = fairpool::forever,  // no background checks
        .max_concurrent_checks = 1,
        .reset_on_release = false,
        .check_timeout = 2s,
        .reset_timeout = 2s,
        // Leaks
        .leak_threshold = 1min,
        .on_leak_suspected = [](std::uint32_t slot, std::uint64_t) {  // posted, never inline
            std::printf("a lease on slot %u is out for a minute\n", static_cast<unsigned>(slot));
        },
        // The adapter's own bound: acquires in flight beyond the queue
        .mailbox_capacity = 256,
        // .recording: off unless set (09-recording.md)
    };
    // [/options]
    int made = 0;
    const fairpool::resource_hooks<connection> hooks{
        .create = [&]() -> asio::awaitable<connection> { co_return connection{++made}; },
        .check = [](connection&) -> asio::awaitable<bool> { co_return true; },  // a PING
    };
    std::printf("options: %s\n", fairpool::validate(options, hooks) ? "refused" : "valid");
    asio::io_context io;
    // [refused]
    for (const fairpool::pool_options& bad : {
             fairpool::pool_options{.max_slots = 0},
             fairpool::pool_options{.acquire_timeout = 0s},  // "no bound" is fairpool::forever
             fairpool::pool_options{.max_lifetime = 10min, .max_lifetime_jitter = 20min},
             fairpool::pool_options{.max_waiters = 32000},  // + mailbox_capacity > 32766
         })
        std::printf("refused: %s\n", fairpool::validate(bad).value_or("valid").c_str());
    try {  // the constructor checks the options against the hooks too
        fairpool::pool<connection> p(io.get_executor(), {.check_after_idle = 30s}, hooks.create);
    } catch (const fairpool::config_error& e) {
        std::printf("constructor: %s\n", e.what());
    }
    // [/refused]
    fairpool::pool<connection> pool(io.get_executor(), options, hooks);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        // [forever]
        auto a = co_await pool.async_acquire(1s);  // at most 1 s: the earlier deadline wins
        auto b = co_await pool.async_acquire(fairpool::forever);  // acquire_timeout alone
        // [/forever]
        std::printf("leases on connections %d and %d; %d made\n", a->id, b->id, made);
        a.release(), b.release();
        co_await pool.async_close();
    }, asio::detached);
    io.run();
}
