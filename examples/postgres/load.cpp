#include "load.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

namespace pg {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

std::vector<tenant_load> parse_tenants(const std::string& spec) {
    std::vector<tenant_load> out;
    std::size_t at = 0;
    while (at <= spec.size()) {
        const std::size_t comma = std::min(spec.find(',', at), spec.size());
        const std::string item = spec.substr(at, comma - at);
        const std::size_t colon = item.find(':');
        tenant_load t{item.substr(0, colon), 1};
        if (colon != std::string::npos) {
            const char* first = item.data() + colon + 1;
            const char* last = item.data() + item.size();
            const auto [end, err] = std::from_chars(first, last, t.clients);
            if (err != std::errc{} || end != last || t.clients == 0 || t.clients > 1000)
                throw std::invalid_argument("tenants: bad client count in '" + item + "'");
        }
        if (t.name.empty()) throw std::invalid_argument("tenants: empty tenant name in '" + spec + "'");
        out.push_back(std::move(t));
        at = comma + 1;
    }
    return out;
}

namespace {

asio::awaitable<void> client(tcp::endpoint service, const std::string& tenant, clock_type::time_point until,
                             int items, unsigned seed, tenant_result& out) {
    std::minstd_rand random(seed);
    std::uniform_int_distribution<int> ids(1, items);
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    bool connected = false;
    beast::flat_buffer buffer;
    while (clock_type::now() < until) {
        const auto start = clock_type::now();
        bool ok = false;
        if (!connected) {
            auto [ec] = co_await stream.async_connect(service, asio::as_tuple(asio::use_awaitable));
            connected = !ec;
        }
        if (connected) {
            http::request<http::string_body> request(http::verb::get, "/items/" + std::to_string(ids(random)), 11);
            request.set(http::field::host, "127.0.0.1");
            request.set("X-Tenant", tenant);
            stream.expires_after(std::chrono::seconds(10));
            auto [wec, w] = co_await http::async_write(stream, request, asio::as_tuple(asio::use_awaitable));
            http::response<http::string_body> reply;
            boost::system::error_code rec = wec;
            if (!wec) {  // (not a co_await inside ?: — g++ 12 miscompiles that)
                auto [ec, r] = co_await http::async_read(stream, buffer, reply, asio::as_tuple(asio::use_awaitable));
                rec = ec;
            }
            if (wec || rec) {
                boost::system::error_code ignored;
                stream.socket().close(ignored);
                connected = false;
            }
            ok = !wec && !rec && reply.result() == http::status::ok;
        }
        if (ok) {
            ++out.requests;
            out.latencies_us.push_back(static_cast<std::uint32_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count()));
        } else {
            ++out.failed;
        }
    }
}

double percentile(std::vector<std::uint32_t>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

}  // namespace

asio::awaitable<std::vector<tenant_result>> run_load(tcp::endpoint service, std::vector<tenant_load> tenants,
                                                     std::chrono::milliseconds duration, int items) {
    auto ex = co_await asio::this_coro::executor;
    std::vector<tenant_result> results(tenants.size());
    const auto until = clock_type::now() + duration;
    auto running = std::make_shared<std::size_t>(0);
    asio::steady_timer all_done(ex, clock_type::time_point::max());
    unsigned seed = 1;
    for (std::size_t t = 0; t < tenants.size(); ++t) {
        results[t].name = tenants[t].name;
        results[t].clients = tenants[t].clients;
        for (unsigned c = 0; c < tenants[t].clients; ++c) {
            ++*running;
            asio::co_spawn(ex, client(service, tenants[t].name, until, items, seed++, results[t]),
                           [running, &all_done](std::exception_ptr) {
                               if (--*running == 0) all_done.cancel();
                           });
        }
    }
    (void)co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return results;
}

std::string load_table(std::vector<tenant_result> results, std::chrono::milliseconds duration) {
    std::uint64_t total = 0;
    for (const auto& r : results) total += r.requests;
    std::string out = "| tenant | clients | requests | failed | requests/s | p50 | p99 | share |\n"
                      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    const double seconds = std::chrono::duration<double>(duration).count();
    for (auto& r : results) {
        char line[256];
        std::snprintf(line, sizeof line, "| %s | %u | %llu | %llu | %.0f | %.1f ms | %.1f ms | %.1f%% |\n",
                      r.name.c_str(), r.clients, static_cast<unsigned long long>(r.requests),
                      static_cast<unsigned long long>(r.failed), static_cast<double>(r.requests) / seconds,
                      percentile(r.latencies_us, 0.5) / 1000, percentile(r.latencies_us, 0.99) / 1000,
                      total ? 100.0 * static_cast<double>(r.requests) / static_cast<double>(total) : 0.0);
        out += line;
    }
    return out;
}

}  // namespace pg
