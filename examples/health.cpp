// Health: a check before reuse replaces a connection that died while idle, and a reset
// on release wipes what the last user left on a connection. The "backend" is a set of
// the connections it still has open.
#include <boost/asio.hpp>
#include <cstdio>
#include <set>

#include "fairpool/asio/pool.hpp"

namespace asio = boost::asio;

struct connection {
    int id;
    int session = 0;  // state a user may leave behind (a selected database, say)
};

int main() {
    asio::io_context io;
    std::set<int> open;  // the backend's side
    int next_id = 0;
    const fairpool::pool_options options{
        .max_slots = 1,
        .check_after_idle = std::chrono::milliseconds(1),  // check one idle 1 ms or more before reuse
        .reset_on_release = true,                          // reset each one given back clean
        .check_timeout = std::chrono::seconds(1),          // past it: dead (the hook is cancelled)
    };
    fairpool::pool<connection> pool(io.get_executor(), options, fairpool::resource_hooks<connection>{
        .create = [&]() -> asio::awaitable<connection> {
            open.insert(++next_id);
            co_return connection{next_id};
        },
        .close = [&](connection& c) -> asio::awaitable<void> {
            open.erase(c.id);
            co_return;
        },
        .check = [&](connection& c) -> asio::awaitable<bool> { co_return open.count(c.id) != 0; },  // PING
        .reset = [](connection& c) -> asio::awaitable<bool> {  // RESET, DISCARD ALL
            c.session = 0;
            co_return true;
        },
    });
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer idle(io);
        for (int request = 1; request <= 3; ++request) {
            idle.expires_after(std::chrono::milliseconds(5));
            co_await idle.async_wait(asio::use_awaitable);  // idle past check_after_idle
            if (request == 3) open.clear();                  // the backend drops its idle connections
            auto lease = co_await pool.async_acquire();
            std::printf("request %d on connection %d, session %d\n", request, lease->id, lease->session);
            lease->session = request;
        }
        co_await pool.async_close();
    }, asio::detached);
    io.run();
    const auto s = pool.stats();
    std::printf("checks: %llu alive, %llu dead; resets: %llu\n", static_cast<unsigned long long>(s.checks_passed),
                static_cast<unsigned long long>(s.checks_failed), static_cast<unsigned long long>(s.resets_started));
    return s.checks_failed == 1 && s.resets_started == 3 ? 0 : 1;
}
