// fleet_replica: one replica of a fleet for the fleet suite and bench/fleet. A
// fairpool of libpq connections (examples/postgres) whose size a budget client sets,
// and an uneven tenant load on it: `workers` coroutines over `tenants` handles (the
// first tenant runs half of them), each acquiring, running `SELECT pg_sleep(hold)` and
// releasing, again and again.
//
//   fleet_replica --conninfo C --app NAME --status FILE --budget-name N --budget B
//                 --redis-port P --member ID [--workers W] [--tenants K] [--hold-ms H]
//                 [--lease-ms L --grace-ms G --refresh-ms R] [--fallback F]
//                 [--static N] [--report-grant-as-held]
//
// --static N: no budget client, max_slots N (the static split, a negative control).
// --report-grant-as-held: tells the allocator it holds no more than its grant, so that a
// lowered grant frees capacity at once, as Doorman's does (a negative control).
// Reads commands on stdin: "workers N" changes the load; "quit" (or EOF, or SIGTERM)
// stops the load, closes the pool, leaves the budget and exits 0. Every 20 ms it
// rewrites FILE (via a rename) with one line: key=value pairs of its pool and client.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <fstream>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fairpool/budget/client.hpp"
#include "pooled.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct settings {
    std::map<std::string, std::string> v;
    bool has(const std::string& k) const { return v.count(k) != 0; }
    std::string text(const std::string& k, std::string d = "") const { return has(k) ? v.at(k) : d; }
    std::uint64_t number(const std::string& k, std::uint64_t d) const {
        return has(k) ? std::stoull(v.at(k)) : d;
    }
};

struct replica {
    settings s;
    asio::io_context io;
    pg::canceller cancels;
    std::optional<pg::pool> pool;
    std::vector<pg::handle> tenants;
    std::unique_ptr<fairpool::budget::budget_client> member;
    std::uint64_t workers_wanted = 0, workers_running = 0;
    std::uint64_t statements = 0, statement_failures = 0;
    bool quitting = false;

    asio::awaitable<void> worker(std::uint64_t index) {
        const auto hold = std::to_string(static_cast<double>(s.number("hold-ms", 20)) / 1000.0);
        // The first tenant runs half the workers, the others share the rest.
        const std::size_t tenant = index % 2 == 0 || tenants.size() == 1 ? 0 : 1 + (index / 2) % (tenants.size() - 1);
        while (!quitting && index < workers_wanted) {
            try {
                auto l = co_await tenants[tenant].async_acquire(2s, asio::use_awaitable);
                auto o = co_await pg::run(l, "SELECT pg_sleep(" + hold + ")", {}, 10s);
                ++(o ? statements : statement_failures);
            } catch (const std::exception&) {
                ++statement_failures;  // timeout (no grant yet) or the pool closing
                if (quitting) break;
            }
        }
        --workers_running;
    }

    void set_workers(std::uint64_t n) {
        const std::uint64_t before = workers_wanted;
        workers_wanted = n;
        for (std::uint64_t i = before; i < n; ++i) {
            ++workers_running;
            asio::co_spawn(io, worker(i), asio::detached);
        }
    }

    void write_status() {
        const auto p = pool->stats();
        std::string line = "spawns=" + std::to_string(p.spawns) + " spawn_failures=" + std::to_string(p.spawn_failures) +
                           " held=" + std::to_string(p.held) + " leased=" + std::to_string(p.slots_leased) +
                           " statements=" + std::to_string(statements);
        if (member) {
            const auto b = member->stats();
            line += " limit=" + std::to_string(b.limit) + " grant=" + std::to_string(b.grant) +
                    " state=" + std::string(fairpool::budget::to_string(b.state)) +
                    " refreshes=" + std::to_string(b.refreshes) + " failures=" +
                    std::to_string(b.refresh_failures + b.connect_failures) + " violations=" +
                    std::to_string(b.violations);
        }
        const std::string path = s.text("status"), tmp = path + ".tmp";
        {
            std::ofstream f(tmp, std::ios::trunc);
            f << line << '\n';
        }
        std::rename(tmp.c_str(), path.c_str());
    }

    asio::awaitable<void> status_loop() {
        asio::steady_timer t(io);
        while (!quitting) {
            write_status();
            t.expires_after(20ms);
            co_await t.async_wait(asio::use_awaitable);
        }
    }

