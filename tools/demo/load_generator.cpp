#include "load_generator.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <memory>

#include "resp.hpp"

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// Latency samples kept per tenant; past this, further samples are dropped (bounded).
constexpr std::size_t max_samples = 2'000'000;

struct tenant_state {
    std::string name;
    int connections = 0;
    std::string request;                               // sent again and again
    resp::type success = resp::type::integer;          // the reply type that counts as ok
    std::uint64_t ok = 0, errors = 0;
    std::vector<std::uint32_t> latencies_us;
};

// INCR of the tenant's counter, or (hold > 0) a BLPOP that holds the backend connection
// for `hold`: on a key nobody writes, it waits out its timeout and replies the null array.
std::unique_ptr<tenant_state> make_tenant(std::string name, int connections, std::chrono::milliseconds hold) {
    auto t = std::make_unique<tenant_state>();
    t->name = std::move(name);
    t->connections = connections;
    if (hold.count() > 0) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(hold.count()) / 1000.0);
        t->request = resp::command({"BLPOP", "fairpool-demo:hold:" + t->name, seconds});
        t->success = resp::type::null;
    } else {
        t->request = resp::command({"INCR", "fairpool-demo:" + t->name});
    }
    return t;
}

// A minimal RESP client: one request, one reply.
class client {
public:
    explicit client(tcp::socket s) : socket_(std::move(s)) {}

    asio::awaitable<std::optional<resp::value>> call(const std::string& request) {
        auto [wec, wn] = co_await asio::async_write(socket_, asio::buffer(request), use_tuple);
        if (wec) co_return std::nullopt;
        std::array<char, 4096> chunk;
        for (;;) {
            auto parsed = resp::parse(buffer_);
            if (parsed.status == resp::parse_status::complete) {
                buffer_.erase(0, parsed.length);
                co_return std::move(parsed.frame);
            }
            if (parsed.status != resp::parse_status::incomplete) co_return std::nullopt;
            auto [ec, n] = co_await socket_.async_read_some(asio::buffer(chunk), use_tuple);
            if (ec) co_return std::nullopt;
            buffer_.append(chunk.data(), n);
        }
    }

private:
    tcp::socket socket_;
    std::string buffer_;
};

asio::awaitable<std::optional<client>> open_client(tcp::endpoint proxy, const std::string& tenant) {
    tcp::socket socket(co_await asio::this_coro::executor);
    auto [ec] = co_await socket.async_connect(proxy, use_tuple);
    if (ec) co_return std::nullopt;
    socket.set_option(tcp::no_delay(true));
    client c(std::move(socket));
    const std::string setname = resp::command({"CLIENT", "SETNAME", tenant});  // not inside co_await: g++ 12
    const auto ok = co_await c.call(setname);
    if (!ok || ok->type != resp::type::simple_string) co_return std::nullopt;
    co_return std::optional<client>(std::move(c));
}

asio::awaitable<void> drive(tcp::endpoint proxy, tenant_state& t, clock_type::time_point until, int& running) {
    if (auto c = co_await open_client(proxy, t.name)) {
        while (clock_type::now() < until) {
            const auto start = clock_type::now();
            const auto reply = co_await c->call(t.request);
            if (!reply) break;
            if (reply->type != t.success) {
                ++t.errors;
                continue;
            }
            ++t.ok;
            if (t.latencies_us.size() < max_samples)
                t.latencies_us.push_back(static_cast<std::uint32_t>(
                    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count()));
        }
        const std::string quit = resp::command({"QUIT"});
        (void)co_await c->call(quit);
    }
    --running;
}

double percentile(std::vector<std::uint32_t>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

void print_status(const load_options& o, const proxy_server& proxy, const std::vector<std::unique_ptr<tenant_state>>& ts,
                  double elapsed, double rate) {
    const auto s = proxy.pool_stats();
    std::uint64_t total = 0;
    for (const auto& t : ts) total += t->ok;
    std::fprintf(o.out, "%s%5.1fs %8.0f req/s  queued %4llu  slots idle %llu leased %llu spawning %llu retiring %llu  share",
                 o.live ? "\r" : "", elapsed, rate, static_cast<unsigned long long>(s.queued_waiters),
                 static_cast<unsigned long long>(s.slots_idle), static_cast<unsigned long long>(s.slots_leased),
                 static_cast<unsigned long long>(s.slots_spawning), static_cast<unsigned long long>(s.slots_retiring));
    for (const auto& t : ts)
        std::fprintf(o.out, " %s %2.0f%%", t->name.c_str(),
                     total ? 100.0 * static_cast<double>(t->ok) / static_cast<double>(total) : 0.0);
    std::fprintf(o.out, o.live ? "  " : "\n");
    std::fflush(o.out);
}

}  // namespace

