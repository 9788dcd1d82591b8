// fairpool-demo: a pooled Redis proxy (docs/DEMO.md).
//
//   fairpool-demo [--backend HOST:PORT] [--listen PORT] [--metrics-port PORT] ...
//   fairpool-demo --load [--seconds N] [--greedy N] [--light N] [--greedy-hold-ms N] [--tenant-cap N] ...
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "busy_poll.hpp"
#include "command_line.hpp"
#include "embedded_backend.hpp"
#include "load_generator.hpp"
#include "metrics_http.hpp"
#include "proxy_server.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace fairpool::demo;

namespace {

constexpr const char* usage = R"(usage: fairpool-demo [options]
A Redis proxy that shares a fair, bounded pool of backend connections among tenants.
  --backend HOST:PORT     a real Redis (default: an embedded in-process RESP backend)
  --listen PORT           the proxy's port on 127.0.0.1 (default 6380; 0 picks a free one)
  --load                  run the built-in load (one greedy tenant, light ones), then exit
  --seconds N             length of the load (default 5)
  --greedy N              connections of the greedy tenant (default 32)
  --light N               light tenants, one connection each (default 3)
  --greedy-hold-ms N      the greedy tenant's requests hold their backend connection N ms
                          (BLPOP with an N ms timeout on a key nobody writes) instead of
                          sending INCR (default 0: INCR); below --request-timeout-ms
  --policy P              round_robin (default) or fifo
  --max-slots N           backend connections at most (default 4 with --load, else 8)
  --tenant-cap N          a tenant holds N backend connections at most (N > 0; the pool's
                          max_leases_per_handle); its further requests wait their
                          turn while others are served (default: no cap)
  --latency-us N          the embedded backend's latency per command (default 200)
  --request-timeout-ms N  per-request timeout, waiting included (default 1000)
  --max-clients N         client connections at most (default 256)
  --metrics-port PORT     serve GET /metrics (Prometheus text: the pool's counters and each
                          connected tenant's, label tenant="NAME") on 127.0.0.1:PORT
  --check-after-idle-ms N PING a backend connection idle N ms or more before it is
                          handed out; a dead one is replaced (default 0: off)
  --keepalive-ms N        PING idle backend connections every N ms, replacing dead ones
                          before a request needs them (default 0: off)
  --reset-on-release      send RESET on a backend connection after each request, before
                          its reuse; one that fails it is closed (Redis >= 6.2)
  --record-dir DIR        the pool's flight recorder writes its segments here (default
                          fairpool-recording; the previous run's go to DIR/previous)
  --segment-events N      events per recorded segment (default 100000)
  --keep-segments N       segments kept, older ones deleted (default 8)
  --no-record             no flight recorder
  --dump-dir DIR          on SIGUSR1, the recorder's retained segments are copied here
                          (default fairpool-dump), to replay with fairpool-replay
  --tenant-passwords FILE AUTH <tenant> <password> names a client's tenant: FILE has one
                          "tenant password" pair a line (# starts a comment); without it
                          AUTH is refused
  --max-batch N           requests forwarded per turn, of one client or several of a tenant's
                          (default 16)
  --busy-poll-us N        after handling events, poll for more for up to N us before
                          sleeping (default 10; 0: sleep at once): under load this spares
                          the clients' and the backend's threads the cost of waking the proxy
  --deny LIST             commands refused, comma-separated ("FLUSHALL,SCRIPT FLUSH");
                          replaces the default deny list (docs/DEMO.md); "" denies nothing
  --help
Tenants: a client is tenant "default" until it sends CLIENT SETNAME <tenant> or
AUTH <tenant> <password>.
)";

struct options {
    std::optional<tcp::endpoint> backend;
    unsigned long listen = 6380;
    bool load = false;
    unsigned long seconds = 5;
    unsigned long greedy = 32;
    unsigned long light = 3;
    unsigned long greedy_hold_ms = 0;
    std::optional<unsigned long> tenant_cap;
    std::string policy = "round_robin";
    std::optional<unsigned long> max_slots;
    unsigned long latency_us = 200;
    unsigned long request_timeout_ms = 1000;
    unsigned long max_clients = 256;
    std::optional<unsigned long> metrics_port;
    unsigned long check_after_idle_ms = 0;
    unsigned long keepalive_ms = 0;
    bool reset_on_release = false;
    std::optional<std::string> record_dir = "fairpool-recording";
    unsigned long segment_events = 100'000;
    unsigned long keep_segments = 8;
    std::string dump_dir = "fairpool-dump";
    std::map<std::string, std::string, std::less<>> tenant_passwords;
    unsigned long max_batch = 16;
    unsigned long busy_poll_us = 10;
    std::optional<fairpool::demo::deny_list> denied;
};

// "tenant password" lines; nullopt (after a message) if the file cannot be read or a
// line is not a pair.
std::optional<std::map<std::string, std::string, std::less<>>> read_passwords(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "fairpool-demo: cannot read --tenant-passwords %s\n", path.c_str());
        return std::nullopt;
    }
    std::map<std::string, std::string, std::less<>> out;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        std::istringstream words(line);
        std::string tenant, password, extra;
        if (!(words >> tenant) || tenant.front() == '#') continue;
        if (!(words >> password) || (words >> extra)) {
            std::fprintf(stderr, "fairpool-demo: %s:%d: expected \"tenant password\"\n", path.c_str(), number);
            return std::nullopt;
        }
        out[tenant] = password;
    }
    return out;
}

