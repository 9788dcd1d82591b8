// The Redis protocol as clients speak it, through the proxy to a real redis-server:
// inline commands, tenants named by AUTH, transactions on one held connection,
// state-changing and denied commands refused, pipelines forwarded in bounded turns.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace fairpool::demo::testing {
namespace {

using namespace std::chrono_literals;

using protocol = with_redis;

std::vector<resp::value> receive_n(client& cl, std::size_t n) {
    std::vector<resp::value> out;
    for (std::size_t i = 0; i < n; ++i) {
        auto v = cl.receive();
        EXPECT_TRUE(v.has_value()) << "reply " << i << " of " << n << " missing";
        if (!v) break;
        out.push_back(std::move(*v));
    }
    return out;
}

TEST(inline_parser, splits_words_and_quotes_as_redis_server_does) {
    const auto words = [](std::string_view in) {
        const auto r = resp::parse_request(in);
        EXPECT_EQ(r.status, resp::parse_status::complete) << in;
        EXPECT_EQ(r.length, in.size()) << in;
        return resp::arguments(r.frame);
    };
    EXPECT_EQ(words("PING\r\n"), (std::vector<std::string>{"PING"}));
    EXPECT_EQ(words("set  k\tv\n"), (std::vector<std::string>{"set", "k", "v"}));
    EXPECT_EQ(words("SET k \"a b\\n\\\"c\\\"\"\r\n"), (std::vector<std::string>{"SET", "k", "a b\n\"c\""}));
    EXPECT_EQ(words("SET k 'x y'\r\n"), (std::vector<std::string>{"SET", "k", "x y"}));
    const auto empty = resp::parse_request("\r\n");
    EXPECT_EQ(empty.status, resp::parse_status::complete);
    EXPECT_TRUE(empty.frame.elements.empty());
    EXPECT_EQ(resp::parse_request("GET k").status, resp::parse_status::incomplete);
    EXPECT_EQ(resp::parse_request("SET k \"open\r\n").status, resp::parse_status::malformed);
    EXPECT_EQ(resp::parse_request("SET k \"a\"b\r\n").status, resp::parse_status::malformed);
    EXPECT_EQ(resp::parse_request(std::string(2000, 'x'), {1024, 16, 1}).status, resp::parse_status::too_large);
    EXPECT_EQ(resp::parse_request("a b c d e\r\n", {1024, 4, 1}).status, resp::parse_status::too_large);
    EXPECT_EQ(resp::parse_request("*1\r\n$4\r\nPING\r\n").status, resp::parse_status::complete);  // RESP as before
}

TEST_F(protocol, inline_commands_are_forwarded_and_answered_in_order) {
    proxy_harness proxy(options());
    client cl(proxy.port());
    cl.send_raw("PING\r\nSET greeting \"hello world\"\r\n\r\nGET greeting\nINCR n\r\n");
    const auto replies = receive_n(cl, 4);
    ASSERT_EQ(replies.size(), 4u);
    EXPECT_EQ(replies[0].text, "PONG");
    EXPECT_EQ(replies[1].text, "OK");
    EXPECT_EQ(replies[2].text, "hello world");
    EXPECT_EQ(replies[3].integer, 1);
    cl.send_raw("SET k \"unbalanced\r\n");
    const auto refused = cl.receive();
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->text, "ERR protocol error");
    EXPECT_FALSE(cl.receive());  // then the proxy closes: the stream cannot be resynchronised
}

TEST_F(protocol, auth_names_the_tenant_from_the_password_file_and_is_never_forwarded) {
    auto o = options();
    o.tenant_passwords = {{"alice", "a-secret"}, {"default", "d-secret"}};
    proxy_harness proxy(o);
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"AUTH", "alice", "wrong"}).text, "WRONGPASS invalid username-password pair or user is disabled.");
    EXPECT_EQ(cl.call({"CLIENT", "GETNAME"}).text, "default");
    EXPECT_EQ(cl.call({"AUTH", "alice", "a-secret"}).text, "OK");
    EXPECT_EQ(cl.call({"CLIENT", "GETNAME"}).text, "alice");
    EXPECT_EQ(cl.call({"AUTH", "d-secret"}).text, "OK");  // the one-argument form names "default"
    EXPECT_EQ(cl.call({"CLIENT", "GETNAME"}).text, "default");
    EXPECT_EQ(cl.call({"AUTH", "bob", "a-secret"}).type, resp::type::error);
    EXPECT_EQ(cl.call({"AUTH", "alice", "a-secret"}).text, "OK");
    EXPECT_EQ(cl.call({"INCR", "n"}).integer, 1);
    const auto text = proxy.on_proxy_thread([&] { return proxy.proxy().metrics_text(); });
    EXPECT_EQ(prometheus_sample(text, "fairpool_handle_acquires_total{pool=\"demo\",tenant=\"alice\"}"), 1u);
    // Redis never saw an AUTH: it has no password, so a forwarded one would have failed.
    client admin(redis_->port());
    const auto stats = admin.call({"INFO", "commandstats"});
    EXPECT_EQ(stats.text.find("cmdstat_auth"), std::string::npos) << stats.text;
}