asio::awaitable<std::vector<tenant_report>> run_load(proxy_server& proxy, load_options o) {
    const auto ex = co_await asio::this_coro::executor;
    std::vector<std::unique_ptr<tenant_state>> tenants;
    tenants.push_back(make_tenant("greedy", o.greedy_connections, o.greedy_hold));
    for (int i = 1; i <= o.light_tenants; ++i)
        tenants.push_back(make_tenant("light-" + std::to_string(i), o.light_connections, std::chrono::milliseconds(0)));

    // One idle client per tenant, connected until the end, keeps each tenant (and its
    // handle's statistics) there after the load's clients have gone.
    std::vector<std::optional<client>> keepers;
    for (const auto& t : tenants) keepers.push_back(co_await open_client(proxy.local_endpoint(), t->name));

    const auto start = clock_type::now();
    const auto until = start + o.duration;
    int running = 0;
    for (auto& t : tenants)
        for (int c = 0; c < t->connections; ++c) {
            ++running;
            asio::co_spawn(ex, drive(proxy.local_endpoint(), *t, until, running), asio::detached);
        }

    asio::steady_timer tick(ex);
    std::uint64_t last_total = 0;
    auto last = start;
    auto last_printed = start;
    while (running > 0) {
        tick.expires_after(o.status_every);
        (void)co_await tick.async_wait(use_tuple);
        const auto now = clock_type::now();
        std::uint64_t total = 0;
        for (const auto& t : tenants) total += t->ok;
        const double rate = static_cast<double>(total - last_total) / std::chrono::duration<double>(now - last).count();
        last_total = total, last = now;
        if (o.live || now - last_printed >= std::chrono::seconds(1) || running == 0) {
            print_status(o, proxy, tenants, std::chrono::duration<double>(now - start).count(), rate);
            last_printed = now;
        }
    }
    if (o.live) std::fprintf(o.out, "\n");

    // Read every counter back: it must equal the successes the tenant saw.
    std::vector<tenant_report> reports;
    std::uint64_t total = 0, all_turns = 0;
    for (const auto& t : tenants) total += t->ok;
    std::vector<std::uint64_t> turns;
    for (const auto& t : tenants) {
        const auto st = proxy.tenant_stats(t->name);
        turns.push_back(st ? st->grants : 0);
        all_turns += turns.back();
    }
    auto reader = co_await open_client(proxy.local_endpoint(), "load-check");
    for (auto& t : tenants) {
        tenant_report r{t->name, t->connections, t->ok, t->errors, percentile(t->latencies_us, 0.5),
                        percentile(t->latencies_us, 0.99),
                        total ? static_cast<double>(t->ok) / static_cast<double>(total) : 0.0, -1,
                        t->success == resp::type::integer};
        if (reader && r.counted) {
            const std::string get = resp::command({"GET", "fairpool-demo:" + t->name});
            const std::string del = resp::command({"DEL", "fairpool-demo:" + t->name});
            const auto v = co_await reader->call(get);
            if (v && v->type == resp::type::bulk_string) r.counter = std::stoll(v->text);
            (void)co_await reader->call(del);
        }
        r.turns = turns[reports.size()];
        r.turn_share = all_turns ? static_cast<double>(r.turns) / static_cast<double>(all_turns) : 0.0;
        reports.push_back(std::move(r));
    }
    const std::string quit = resp::command({"QUIT"});
    if (reader) (void)co_await reader->call(quit);
    for (auto& k : keepers)
        if (k) (void)co_await k->call(quit);
    co_return reports;
}

void print_reports(std::FILE* out, const std::vector<tenant_report>& reports) {
    std::fprintf(out, "\n| tenant | connections | requests ok | errors | p50 latency | p99 latency | share of requests | share of turns | counter check |\n");
    std::fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (const auto& r : reports)
        std::fprintf(out, "| %s | %d | %llu | %llu | %.0f us | %.0f us | %.1f%% | %.1f%% | %s |\n", r.name.c_str(),
                     r.connections, static_cast<unsigned long long>(r.ok), static_cast<unsigned long long>(r.errors),
                     r.p50_us, r.p99_us, 100.0 * r.share, 100.0 * r.turn_share,
                     !r.counted      ? "-"
                     : r.counter < 0 ? "unread"
                     : static_cast<std::uint64_t>(r.counter) == r.ok ? "ok"
                                                                      : "MISMATCH");
}

void print_pool_stats(std::FILE* out, const fairpool::pool_stats& s, std::size_t slot_capacity) {
    const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(out, "\npool: acquires %llu, grants %llu immediate + %llu after waiting; rejections:", u(s.acquires),
                 u(s.grants_immediate), u(s.grants_after_wait));
    std::fprintf(out, " saturated %llu timeout %llu cancelled %llu deregistered %llu closed %llu",
                 u(s.rejected_saturated), u(s.rejected_timeout), u(s.rejected_cancelled), u(s.rejected_deregistered),
                 u(s.rejected_closed));
    std::fprintf(out, "\n      spawns %llu, spawn failures %llu; retirements:", u(s.spawns), u(s.spawn_failures));
    std::fprintf(out, " dirty %llu max_uses %llu max_lifetime %llu idle %llu died %llu shutdown %llu reset_failed %llu resize %llu",
                 u(s.retired_dirty), u(s.retired_max_uses), u(s.retired_max_lifetime), u(s.retired_idle),
                 u(s.retired_died), u(s.retired_shutdown), u(s.retired_reset_failed), u(s.retired_resize));
    std::fprintf(out, "\n      checks %llu: %llu alive, %llu dead; resets %llu, %llu failed", u(s.checks_started),
                 u(s.checks_passed), u(s.checks_failed), u(s.resets_started), u(s.resets_failed));
    std::fprintf(out, "\n      slots: empty %llu spawning %llu idle %llu leased %llu retiring %llu checking %llu resetting %llu",
                 u(slot_capacity - s.held), u(s.slots_spawning), u(s.slots_idle), u(s.slots_leased),
                 u(s.slots_retiring), u(s.slots_checking), u(s.slots_resetting));
    std::fprintf(out, "; queued waiters %llu\n", u(s.queued_waiters));
}

}  // namespace fairpool::demo
