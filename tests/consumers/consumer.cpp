// A program that uses an installed (or subproject) fairpool: one pool of int
// "connections", one acquire and release, then its stats and their Prometheus text.
// Built by tests/consumers/check.sh with CMake, pkg-config and Meson; exit 0 on success.
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <string>

#include "fairpool/asio/pool.hpp"
#include "fairpool/asio/prometheus.hpp"
#include "fairpool/version.hpp"

namespace asio = boost::asio;

int main() {
    asio::io_context io;
    const fairpool::pool_options options{.max_slots = 1};
    int next = 41;
    fairpool::pool<int> pool(io.get_executor(), options, [&]() -> asio::awaitable<int> { co_return ++next; });
    int got = 0;
    pool.async_acquire([&](boost::system::error_code ec, fairpool::lease<int> lease) {
        if (!ec) got = *lease;
        lease.release();
        pool.async_close([](boost::system::error_code, fairpool::close_report) {});
    });
    io.run();

    const fairpool::pool_stats s = pool.stats();
    const std::string text = fairpool::prometheus_text(pool, "consumer");
    int lines = 0;
    for (const char c : text) lines += c == '\n';
    std::printf("fairpool %.*s: resource %d; acquires %llu, grants %llu, spawns %llu; prometheus text: %d lines\n",
                static_cast<int>(fairpool::version.size()), fairpool::version.data(), got,
                static_cast<unsigned long long>(s.acquires), static_cast<unsigned long long>(s.grants),
                static_cast<unsigned long long>(s.spawns), lines);
    const bool ok = fairpool::version == "0.2.0" && got == 42 && s.acquires == 1 && s.grants == 1 && lines > 0 &&
                    text.find("fairpool_acquires_total{pool=\"consumer\"} 1\n") != std::string::npos;
    return ok ? 0 : 1;
}
