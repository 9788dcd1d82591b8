#pragma once
// The service's load mode: HTTP clients per tenant, each a keep-alive connection sending
// GET /items/{id} with its tenant's X-Tenant for a while, then a table per tenant.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pg {

struct tenant_load {
    std::string name;
    unsigned clients = 1;  // requests it keeps in flight at once
};

struct tenant_result {
    std::string name;
    unsigned clients = 0;
    std::uint64_t requests = 0;  // answered 200
    std::uint64_t failed = 0;    // any other answer, or no answer
    std::vector<std::uint32_t> latencies_us;
};

// "a:8,b:1,c:1" -> tenants a, b and c with 8, 1 and 1 clients; throws std::invalid_argument.
[[nodiscard]] std::vector<tenant_load> parse_tenants(const std::string& spec);

// Runs the clients against `service` for `duration`, ids drawn from 1..items.
boost::asio::awaitable<std::vector<tenant_result>> run_load(boost::asio::ip::tcp::endpoint service,
                                                            std::vector<tenant_load> tenants,
                                                            std::chrono::milliseconds duration, int items);

// The markdown table: tenant, clients, requests, failed, p50, p99, share of requests.
[[nodiscard]] std::string load_table(std::vector<tenant_result> results, std::chrono::milliseconds duration);

}  // namespace pg