fairpool::demo::deny_list parse_deny_list(std::string_view list) {
    fairpool::demo::deny_list out;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view item = list.substr(0, comma);
        if (!item.empty()) out.insert(fairpool::demo::resp::upper(item));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return out;
}

std::optional<options> parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const auto value = [&]() -> std::string_view { return i + 1 < argc ? argv[++i] : ""; };
        const auto num = [&](unsigned long& out, unsigned long max) {
            if (parse_number(value(), out, max)) return true;
            std::fprintf(stderr, "fairpool-demo: %s needs a number up to %lu\n", argv[i - 1], max);
            return false;
        };
        unsigned long n = 0;
        if (a == "--help") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else if (a == "--backend") {
            o.backend = parse_endpoint(value());
            if (!o.backend) {
                std::fprintf(stderr, "fairpool-demo: --backend needs HOST:PORT (an IP address or localhost)\n");
                return std::nullopt;
            }
        } else if (a == "--listen") {
            if (!num(o.listen, 65535)) return std::nullopt;
        } else if (a == "--load") {
            o.load = true;
        } else if (a == "--seconds") {
            if (!num(o.seconds, 3600)) return std::nullopt;
        } else if (a == "--greedy") {
            if (!num(o.greedy, 200)) return std::nullopt;
        } else if (a == "--light") {
            if (!num(o.light, 50)) return std::nullopt;
        } else if (a == "--greedy-hold-ms") {
            if (!num(o.greedy_hold_ms, 600'000)) return std::nullopt;
        } else if (a == "--tenant-cap") {
            if (!parse_number(value(), n, 1024) || n == 0) {
                std::fprintf(stderr, "fairpool-demo: --tenant-cap needs a number from 1 to 1024\n");
                return std::nullopt;
            }
            o.tenant_cap = n;
        } else if (a == "--policy") {
            o.policy = value();
            if (o.policy != "round_robin" && o.policy != "fifo") {
                std::fprintf(stderr, "fairpool-demo: --policy is round_robin or fifo\n");
                return std::nullopt;
            }
        } else if (a == "--max-slots") {
            if (!num(n, 1024) || n == 0) return std::nullopt;
            o.max_slots = n;
        } else if (a == "--latency-us") {
            if (!num(o.latency_us, 1'000'000)) return std::nullopt;
        } else if (a == "--request-timeout-ms") {
            if (!num(o.request_timeout_ms, 600'000) || o.request_timeout_ms == 0) return std::nullopt;
        } else if (a == "--max-clients") {
            if (!num(o.max_clients, 4096) || o.max_clients == 0) return std::nullopt;
        } else if (a == "--metrics-port") {
            if (!num(n, 65535)) return std::nullopt;
            o.metrics_port = n;
        } else if (a == "--check-after-idle-ms") {
            if (!num(o.check_after_idle_ms, 3'600'000)) return std::nullopt;
        } else if (a == "--keepalive-ms") {
            if (!num(o.keepalive_ms, 3'600'000)) return std::nullopt;
        } else if (a == "--reset-on-release") {
            o.reset_on_release = true;
        } else if (a == "--record-dir" || a == "--dump-dir") {
            const std::string_view dir = value();
            if (dir.empty()) {
                std::fprintf(stderr, "fairpool-demo: %s needs a directory\n", argv[i - 1]);
                return std::nullopt;
            }
            (a == "--record-dir" ? o.record_dir : o.dump_dir) = std::string(dir);
        } else if (a == "--tenant-passwords") {
            auto passwords = read_passwords(std::string(value()));
            if (!passwords) return std::nullopt;
            o.tenant_passwords = std::move(*passwords);
        } else if (a == "--max-batch") {
            if (!num(o.max_batch, 4096) || o.max_batch == 0) return std::nullopt;
        } else if (a == "--busy-poll-us") {
            if (!num(o.busy_poll_us, 1'000'000)) return std::nullopt;
        } else if (a == "--deny") {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "fairpool-demo: --deny needs a list (\"\" for none)\n");
                return std::nullopt;
            }
            o.denied = parse_deny_list(value());
        } else if (a == "--no-record") {
            o.record_dir.reset();
        } else if (a == "--segment-events") {
            if (!num(o.segment_events, 1'000'000'000) || o.segment_events == 0) return std::nullopt;
        } else if (a == "--keep-segments") {
            if (!num(o.keep_segments, 100'000) || o.keep_segments == 0) return std::nullopt;
        } else {
            std::fprintf(stderr, "fairpool-demo: unknown option %s\n%s", argv[i], usage);
            return std::nullopt;
        }
    }
    if (o.greedy_hold_ms >= o.request_timeout_ms) {
        std::fprintf(stderr, "fairpool-demo: --greedy-hold-ms must be below --request-timeout-ms (%lu)\n",
                     o.request_timeout_ms);
        return std::nullopt;
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const auto parsed = parse(argc, argv);
    if (!parsed) return 2;
    const options& o = *parsed;

    std::unique_ptr<embedded_backend> embedded;
    proxy_options po;
    if (o.backend) {
        po.backend = *o.backend;
    } else {
        embedded_backend_options eo;
        eo.latency = std::chrono::microseconds(o.latency_us);
        embedded = std::make_unique<embedded_backend>(eo);
        po.backend = embedded->endpoint();
    }
    po.listen = tcp::endpoint(asio::ip::address_v4::loopback(), o.load ? 0 : static_cast<std::uint16_t>(o.listen));
    po.pool.max_slots = o.max_slots.value_or(o.load ? 4 : 8);
    po.pool.min_slots = std::min<std::size_t>(2, po.pool.max_slots);
    po.pool.policy = o.policy == "fifo" ? fairpool::fairness_policy::fifo : fairpool::fairness_policy::round_robin;
    // 0 on the command line: off.
    const auto ms_or_off = [](unsigned long ms) {
        return ms == 0 ? fairpool::forever : std::chrono::nanoseconds(std::chrono::milliseconds(ms));
    };
    po.pool.check_after_idle = ms_or_off(o.check_after_idle_ms);
    po.pool.keepalive_interval = ms_or_off(o.keepalive_ms);
    po.pool.reset_on_release = o.reset_on_release;
    po.pool.max_leases_per_handle = o.tenant_cap.value_or(0);
    po.tenant_passwords = o.tenant_passwords;
    po.max_batch_commands = o.max_batch;
    if (o.denied) po.denied = *o.denied;
    if (o.record_dir) {
        fairpool::recorder_options ro;
        ro.directory = *o.record_dir;
        ro.segment_events = o.segment_events;
        ro.keep_segments = static_cast<std::uint32_t>(o.keep_segments);
        po.pool.recording = ro;
    }
    po.request_timeout = std::chrono::milliseconds(o.request_timeout_ms);
    po.max_clients = o.max_clients;

    asio::io_context io;
    std::unique_ptr<proxy_server> proxy;
    try {
        proxy = std::make_unique<proxy_server>(io.get_executor(), po);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fairpool-demo: %s\n", e.what());
        return 1;
    }
    std::printf("fairpool-demo: proxy on %s:%u, backend %s %s:%u, %llu backend connections at most, policy %s\n",
                proxy->local_endpoint().address().to_string().c_str(), proxy->local_endpoint().port(),
                embedded ? "embedded" : "redis", po.backend.address().to_string().c_str(), po.backend.port(),
                static_cast<unsigned long long>(po.pool.max_slots), o.policy.c_str());
    if (o.tenant_cap) std::printf("fairpool-demo: a tenant holds at most %lu backend connections (--tenant-cap)\n", *o.tenant_cap);
    if (o.check_after_idle_ms > 0 || o.keepalive_ms > 0 || o.reset_on_release)
        std::printf("fairpool-demo: backend health: check (PING) after %lu ms idle, keepalive every %lu ms, reset "
                    "(RESET) on release %s (0: off)\n",
                    o.check_after_idle_ms, o.keepalive_ms, o.reset_on_release ? "on" : "off");

    if (o.record_dir)
        std::printf("fairpool-demo: recording into %s/ (segments of %lu events, %lu kept); SIGUSR1 copies them to "
                    "%s/\n",
                    o.record_dir->c_str(), o.segment_events, o.keep_segments, o.dump_dir.c_str());

    // SIGUSR1: the engineer's "dump the recording now".
    asio::signal_set dump_signal(io, SIGUSR1);
    std::function<void()> await_dump = [&] {
        dump_signal.async_wait([&](boost::system::error_code ec, int) {
            if (ec) return;
            const auto result = proxy->dump_recording(o.dump_dir);
            if (result) std::fprintf(stderr, "fairpool-demo: dump failed: %s\n", result.message().c_str());
            else std::printf("fairpool-demo: recording dumped to %s/\n", o.dump_dir.c_str());
            std::fflush(stdout);
            await_dump();
        });
    };
    if (o.record_dir) await_dump();

    std::optional<tcp::acceptor> metrics;
    if (o.metrics_port) {
        metrics.emplace(io, tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<std::uint16_t>(*o.metrics_port)));
        std::printf("fairpool-demo: metrics on http://127.0.0.1:%u/metrics\n", metrics->local_endpoint().port());
        asio::co_spawn(io, serve_metrics(*metrics, [&] { return proxy->metrics_text(); }), asio::detached);
    }

    int status = 0;
    const auto shut_down = [&]() -> asio::awaitable<void> {
        if (metrics) metrics->close();
        const auto report = co_await proxy->close(std::chrono::milliseconds(2000));
        dump_signal.cancel();
        const auto t = proxy->totals();
        std::printf("fairpool-demo: shut down gracefully: pool %s; %llu requests, %llu cut off mid-flight (released dirty)\n",
                    report.closed ? "closed, every backend connection closed" : "NOT closed",
                    static_cast<unsigned long long>(t.requests),
                    static_cast<unsigned long long>(t.cut_by_timeout + t.cut_by_disconnect + t.backend_failures));
        if (!report.closed) status = 1;
        if (const auto r = proxy->recording_status(); r) {
            std::printf("fairpool-demo: recording: %llu segments started in %s/, %llu events lost in %llu gaps; "
                        "replay: fairpool-replay --check --stats %s\n",
                        static_cast<unsigned long long>(r->segments_started), o.record_dir->c_str(),
                        static_cast<unsigned long long>(r->events_lost), static_cast<unsigned long long>(r->gaps),
                        o.record_dir->c_str());
        }
    };

    asio::signal_set signals(io, SIGINT, SIGTERM);
    if (o.load) {
        std::printf("load: tenant greedy with %lu connections, %lu light tenants with 1 each, %lu s, embedded latency %lu us\n",
                    o.greedy, o.light, o.seconds, o.backend ? 0UL : o.latency_us);
        if (o.greedy_hold_ms > 0)
            std::printf("load: each greedy request holds its backend connection %lu ms (BLPOP)\n", o.greedy_hold_ms);
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            load_options lo;
            lo.duration = std::chrono::seconds(o.seconds);
            lo.greedy_connections = static_cast<int>(o.greedy);
            lo.light_tenants = static_cast<int>(o.light);
            lo.greedy_hold = std::chrono::milliseconds(o.greedy_hold_ms);
            lo.live = isatty(fileno(stdout)) != 0;
            const auto reports = co_await run_load(*proxy, lo);
            print_reports(stdout, reports);
            for (const auto& r : reports)
                if (r.counter >= 0 && static_cast<std::uint64_t>(r.counter) != r.ok) status = 1;
            print_pool_stats(stdout, proxy->pool_stats(), proxy->slot_capacity());
            signals.cancel();
            co_await shut_down();
        }, asio::detached);
    } else {
        std::printf("fairpool-demo: serving; try: redis-cli -p %u CLIENT SETNAME alice; Ctrl-C stops\n",
                    proxy->local_endpoint().port());
        signals.async_wait([&](boost::system::error_code ec, int) {
            if (!ec) asio::co_spawn(io, shut_down(), asio::detached);
        });
    }
    std::fflush(stdout);
    run_with_busy_poll(io, std::chrono::microseconds(o.busy_poll_us));
    return status;
}
