// The demo's --tenant-cap (the pool's max_leases_per_handle) against a real
// redis-server. A greedy tenant whose requests hold a backend connection 20 ms (BLPOP
// with a 20 ms timeout on a key nobody writes), on 8 connections, beside three light
// tenants sending INCR on one connection each, over 4 backend connections. With a cap
// of 2 the greedy tenant never holds more than 2 at once (read while it is still
// connected, from the demo's /metrics: fairpool_handle_leases_out_max of the tenant's
// handle), and each light tenant gets all of its requests answered, in order. The
// light tenants' p99 latency with and without the cap is printed, never asserted: timing
// belongs to bench/run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "metrics_http.hpp"

namespace fairpool::demo::testing {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int greedy_connections = 8, light_tenants = 3, light_requests = 200;
constexpr std::uint64_t max_slots = 4, cap = 2;

struct outcome {
    std::uint64_t greedy_leases_out_max = 0;
    int greedy_requests = 0;
    std::vector<std::int64_t> light_latencies_us;  // every light request's
};

class tenant_cap : public ::testing::Test {
protected:
    void SetUp() override {
        // hz 100: an otherwise idle Redis times BLPOP out to within 10 ms, not 100.
        start_redis_server(redis_, {"--hz", "100"});
    }

    // The load, with max_leases_per_handle = `tenant_cap` (0: none).
    outcome run(std::uint64_t tenant_cap) {
        auto options = test_options(redis_->endpoint());
        options.pool.max_slots = max_slots;
        options.pool.min_slots = max_slots;
        options.pool.max_leases_per_handle = tenant_cap;
        options.request_timeout = 5s;
        proxy_harness proxy(options);
        outcome out;
        std::atomic<bool> stop{false};
        std::atomic<int> greedy_done{0};
        std::vector<std::thread> greedy;
        for (int c = 0; c < greedy_connections; ++c)
            greedy.emplace_back([&] {
                client cl(proxy.port());
                ASSERT_EQ(cl.call({"CLIENT", "SETNAME", "greedy"}).text, "OK");
                while (!stop) {
                    const auto r = cl.call({"BLPOP", "cap:hold", "0.020"});
                    EXPECT_EQ(r.type, resp::type::null) << r.text;
                    ++greedy_done;
                }
            });
        // The greedy tenant is under way, every connection of it waiting or holding.
        EXPECT_TRUE(eventually([&] { return greedy_done >= 2 * greedy_connections; }, 20s));

        std::vector<std::vector<std::int64_t>> latencies(light_tenants);
        std::vector<std::thread> light;
        for (int l = 0; l < light_tenants; ++l)
            light.emplace_back([&, l] {
                client cl(proxy.port());
                const std::string name = "light-" + std::to_string(l + 1);
                ASSERT_EQ(cl.call({"CLIENT", "SETNAME", name}).text, "OK");
                for (int i = 1; i <= light_requests; ++i) {
                    const auto start = clock_type::now();
                    const auto r = cl.call({"INCR", "cap:" + name});
                    latencies[static_cast<std::size_t>(l)].push_back(
                        std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count());
                    ASSERT_EQ(r.type, resp::type::integer) << name << " request " << i << ": " << r.text;
                    ASSERT_EQ(r.integer, i) << name << ": an increment was lost or applied twice";
                }
            });
        for (auto& t : light) t.join();
        // Scraped while every greedy connection is still open (its handle still there).
        out.greedy_leases_out_max = greedy_leases_out_max(proxy);
        stop = true;
        for (auto& t : greedy) t.join();
        out.greedy_requests = greedy_done.load();

        client admin(redis_->port());
        for (int l = 1; l <= light_tenants; ++l) {
            const std::string key = "cap:light-" + std::to_string(l);
            EXPECT_EQ(admin.call({"GET", key}).text, std::to_string(light_requests)) << key;
            (void)admin.call({"DEL", key});
            out.light_latencies_us.insert(out.light_latencies_us.end(), latencies[static_cast<std::size_t>(l - 1)].begin(),
                                          latencies[static_cast<std::size_t>(l - 1)].end());
        }
        return out;
    }

    // The demo's /metrics, served on the proxy's thread as fairpool-demo serves it.
    static std::uint64_t greedy_leases_out_max(proxy_harness& proxy) {
        boost::asio::ip::tcp::acceptor acceptor(proxy.executor(), {boost::asio::ip::address_v4::loopback(), 0});
        boost::asio::co_spawn(proxy.executor(),
                              serve_metrics(acceptor, [&proxy] { return proxy.proxy().metrics_text(); }),
                              boost::asio::detached);
        const auto page = http_exchange(acceptor.local_endpoint().port(), "GET /metrics HTTP/1.1\r\n\r\n");
        proxy.on_proxy_thread([&acceptor] { acceptor.close(); });
        const auto max =
            prometheus_sample(page.body(), "fairpool_handle_leases_out_max{pool=\"demo\",tenant=\"greedy\"}");
        EXPECT_TRUE(max) << "no leases_out_max of tenant greedy in:\n" << page.body();
        return max.value_or(0);
    }

    std::unique_ptr<redis_process> redis_;
};

std::int64_t percentile(std::vector<std::int64_t> v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

TEST_F(tenant_cap, a_greedy_tenant_with_long_holds_never_holds_more_than_its_cap_and_light_tenants_are_served) {
    const outcome without = run(0);
    if (HasFatalFailure()) return;
    const outcome with = run(cap);
    if (HasFatalFailure()) return;

    EXPECT_LE(with.greedy_leases_out_max, cap) << "the greedy tenant held more backend connections than its cap";
    EXPECT_GE(with.greedy_leases_out_max, 1u);
    EXPECT_EQ(with.light_latencies_us.size(), static_cast<std::size_t>(light_tenants * light_requests));
    EXPECT_EQ(without.light_latencies_us.size(), static_cast<std::size_t>(light_tenants * light_requests));

    // Measured, not asserted.
    std::printf("greedy tenant (8 connections, 20 ms holds) over %llu backend connections:\n"
                "  no cap: held at most %llu at once, %d requests; light tenants' p50 %lld us, p99 %lld us\n"
                "  cap %llu: held at most %llu at once, %d requests; light tenants' p50 %lld us, p99 %lld us\n",
                static_cast<unsigned long long>(max_slots), static_cast<unsigned long long>(without.greedy_leases_out_max),
                without.greedy_requests, static_cast<long long>(percentile(without.light_latencies_us, 0.5)),
                static_cast<long long>(percentile(without.light_latencies_us, 0.99)), static_cast<unsigned long long>(cap),
                static_cast<unsigned long long>(with.greedy_leases_out_max), with.greedy_requests,
                static_cast<long long>(percentile(with.light_latencies_us, 0.5)),
                static_cast<long long>(percentile(with.light_latencies_us, 0.99)));
}

}  // namespace
}  // namespace fairpool::demo::testing
