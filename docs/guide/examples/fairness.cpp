// Fairness: a greedy tenant (G) queues four requests, then a light tenant (l) queues two.
// Each line shows the order in which the pool granted them (!: refused, the queue full).
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace asio = boost::asio;
using fairpool::fairness_policy;

struct connection {};  // a backend connection (here, nothing)
using lease = fairpool::lease<connection>;
asio::awaitable<connection> open_connection() { co_return connection{}; }  // the factory

struct scene {
    asio::io_context io;
    fairpool::pool<connection> pool;
    fairpool::handle<connection> greedy, light;  // empty until make_handle
    std::string order;                           // one letter per grant
    std::vector<lease> held;                     // leases kept, with `hold`
    bool hold;

    scene(const fairpool::pool_options& options, const fairpool::handle_options& greedy_opts = {},
          bool hold_leases = false)
        : pool(io.get_executor(), options, open_connection), hold(hold_leases) {
        // [handles]
        greedy = pool.make_handle(greedy_opts);  // one handle per tenant
        light = pool.make_handle({.name = "light"});
        // [/handles]
        for (int i = 0; i < 4; ++i) request(greedy, 'G');
        for (int i = 0; i < 2; ++i) request(light, 'l');
        io.poll();  // run what is ready: spawns, grants, releases
    }
    ~scene() {
        hold = false;
        held.clear();  // every lease back (waiters still queued take them, and give them back)
        pool.async_close(asio::detached);
        io.run();
    }

    // [request]
    void request(fairpool::handle<connection>& tenant, char letter) {
        tenant.async_acquire([this, letter](boost::system::error_code ec, lease l) {
            if (ec) {  // error::saturated, in this program: its handle's queue was full
                order += '!';
                return;
            }
            order += letter;
            if (hold) held.push_back(std::move(l));  // else back now, to the next waiter
        });
    }
    // [/request]
    void print(const char* title) const { std::printf("%-36s %s\n", title, order.c_str()); }
};

int main() {
    // [policy]
    scene({.max_slots = 1}).print("round_robin, 1 slot:");
    scene({.max_slots = 1, .policy = fairness_policy::fifo}).print("fifo, 1 slot:");
    // [/policy]
    // [weight]
    scene({.max_slots = 1}, {.weight = 3}).print("round_robin, greedy weight 3:");
    // [/weight]
    // [per-handle]
    scene({.max_slots = 1, .max_waiters_per_handle = 2}).print("max_waiters_per_handle 2:");
    // [/per-handle]
    // [cap]
    scene({.max_slots = 3}, {}, true).print("3 slots, leases held:");
    scene({.max_slots = 3}, {.max_leases = 1}, true).print("3 slots, held, greedy max_leases 1:");
    // [/cap]
    // [resize]
    scene growing({.max_slots = 1, .slot_capacity = 4}, {}, true);
    growing.print("1 slot, leases held:");
    boost::system::error_code ec = growing.pool.resize(3, 0);  // 3 slots from now on
    growing.io.poll();
    growing.print("after resize(3, 0):");
    ec = growing.pool.resize(5, 0);  // above slot_capacity: refused, nothing changes
    std::printf("resize(5, 0): %s\n", ec.message().c_str());
    // [/resize]
}