    asio::awaitable<void> quit() {
        if (quitting) co_return;
        quitting = true;
        workers_wanted = 0;
        co_await pool->async_close(5s, asio::use_awaitable);
        write_status();
        if (member) {
            member->leave();
            asio::steady_timer t(io);
            for (int i = 0; i < 100 && member->stats().state != fairpool::budget::member_state::stopped; ++i) {
                t.expires_after(10ms);
                co_await t.async_wait(asio::use_awaitable);
            }
        }
        io.stop();
    }

    asio::awaitable<void> commands() {
        asio::posix::stream_descriptor in(io, ::dup(STDIN_FILENO));
        asio::streambuf buf;
        for (;;) {
            boost::system::error_code ec;
            co_await asio::async_read_until(in, buf, '\n', asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
            std::istream lines(&buf);
            std::string word;
            std::uint64_t n = 0;
            lines >> word;
            if (word == "workers" && lines >> n) set_workers(n);
            if (word == "quit") break;
            std::getline(lines, word);
        }
        co_await quit();
    }

    int run() {
        fairpool::pool_options o;
        const std::uint64_t budget = s.number("budget", 12);
        const bool budgeted = !s.has("static");
        o.max_slots = budgeted ? 1 : s.number("static", 4);
        o.slot_capacity = budgeted ? budget : o.max_slots;
        o.min_slots = 0;
        o.max_waiters = 4096;
        o.acquire_timeout = 5s;
        o.spawn_backoff_initial = 20ms;
        o.spawn_backoff_max = 200ms;
        o.create_timeout = 2s;
        o.retire_grace = 1s;
        auto params = pg::parse_conninfo(s.text("conninfo"));
        pool.emplace(io.get_executor(), o, pg::hooks(params, s.text("app"), cancels));
        const std::uint64_t k = std::max<std::uint64_t>(1, s.number("tenants", 3));
        for (std::uint64_t t = 0; t < k; ++t) tenants.push_back(pool->make_handle());
        if (budgeted) {
            fairpool::budget::budget_options b;
            b.name = s.text("budget-name", "fleet");
            b.budget = budget;
            b.member_id = s.text("member");
            b.redis = {asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(s.number("redis-port", 6379))};
            b.lease = std::chrono::milliseconds(s.number("lease-ms", 800));
            b.grace = std::chrono::milliseconds(s.number("grace-ms", 200));
            b.refresh_interval = std::chrono::milliseconds(s.number("refresh-ms", 200));
            b.min_refresh_gap = std::chrono::milliseconds(std::min<std::uint64_t>(50, s.number("refresh-ms", 200)));
            b.lease_margin = b.lease / 8;
            b.call_timeout = 150ms;
            b.connect_timeout = 150ms;
            b.reconnect_backoff_initial = 20ms;
            b.reconnect_backoff_max = 200ms;
            b.forget_after = std::chrono::milliseconds(s.number("forget-ms", 4000));
            b.fallback = s.number("fallback", 0);
            auto target = fairpool::budget::target_of(*pool);
            if (s.has("report-grant-as-held")) {
                // Doorman's rule: a lowered grant is free at once. The pool's surplus
                // leases are still out, but the allocator is told they are gone.
                target.sample = [inner = target.sample, this] {
                    auto m = inner();
                    m.held = std::min(m.held, member ? member->stats().limit : m.held);
                    return m;
                };
            }
            member = std::make_unique<fairpool::budget::budget_client>(io.get_executor(), b, std::move(target));
            member->start();
        }
        asio::signal_set signals(io, SIGTERM, SIGINT);
        signals.async_wait([this](auto, int) { asio::co_spawn(io, quit(), asio::detached); });
        asio::co_spawn(io, status_loop(), asio::detached);
        asio::co_spawn(io, commands(), asio::detached);
        set_workers(s.number("workers", 4));
        io.run();
        if (member) member->stop();
        write_status();
        return 0;
    }
};

}  // namespace

int main(int argc, char** argv) {
    replica r;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (!a.starts_with("--")) {
            std::fprintf(stderr, "fleet_replica: unexpected argument %s\n", argv[i]);
            return 2;
        }
        a = a.substr(2);
        if (a == "report-grant-as-held") {
            r.s.v[a] = "1";
        } else if (i + 1 < argc) {
            r.s.v[a] = argv[++i];
        } else {
            std::fprintf(stderr, "fleet_replica: --%s needs a value\n", a.c_str());
            return 2;
        }
    }
    if (!r.s.has("conninfo") || !r.s.has("app") || !r.s.has("status")) {
        std::fprintf(stderr, "usage: fleet_replica --conninfo C --app NAME --status FILE [...]\n");
        return 2;
    }
    try {
        return r.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fleet_replica: %s\n", e.what());
        return 1;
    }
}
