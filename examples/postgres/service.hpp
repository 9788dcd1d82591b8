#pragma once
// A small multi-tenant HTTP service on a pool of PostgreSQL connections (Boost.Beast):
//
//   GET /items/{id}   with header X-Tenant: NAME  -> 200 {"id":..,"name":".."}, 404, 400,
//                     503 (the pool refused: saturated, timeout, busy), 504 (statement
//                     timed out: cancelled on the server, its connection dropped),
//                     500 (the database failed)
//   GET /metrics      -> the pool's counters in the Prometheus text format
//
// Each tenant has its own fairpool handle, so a tenant that sends many requests at
// once waits its turn behind the others instead of taking every connection.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <map>
#include <string>

#include "pooled.hpp"

namespace pg {

struct service_options {
    std::chrono::milliseconds acquire_timeout{1000};
    std::chrono::milliseconds statement_timeout{1000};
    // Server time each item lookup also spends (pg_sleep), to make the database the
    // bottleneck in a demonstration; 0 for none.
    std::chrono::milliseconds work{0};
    std::size_t max_tenants = 1024;  // past it, requests from new tenants get 429
};

class item_service {
public:
    item_service(pg::pool& pool, service_options options) : pool_(pool), options_(options) {}

    // Creates the items table (if missing) with `count` rows.
    boost::asio::awaitable<void> prepare(int count);

    // Accepts HTTP connections on `at` (use a loopback address) until stop().
    boost::asio::ip::tcp::endpoint listen(boost::asio::ip::tcp::endpoint at);
    void stop();

    struct response {
        unsigned status = 200;
        std::string content_type = "application/json";
        std::string body;
    };
    // One request, without HTTP: what the server answers for `target` from `tenant`.
    boost::asio::awaitable<response> answer(std::string target, std::string tenant);

private:
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket);
    boost::asio::awaitable<response> item(int id, const std::string& tenant);

    pg::pool& pool_;
    service_options options_;
    std::map<std::string, pg::handle, std::less<>> tenants_;
    std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
};

}  // namespace pg
