// The proxy's own answers and limits, and the RESP parser, against the embedded backend.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <string>

#include "embedded_backend.hpp"
#include "fairpool/asio/prometheus.hpp"
#include "fixture.hpp"
#include "load_generator.hpp"

namespace fairpool::demo::testing {
namespace {

TEST(resp, parses_a_command_and_refuses_what_is_over_the_limits) {
    const std::string cmd = resp::command({"SET", "k", "v"});
    EXPECT_EQ(cmd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    const auto whole = resp::parse(cmd);
    ASSERT_EQ(whole.status, resp::parse_status::complete);
    EXPECT_EQ(whole.length, cmd.size());
    EXPECT_EQ(resp::arguments(whole.frame), (std::vector<std::string>{"SET", "k", "v"}));
    EXPECT_EQ(resp::parse(cmd.substr(0, cmd.size() - 1)).status, resp::parse_status::incomplete);
    EXPECT_EQ(resp::parse("$2\r\nabcd\r\n").status, resp::parse_status::malformed);
    EXPECT_EQ(resp::parse("?x\r\n").status, resp::parse_status::malformed);
    EXPECT_EQ(resp::parse("$100000\r\n", {1024, 16, 2}).status, resp::parse_status::too_large);
    EXPECT_EQ(resp::parse("*17\r\n", {1024, 16, 2}).status, resp::parse_status::too_large);
    EXPECT_EQ(resp::parse("*1\r\n*1\r\n*1\r\n:1\r\n", {1024, 16, 2}).status, resp::parse_status::too_large);
    EXPECT_EQ(resp::parse(std::string(2000, 'x'), {1024, 16, 2}).status, resp::parse_status::too_large);
    const auto n = resp::parse(":-42\r\n");
    EXPECT_EQ(n.frame.type, resp::type::integer);
    EXPECT_EQ(n.frame.integer, -42);
    EXPECT_EQ(resp::parse("$-1\r\n").frame.type, resp::type::null);
}

TEST(embedded, proxy_relays_the_supported_commands) {
    embedded_backend backend;
    proxy_harness proxy(test_options(backend.endpoint()));
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"PING"}).text, "PONG");
    EXPECT_EQ(cl.call({"CLIENT", "SETNAME", "alice"}).text, "OK");
    EXPECT_EQ(cl.call({"SET", "k", "v"}).text, "OK");
    EXPECT_EQ(cl.call({"GET", "k"}).text, "v");
    EXPECT_EQ(cl.call({"INCR", "n"}).integer, 1);
    EXPECT_EQ(cl.call({"INCR", "n"}).integer, 2);
    EXPECT_EQ(cl.call({"DEL", "k", "n"}).integer, 2);
    EXPECT_EQ(cl.call({"GET", "k"}).type, resp::type::null);
    EXPECT_EQ(cl.call({"CLIENT", "ID"}).type, resp::type::integer);
    EXPECT_EQ(cl.call({"QUIT"}).text, "OK");
    EXPECT_FALSE(cl.receive());
}

TEST(embedded, unsupported_commands_and_bad_tenant_names_get_errors) {
    embedded_backend backend;
    proxy_harness proxy(test_options(backend.endpoint()));
    client cl(proxy.port());
    const auto flush = cl.call({"FLUSHALL"});
    EXPECT_EQ(flush.type, resp::type::error);
    EXPECT_EQ(flush.text, "ERR 'FLUSHALL' is denied by this proxy (a server-wide or administrative command)");
    EXPECT_EQ(cl.call({"CLIENT", "SETNAME", "no spaces"}).type, resp::type::error);
    EXPECT_EQ(cl.call({"CLIENT", "SETNAME", std::string(65, 'a')}).type, resp::type::error);
    EXPECT_EQ(cl.call({"PING"}).text, "PONG");  // the connection is still fine
}

// With max_tenants 1 and that tenant not "default", a new client (tenant "default"
// until it names one) has no tenant to join: it is told so and closed.
TEST(embedded, a_client_with_no_room_for_its_default_tenant_is_refused) {
    embedded_backend backend;
    auto options = test_options(backend.endpoint());
    options.max_tenants = 1;
    proxy_harness proxy(options);
    client alice(proxy.port());
    ASSERT_EQ(alice.call({"CLIENT", "SETNAME", "alice"}).text, "OK");
    client late(proxy.port());
    const auto refusal = late.receive();
    ASSERT_TRUE(refusal.has_value());
    EXPECT_EQ(refusal->type, resp::type::error);
    EXPECT_EQ(refusal->text, "ERR too many tenants");
    EXPECT_FALSE(late.receive().has_value()) << "the refused client was not closed";
    EXPECT_EQ(alice.call({"PING"}).text, "PONG");
    EXPECT_EQ(proxy.proxy().totals().clients_refused, 1u);
}

TEST(embedded, oversized_and_malformed_requests_are_answered_then_closed) {
    embedded_backend backend;
    auto options = test_options(backend.endpoint());
    options.max_request_bytes = 1024;
    proxy_harness proxy(options);
    client big(proxy.port());
    const auto reply = big.call({"SET", "k", std::string(4096, 'x')});
    EXPECT_EQ(reply.text, "ERR request too large");
    EXPECT_FALSE(big.receive());
    client garbage(proxy.port());
    garbage.send_raw("*x\r\n");  // an array header that is not a number
    const auto r = garbage.receive();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->text, "ERR protocol error");
    EXPECT_FALSE(garbage.receive());
}

TEST(embedded, clients_beyond_max_clients_are_refused) {
    embedded_backend backend;
    auto options = test_options(backend.endpoint());
    options.max_clients = 2;
    proxy_harness proxy(options);
    client a(proxy.port()), b(proxy.port());
    EXPECT_EQ(a.call({"PING"}).text, "PONG");
    EXPECT_EQ(b.call({"PING"}).text, "PONG");
    client c(proxy.port());
    const auto refused = c.receive();
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->text, "ERR max number of clients reached");
    EXPECT_EQ(proxy.proxy().totals().clients_refused, 1u);
}

