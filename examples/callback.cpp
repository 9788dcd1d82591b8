// Callbacks: the same pool without coroutines. The factory is still a function
// returning an awaitable; a callback-style connect plugs in through use_awaitable:
//   [&]() -> asio::awaitable<conn> { co_return co_await async_connect(..., asio::use_awaitable); }
#include <boost/asio.hpp>
#include <cstdio>

#include "fairpool/asio/pool.hpp"

namespace asio = boost::asio;

struct connection {
    int id;
};

int main() {
    asio::io_context io;
    const fairpool::pool_options options{.max_slots = 1};
    int next_id = 0;
    fairpool::pool<connection> pool(io.get_executor(), options,
                                    [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; });
    auto handle = pool.make_handle();
    int done = 0;
    for (int i = 0; i < 3; ++i)
        handle.async_acquire([&, i](boost::system::error_code ec, fairpool::lease<connection> lease) {
            if (ec) std::printf("request %d: %s\n", i, ec.message().c_str());
            else std::printf("request %d on connection %d\n", i, lease->id);
            // lease.mark_dirty() if the request failed mid-way; the lease releases when destroyed
            lease.release();
            if (++done == 3)
                pool.async_close([](boost::system::error_code, fairpool::close_report report) {
                    std::printf("closed: %s\n", report.closed ? "yes" : "no");
                });
        });
    io.run();
}
