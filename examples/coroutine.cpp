// Coroutines: three tenants share a pool of two "connections".
#include <boost/asio.hpp>
#include <cstdio>

#include "fairpool/asio/pool.hpp"

namespace asio = boost::asio;

struct connection {
    int id;
};

asio::awaitable<void> tenant(fairpool::pool<connection>& pool, const char* name, int requests) {
    auto handle = pool.make_handle();  // the unit of fairness
    for (int i = 0; i < requests; ++i) {
        auto [ec, lease] = co_await handle.async_acquire(std::chrono::seconds(1), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            std::printf("%s: %s\n", name, ec.message().c_str());
            continue;
        }
        asio::steady_timer work(co_await asio::this_coro::executor, std::chrono::milliseconds(2));
        co_await work.async_wait(asio::use_awaitable);  // use lease->... here
        std::printf("%s used connection %d\n", name, lease->id);
    }  // each lease goes back to the pool when it goes out of scope
}

int main() {
    asio::io_context io;
    const fairpool::pool_options options{.max_slots = 2};
    int next_id = 0;
    fairpool::pool<connection> pool(
        io.get_executor(), options,
        [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; },  // connect
        [](connection&) -> asio::awaitable<void> { co_return; });                  // graceful close
    asio::co_spawn(io, tenant(pool, "alice", 3), asio::detached);
    asio::co_spawn(io, tenant(pool, "bob", 3), asio::detached);
    asio::co_spawn(io, tenant(pool, "carol", 3), asio::detached);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(io, std::chrono::milliseconds(50));
        co_await t.async_wait(asio::use_awaitable);
        auto [ec, report] = co_await pool.async_close(asio::as_tuple(asio::use_awaitable));
        std::printf("closed: %s\n", report.closed ? "yes" : "no");
    }, asio::detached);
    io.run();
    std::printf("grants: %llu\n", static_cast<unsigned long long>(pool.stats().grants));
}