TEST_F(protocol, auth_without_a_password_file_is_refused) {
    proxy_harness proxy(options());
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"AUTH", "alice", "x"}).text,
              "ERR AUTH: this proxy has no tenant passwords (--tenant-passwords FILE)");
    EXPECT_EQ(cl.call({"CLIENT", "GETNAME"}).text, "default");
}

TEST_F(protocol, state_changing_and_denied_commands_are_refused_and_others_forwarded) {
    auto o = options();
    proxy_harness proxy(o);
    client cl(proxy.port());
    for (const std::vector<std::string>& refused :
         {std::vector<std::string>{"SELECT", "1"}, {"SUBSCRIBE", "ch"}, {"MONITOR"}, {"RESET"}, {"WAIT", "0", "0"},
          {"CLIENT", "TRACKING", "on"}, {"CLIENT", "REPLY", "OFF"}, {"HELLO", "3"}, {"HELLO"}, {"READONLY"},
          {"FLUSHALL"}, {"flushdb"}, {"CONFIG", "GET", "save"}, {"SHUTDOWN"}, {"SCRIPT", "FLUSH"},
          {"CLIENT", "KILL", "ID", "1"}, {"ACL", "LIST"}, {"REPLICAOF", "NO", "ONE"}, {"DEBUG", "SLEEP", "0"}}) {
        const auto reply = cl.call(refused);
        EXPECT_EQ(reply.type, resp::type::error) << refused[0];
    }
    EXPECT_EQ(cl.call({"HELLO", "3"}).text, "NOPROTO this proxy speaks RESP2 only");
    EXPECT_EQ(cl.call({"FLUSHALL"}).text,
              "ERR 'FLUSHALL' is denied by this proxy (a server-wide or administrative command)");
    EXPECT_EQ(cl.call({"SELECT", "0"}).text, "OK");
    EXPECT_EQ(cl.call({"SET", "k", "v"}).text, "OK");  // still on database 0, nothing flushed
    EXPECT_EQ(cl.call({"LPUSH", "list", "a", "b"}).integer, 2);
    EXPECT_EQ(cl.call({"LPOP", "list"}).text, "b");
    EXPECT_EQ(cl.call({"MSET", "x", "1", "y", "2"}).text, "OK");
    EXPECT_EQ(cl.call({"SCRIPT", "EXISTS", "0000000000000000000000000000000000000000"}).type, resp::type::array);
    EXPECT_EQ(cl.call({"CLIENT", "ID"}).type, resp::type::integer);
    client admin(redis_->port());
    EXPECT_EQ(admin.call({"GET", "k"}).text, "v");
    EXPECT_EQ(admin.call({"DBSIZE"}).integer, 4);  // k, list, x, y
}

TEST_F(protocol, the_deny_list_is_the_option_s) {
    auto o = options();
    o.denied = {"GET", "OBJECT ENCODING"};
    proxy_harness proxy(o);
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"SET", "k", "v"}).text, "OK");
    EXPECT_EQ(cl.call({"get", "k"}).text,
              "ERR 'GET' is denied by this proxy (a server-wide or administrative command)");
    EXPECT_EQ(cl.call({"OBJECT", "ENCODING", "k"}).type, resp::type::error);
    EXPECT_EQ(cl.call({"OBJECT", "REFCOUNT", "k"}).integer, 1);
    EXPECT_EQ(cl.call({"DBSIZE"}).integer, 1);  // FLUSHALL is no longer denied: the list was replaced
    EXPECT_EQ(cl.call({"FLUSHALL"}).text, "OK");
}

TEST_F(protocol, a_transaction_runs_on_one_connection_while_other_clients_are_served) {
    auto o = options();
    o.pool.max_slots = 2;
    proxy_harness proxy(o);
    client tx(proxy.port()), other(proxy.port());
    EXPECT_EQ(tx.call({"MULTI"}).text, "OK");
    EXPECT_EQ(tx.call({"INCR", "n"}).text, "QUEUED");
    EXPECT_EQ(other.call({"INCR", "other"}).integer, 1);  // served meanwhile, on the other connection
    EXPECT_EQ(tx.call({"INCR", "n"}).text, "QUEUED");
    const auto exec = tx.call({"EXEC"});
    ASSERT_EQ(exec.type, resp::type::array);
    ASSERT_EQ(exec.elements.size(), 2u);
    EXPECT_EQ(exec.elements[0].integer, 1);
    EXPECT_EQ(exec.elements[1].integer, 2);
    // WATCH holds the connection too, up to EXEC.
    EXPECT_EQ(tx.call({"WATCH", "n"}).text, "OK");
    EXPECT_EQ(tx.call({"MULTI"}).text, "OK");
    EXPECT_EQ(tx.call({"SET", "n", "10"}).text, "QUEUED");
    EXPECT_EQ(tx.call({"EXEC"}).elements.size(), 1u);
    EXPECT_EQ(other.call({"GET", "n"}).text, "10");
    EXPECT_EQ(proxy.proxy().pool_stats().retired_dirty, 0u);
    EXPECT_EQ(proxy.proxy().pool_stats().slots_leased, 0u);  // EXEC gave the connection back
}

