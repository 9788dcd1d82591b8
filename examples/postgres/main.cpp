// fairpool-pg-service: a multi-tenant HTTP service on a fairpool of libpq connections.
//
//   fairpool-pg-service --conninfo "host=127.0.0.1 port=5432 user=... dbname=..."
//                       [--listen 127.0.0.1:8080] [--pool-size N] [--work-ms N]
//                       [--load SECONDS --tenants greedy:16,a:2,b:2]
//
// Serves GET /items/{id} (header X-Tenant) and GET /metrics on a loopback address until
// SIGINT or SIGTERM; with --load it runs the tenants' HTTP clients against itself for
// that long instead, prints a table per tenant and the pool's metrics, and exits.
// examples/postgres/run does all of it against a throwaway server.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_future.hpp>
#include <charconv>
#include <cstdio>
#include <exception>
#include <string>

#include "fairpool/asio/prometheus.hpp"
#include "load.hpp"
#include "pooled.hpp"
#include "service.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

struct settings {
    std::string conninfo;
    tcp::endpoint listen{asio::ip::address_v4::loopback(), 0};
    unsigned pool_size = 4;
    unsigned work_ms = 2;
    unsigned load_seconds = 0;
    std::string tenants = "greedy:16,alice:2,bob:2,carol:2";
};

bool number(std::string_view s, unsigned& out, unsigned max) {
    const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), out);
    return err == std::errc{} && end == s.data() + s.size() && out <= max;
}

bool endpoint(std::string_view s, tcp::endpoint& out) {
    const auto colon = s.rfind(':');
    unsigned port = 0;
    if (colon == std::string_view::npos || !number(s.substr(colon + 1), port, 65535)) return false;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(std::string(s.substr(0, colon)), ec);
    if (ec || !address.is_loopback()) return false;  // this example listens on loopback only
    out = {address, static_cast<unsigned short>(port)};
    return true;
}

const char* const usage =
    "usage: fairpool-pg-service --conninfo CONNINFO [--listen 127.0.0.1:PORT] [--pool-size N] [--work-ms N]\n"
    "                           [--load SECONDS [--tenants NAME:CLIENTS,...]]\n";

}  // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const std::string_view v = i + 1 < argc ? argv[i + 1] : "";
        bool ok = i + 1 < argc;
        if (a == "--conninfo") s.conninfo = v;
        else if (a == "--listen") ok = ok && endpoint(v, s.listen);
        else if (a == "--pool-size") ok = ok && number(v, s.pool_size, 1000) && s.pool_size > 0;
        else if (a == "--work-ms") ok = ok && number(v, s.work_ms, 60'000);
        else if (a == "--load") ok = ok && number(v, s.load_seconds, 3600) && s.load_seconds > 0;
        else if (a == "--tenants") s.tenants = v;
        else ok = false;
        ++i;
        if (!ok) {
            std::fprintf(stderr, "fairpool-pg-service: bad argument %s\n%s", argv[i - 1], usage);
            return 2;
        }
    }
    if (s.conninfo.empty()) {
        std::fprintf(stderr, "%s", usage);
        return 2;
    }
    try {
        const auto tenants = pg::parse_tenants(s.tenants);
        asio::io_context io;
        pg::canceller cancels;  // outlives the pool and its connections
        // [pool]
        const fairpool::pool_options options{
            .max_slots = s.pool_size,
            .max_waiters = 4096,
            .spawn_backoff_max = std::chrono::seconds(2),      // a restarted server is found within 2 s
            .check_after_idle = std::chrono::seconds(1),       // SELECT 1 before reusing one idle >= 1 s
            .reset_on_release = true,                          // DISCARD ALL after every lease
            .check_timeout = std::chrono::seconds(2),
            .reset_timeout = std::chrono::seconds(2),
        };
        pg::pool pool(io.get_executor(), options,
                      pg::hooks(pg::parse_conninfo(s.conninfo), "fairpool-pg-service", cancels));
        // [/pool]
        pg::service_options service_options;
        service_options.work = std::chrono::milliseconds(s.work_ms);
        pg::item_service service(pool, service_options);
        constexpr int items = 1000;

        auto done = asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            co_await service.prepare(items);
            const tcp::endpoint at = service.listen(s.listen);
            std::printf("listening on http://%s:%u (GET /items/{id} with X-Tenant, GET /metrics), pool of %u\n",
                        at.address().to_string().c_str(), at.port(), s.pool_size);
            std::fflush(stdout);
            // [shutdown]
            if (s.load_seconds > 0) {
                const std::chrono::seconds duration(s.load_seconds);
                auto results = co_await pg::run_load(at, tenants, duration, items);
                std::printf("\n%u s of load, %u ms of server work per request, pool of %u:\n\n%s\n", s.load_seconds,
                            s.work_ms, s.pool_size, pg::load_table(std::move(results), duration).c_str());
            } else {
                asio::signal_set signals(io, SIGINT, SIGTERM);
                (void)co_await signals.async_wait(asio::use_awaitable);
            }
            service.stop();
            std::printf("%s", fairpool::prometheus_text(pool, "postgres").c_str());
            std::printf("\ncancels sent: %llu, failed: %llu\n", static_cast<unsigned long long>(cancels.sent()),
                        static_cast<unsigned long long>(cancels.failed()));
            auto [closed, report] = co_await pool.async_close(std::chrono::seconds(5),
                                                              asio::as_tuple(asio::use_awaitable));
            if (closed)
                std::printf("close: %s; leases still out %llu\n", closed.message().c_str(),
                            static_cast<unsigned long long>(report.leases_out));
            // [/shutdown]
        }, asio::use_future);
        io.run();
        done.get();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fairpool-pg-service: %s\n", e.what());
        return 1;
    }
}
