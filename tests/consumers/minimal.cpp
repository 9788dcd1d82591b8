// The shortest fairpool program: a pool, an acquire, a use, a release, a graceful close.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <cstdio>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct connection {  // your resource: a database or backend connection
    int queries = 0;
};

int main() {
    asio::io_context io;  // max_slots 4, at most 30 s to connect (pool_options' defaults)
    auto connect = []() -> asio::awaitable<connection> { co_return connection{}; };
    fairpool::pool<connection> pool(io.get_executor(), {.acquire_timeout = 2s}, connect);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto lease = co_await pool.async_acquire();  // at most 2 s; throws on failure
        std::printf("queries: %d\n", ++lease->queries);
        lease.release();                             // back to the pool (also when it goes)
        co_await pool.async_close();                 // every lease back, every resource closed
    }, asio::detached);
    io.run();
}