TEST_F(protocol, a_pipelined_transaction_is_never_split_across_connections) {
    auto o = options();
    o.max_batch_commands = 2;  // the pipeline below takes three turns
    proxy_harness proxy(o);
    client cl(proxy.port());
    cl.send_raw(resp::command({"MULTI"}) + resp::command({"CLIENT", "ID"}) + resp::command({"CLIENT", "ID"}) +
                resp::command({"CLIENT", "ID"}) + resp::command({"EXEC"}));
    const auto replies = receive_n(cl, 5);
    ASSERT_EQ(replies.size(), 5u);
    EXPECT_EQ(replies[0].text, "OK");
    for (int i = 1; i <= 3; ++i) EXPECT_EQ(replies[static_cast<std::size_t>(i)].text, "QUEUED") << i;
    ASSERT_EQ(replies[4].type, resp::type::array);
    ASSERT_EQ(replies[4].elements.size(), 3u);
    EXPECT_EQ(replies[4].elements[1].integer, replies[4].elements[0].integer);
    EXPECT_EQ(replies[4].elements[2].integer, replies[4].elements[0].integer);
}

TEST_F(protocol, a_client_that_leaves_mid_transaction_releases_its_connection_dirty) {
    proxy_harness proxy(options());
    {
        client cl(proxy.port());
        EXPECT_EQ(cl.call({"MULTI"}).text, "OK");
        EXPECT_EQ(cl.call({"SET", "k", "never"}).text, "QUEUED");
    }
    EXPECT_TRUE(eventually([&] { return proxy.proxy().pool_stats().retired_dirty == 1; }));
    client admin(redis_->port());
    EXPECT_EQ(admin.call({"EXISTS", "k"}).integer, 0);
}

TEST_F(protocol, a_transaction_held_past_the_request_timeout_is_dropped_dirty) {
    auto o = options();
    o.request_timeout = 300ms;
    proxy_harness proxy(o);
    client cl(proxy.port());
    EXPECT_EQ(cl.call({"MULTI"}).text, "OK");
    EXPECT_EQ(cl.call({"SET", "k", "late"}).text, "QUEUED");
    EXPECT_TRUE(eventually([&] { return proxy.proxy().pool_stats().retired_dirty == 1; }));
    // The transaction went with its connection: EXEC reaches a fresh one.
    EXPECT_EQ(cl.call({"EXEC"}).text, "ERR EXEC without MULTI");
    client admin(redis_->port());
    EXPECT_EQ(admin.call({"EXISTS", "k"}).integer, 0);
}

TEST_F(protocol, a_pipeline_is_forwarded_in_turns_of_at_most_max_batch_commands) {
    auto o = options();
    o.max_batch_commands = 4;
    proxy_harness proxy(o);
    client cl(proxy.port());
    std::string pipeline;
    for (int i = 0; i < 10; ++i) pipeline += resp::command({"INCR", "n"});
    const auto grants_before = proxy.proxy().pool_stats().grants;
    cl.send_raw(pipeline);
    const auto replies = receive_n(cl, 10);
    ASSERT_EQ(replies.size(), 10u);
    for (std::size_t i = 0; i < replies.size(); ++i) EXPECT_EQ(replies[i].integer, static_cast<std::int64_t>(i + 1));
    const auto grants = proxy.proxy().pool_stats().grants - grants_before;
    EXPECT_GE(grants, 3u);  // 4 + 4 + 2 at the most per turn
    EXPECT_LE(grants, 10u);
}

TEST_F(protocol, a_pipelining_tenant_beside_light_ones_leaves_each_served_in_order) {
    auto o = options();
    o.pool.max_slots = 1;
    o.max_batch_commands = 16;
    proxy_harness proxy(o);
    client greedy(proxy.port());
    ASSERT_EQ(greedy.call({"CLIENT", "SETNAME", "greedy"}).text, "OK");
    constexpr int rounds = 8, depth = 64;
    std::thread light_thread([&] {
        for (int l = 0; l < 3; ++l) {
            client light(proxy.port());
            ASSERT_EQ(light.call({"CLIENT", "SETNAME", "light-" + std::to_string(l)}).text, "OK");
            for (int i = 1; i <= 20; ++i) EXPECT_EQ(light.call({"INCR", "light"}).type, resp::type::integer);
        }
    });
    std::int64_t expected = 0;
    for (int r = 0; r < rounds; ++r) {
        std::string pipeline;
        for (int i = 0; i < depth; ++i) pipeline += resp::command({"INCR", "greedy"});
        greedy.send_raw(pipeline);
        for (const auto& reply : receive_n(greedy, depth)) EXPECT_EQ(reply.integer, ++expected);
    }
    light_thread.join();
    client admin(redis_->port());
    EXPECT_EQ(admin.call({"GET", "greedy"}).text, std::to_string(rounds * depth));
    EXPECT_EQ(admin.call({"GET", "light"}).text, "60");
}

}  // namespace
}  // namespace fairpool::demo::testing