TEST(embedded, backend_latency_past_the_request_timeout_gives_a_timeout_and_a_fresh_connection) {
    embedded_backend_options slow;
    slow.latency = std::chrono::milliseconds(200);
    embedded_backend backend(slow);
    auto options = test_options(backend.endpoint());
    options.pool.max_slots = 1;
    options.request_timeout = std::chrono::milliseconds(100);
    options.connect_timeout = std::chrono::seconds(5);  // the handshake takes two latencies
    proxy_harness proxy(options);
    ASSERT_TRUE(eventually([&] { return proxy.proxy().pool_stats().slots_idle == 1; }));
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"PING"}).text, "ERR timeout");
    EXPECT_EQ(proxy.proxy().totals().cut_by_timeout, 1u);
    EXPECT_TRUE(eventually([&] {
        return proxy.proxy().pool_stats().retired_dirty == 1;
    }));
}

TEST(embedded, blpop_waits_out_its_timeout_and_replies_the_null_array) {
    embedded_backend backend;
    proxy_harness proxy(test_options(backend.endpoint()));
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"BLPOP", "empty", "0.010"}).type, resp::type::null);
    ASSERT_EQ(cl.call({"SET", "s", "v"}).text, "OK");
    EXPECT_EQ(cl.call({"BLPOP", "empty", "s", "0.010"}).text,
              "WRONGTYPE Operation against a key holding the wrong kind of value");
    for (const std::string bad : {"0", "-1", "x", "3601", "1s"}) {
        const auto r = cl.call({"BLPOP", "empty", bad});
        EXPECT_EQ(r.type, resp::type::error) << bad;
        EXPECT_TRUE(r.text.starts_with("ERR timeout is not a number of seconds")) << bad << ": " << r.text;
    }
}

// The load with greedy_hold: the greedy tenant's requests are BLPOPs (successes, no
// counter), the light tenants' INCRs are all counted back.
TEST(embedded, the_load_with_a_long_holding_greedy_tenant_counts_every_light_increment) {
    embedded_backend backend;
    auto options = test_options(backend.endpoint());
    options.pool.max_leases_per_handle = 1;
    proxy_harness proxy(options);
    load_options lo;
    lo.duration = std::chrono::milliseconds(300);
    lo.greedy_connections = 4;
    lo.light_tenants = 2;
    lo.greedy_hold = std::chrono::milliseconds(5);
    lo.live = false;
    const auto reports =
        boost::asio::co_spawn(proxy.executor(), run_load(proxy.proxy(), lo), boost::asio::use_future).get();
    ASSERT_EQ(reports.size(), 3u);
    EXPECT_EQ(reports[0].name, "greedy");
    EXPECT_FALSE(reports[0].counted);
    EXPECT_GT(reports[0].ok, 0u);
    EXPECT_EQ(reports[0].errors, 0u);
    for (std::size_t i = 1; i < reports.size(); ++i) {
        EXPECT_TRUE(reports[i].counted);
        EXPECT_GT(reports[i].ok, 0u) << reports[i].name;
        EXPECT_EQ(reports[i].errors, 0u) << reports[i].name;
        EXPECT_EQ(reports[i].counter, static_cast<std::int64_t>(reports[i].ok)) << reports[i].name;
    }
}

// The /metrics page: the pool's counters, then a series per connected tenant, named by
// the tenant; a tenant whose last client left has none.
TEST(embedded, metrics_text_is_the_pools_counters_then_each_connected_tenants) {
    embedded_backend backend;
    proxy_harness proxy(test_options(backend.endpoint()));
    const auto page = [&] { return proxy.on_proxy_thread([&] { return proxy.proxy().metrics_text(); }); };
    const auto sample = [&](const std::string& text, const std::string& family, const std::string& tenant) {
        return prometheus_sample(text, family + "{pool=\"demo\",tenant=\"" + tenant + "\"}");
    };
    {
        client alice(proxy.port()), bob(proxy.port());
        ASSERT_EQ(alice.call({"CLIENT", "SETNAME", "alice"}).text, "OK");
        ASSERT_EQ(bob.call({"CLIENT", "SETNAME", "bob"}).text, "OK");
        for (int i = 0; i < 3; ++i) ASSERT_EQ(alice.call({"INCR", "a"}).type, resp::type::integer);
        ASSERT_EQ(bob.call({"INCR", "b"}).type, resp::type::integer);
        const std::string text = page();
        const std::string pool_part = fairpool::prometheus_text(proxy.proxy().backend_pool(), "demo");
        EXPECT_TRUE(text.starts_with(pool_part)) << text;
        EXPECT_EQ(sample(text, "fairpool_handle_grants_total", "alice"), 3u) << text;
        EXPECT_EQ(sample(text, "fairpool_handle_grants_total", "bob"), 1u) << text;
        EXPECT_EQ(sample(text, "fairpool_handle_leases_out_max", "alice"), 1u) << text;
        EXPECT_EQ(sample(text, "fairpool_handle_leases_out", "alice"), 0u) << text;
        EXPECT_FALSE(sample(text, "fairpool_handle_grants_total", "default")) << "no client is tenant default now";
        alice.close();
        EXPECT_TRUE(eventually([&] { return !sample(page(), "fairpool_handle_grants_total", "alice"); }))
            << "alice left: her handle (and series) should be gone";
        EXPECT_EQ(sample(page(), "fairpool_handle_grants_total", "bob"), 1u);
    }
}

}  // namespace
}  // namespace fairpool::demo::testing
