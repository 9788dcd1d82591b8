#include "service.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>

#include "fairpool/asio/prometheus.hpp"

namespace pg {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

// (A function, not a braced list: g++ 12 miscompiles temporaries in a braced list
// inside a coroutine.)
item_service::response reply(unsigned status, std::string content_type, std::string body) {
    return {status, std::move(content_type), std::move(body)};
}

item_service::response text(unsigned status, std::string body) { return reply(status, "text/plain", body + "\n"); }

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

}  // namespace

asio::awaitable<void> item_service::prepare(int count) {
    auto l = co_await pool_.async_acquire(options_.acquire_timeout);
    auto made = co_await pg::run(l, "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text NOT NULL)", {},
                                 std::chrono::seconds(30));
    if (!made) throw pg::error("prepare: " + made.error);
    // Named, not a braced list inside co_await: g++ 12 miscompiles an initializer_list
    // there ("array used as initializer").
    std::vector<std::string> rows{std::to_string(count)};
    auto filled = co_await pg::run(l,
                                   "INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, $1::int) AS i "
                                   "ON CONFLICT (id) DO NOTHING",
                                   std::move(rows), std::chrono::seconds(30));
    if (!filled) throw pg::error("prepare: " + filled.error);
}

asio::awaitable<item_service::response> item_service::item(int id, const std::string& tenant) {
    // [item]
    auto found = tenants_.find(tenant);
    if (found == tenants_.end()) {
        if (tenants_.size() >= options_.max_tenants) co_return text(429, "too many tenants");
        found = tenants_.emplace(tenant, pool_.make_handle()).first;
    }
    auto [ec, l] = co_await found->second.async_acquire(options_.acquire_timeout, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return text(503, "no connection: " + ec.message());
    const double work = std::chrono::duration<double>(options_.work).count();
    std::vector<std::string> params{std::to_string(id), std::to_string(work)};
    auto o = co_await pg::run(l, "SELECT name, pg_sleep($2::float8) FROM items WHERE id = $1::int", std::move(params),
                              options_.statement_timeout);
    if (o.timed_out) co_return text(504, o.error);
    if (!o) co_return text(500, o.error);
    if (PQntuples(o.rows.get()) == 0) co_return text(404, "no item " + std::to_string(id));
    co_return reply(200, "application/json",
                       "{\"id\":" + std::to_string(id) + ",\"name\":" + json_string(PQgetvalue(o.rows.get(), 0, 0)) +
                           "}\n");
    // [/item]
}

asio::awaitable<item_service::response> item_service::answer(std::string target, std::string tenant) {
    if (target == "/metrics")
        co_return reply(200, "text/plain; version=0.0.4", fairpool::prometheus_text(pool_, "postgres"));
    constexpr std::string_view prefix = "/items/";
    if (target.starts_with(prefix)) {
        int id = 0;
        const char* first = target.data() + prefix.size();
        const char* last = target.data() + target.size();
        const auto [end, err] = std::from_chars(first, last, id);
        if (err != std::errc{} || end != last || first == last) co_return text(400, "bad item id");
        if (tenant.empty()) co_return text(400, "missing X-Tenant header");
        co_return co_await item(id, tenant);
    }
    co_return text(404, "not found");
}

tcp::endpoint item_service::listen(tcp::endpoint at) {
    acceptor_ = std::make_unique<tcp::acceptor>(pool_.get_executor(), at);
    asio::co_spawn(pool_.get_executor(), accept_loop(), asio::detached);
    return acceptor_->local_endpoint();
}

void item_service::stop() {
    if (acceptor_) acceptor_->close();
}

asio::awaitable<void> item_service::accept_loop() {
    for (;;) {
        auto [ec, socket] = co_await acceptor_->async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::operation_aborted || !acceptor_->is_open()) co_return;
        if (!ec) asio::co_spawn(acceptor_->get_executor(), session(std::move(socket)), asio::detached);
    }
}

asio::awaitable<void> item_service::session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
        http::request<http::string_body> request;
        stream.expires_after(std::chrono::seconds(30));
        auto [ec, n] = co_await http::async_read(stream, buffer, request, asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;  // closed, idle too long, or not HTTP
        response r = text(405, "only GET");
        if (request.method() == http::verb::get)  // (not a co_await inside ?: — g++ 12 miscompiles that)
            r = co_await answer(std::string(request.target()), std::string(request["X-Tenant"]));
        http::response<http::string_body> out(static_cast<http::status>(r.status), request.version());
        out.set(http::field::content_type, r.content_type);
        out.keep_alive(request.keep_alive());
        out.body() = std::move(r.body);
        out.prepare_payload();
        auto [wec, written] = co_await http::async_write(stream, out, asio::as_tuple(asio::use_awaitable));
        if (wec || !out.keep_alive()) co_return;
    }
}

}  // namespace pg
