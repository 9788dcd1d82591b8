#include "proxy_server.hpp"

#include <array>
#include <cctype>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <variant>
#include <vector>

#include "fairpool/asio/error.hpp"
#include "fairpool/asio/prometheus.hpp"

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_tenant_name = 64;

struct timed_out {};
struct client_gone {};

bool valid_tenant_name(std::string_view name) {
    if (name.empty() || name.size() > max_tenant_name) return false;
    for (const char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-')) return false;
    return true;
}

// Commands relayed to the backend. Anything else is refused by the proxy. BLPOP is
// there to put a request on the wire for as long as one likes (bounded by the
// request timeout): the cancellation tests and demonstrations use it.
bool forwardable(const std::vector<std::string>& args) {
    const std::string name = resp::upper(args[0]);
    if (name == "PING" || name == "ECHO" || name == "GET" || name == "SET" || name == "INCR" || name == "DEL" ||
        name == "BLPOP")
        return true;
    return name == "CLIENT" && args.size() == 2 && resp::upper(args[1]) == "ID";
}

asio::awaitable<timed_out> wait_until(asio::steady_timer& timer) {
    (void)co_await timer.async_wait(use_tuple);
    co_return timed_out{};
}

// Completes when the client has closed its end (or errored). Pipelined bytes waiting
// to be read do not count: then it waits until cancelled. It only peeks, so cancelling
// it loses nothing.
asio::awaitable<client_gone> watch_client(tcp::socket& socket) {
    auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
    if (!ec) {
        char byte = 0;
        boost::system::error_code peek_ec;
        const std::size_t n = socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
        if (!peek_ec && n > 0) {
            asio::steady_timer forever(socket.get_executor(), asio::steady_timer::time_point::max());
            (void)co_await forever.async_wait(use_tuple);
        }
    }
    co_return client_gone{};
}

}  // namespace

fairpool::pool_options default_proxy_pool_options() {
    return {
        .max_slots = 8,
        .min_slots = 2,
        .max_waiters = 4096,
        .spawn_backoff_initial = std::chrono::milliseconds(100),
        .spawn_backoff_max = std::chrono::seconds(2),
        .idle_timeout = std::chrono::seconds(60),
        .max_lifetime = std::chrono::minutes(10),
        .check_timeout = std::chrono::seconds(1),
        .reset_timeout = std::chrono::seconds(1),
    };
}

struct proxy_server::counters {
    std::atomic<std::uint64_t> clients_accepted{0}, clients_refused{0}, requests{0}, backend_replies{0},
        errors_busy{0}, errors_timeout{0}, errors_unavailable{0}, errors_other{0}, cut_by_timeout{0},
        cut_by_disconnect{0}, backend_failures{0};
};

struct proxy_server::tenant {
    tenant(std::string n, fairpool::handle<backend_connection> h) : name(std::move(n)), handle(std::move(h)) {}
    std::string name;
    fairpool::handle<backend_connection> handle;
    std::size_t sessions = 0;
};

struct proxy_server::session {
    explicit session(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::string buffer;
    tenant* owner = nullptr;
    bool reading = false;  // waiting for the next request: close() may cancel the read
    bool quit = false;
};

proxy_server::proxy_server(asio::any_io_executor ex, proxy_options options)
    : options_(std::move(options)),
      executor_(ex),
      acceptor_(ex, options_.listen),
      endpoint_(acceptor_.local_endpoint()),
      pool_(ex, options_.pool,
            fairpool::resource_hooks<backend_connection>{
                .create = [backend = options_.backend,
                           timeout = options_.connect_timeout] { return backend_connection::connect(backend, timeout); },
                .close = [](backend_connection& c) { return c.close(); },
                .check = [](backend_connection& c) { return c.ping(); },
                .reset = [](backend_connection& c) { return c.reset(); },
            }),
      counters_(std::make_unique<counters>()) {
    accepting_ = true;
    asio::co_spawn(executor_, accept_loop(), asio::detached);
}

proxy_server::~proxy_server() = default;

proxy_totals proxy_server::totals() const noexcept {
    const auto& c = *counters_;
    return {c.clients_accepted.load(),   c.clients_refused.load(), c.requests.load(),
            c.backend_replies.load(),    c.errors_busy.load(),     c.errors_timeout.load(),
            c.errors_unavailable.load(), c.errors_other.load(),    c.cut_by_timeout.load(),
            c.cut_by_disconnect.load(),  c.backend_failures.load()};
}

asio::awaitable<void> proxy_server::accept_loop() {
    while (!stopping_) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) {
            if (stopping_ || ec == asio::error::operation_aborted) break;
            continue;  // e.g. out of file descriptors: keep serving the others
        }
        if (sessions_.size() >= options_.max_clients) {
            ++counters_->clients_refused;
            asio::co_spawn(executor_, refuse(std::move(socket)), asio::detached);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto s = std::make_shared<session>(std::move(socket));
        sessions_.insert(s.get());
        ++clients_;
        ++counters_->clients_accepted;
        asio::co_spawn(executor_, serve(std::move(s)), asio::detached);
    }
    accepting_ = false;
}

asio::awaitable<void> proxy_server::refuse(tcp::socket socket) {
    const std::string refusal = resp::error("ERR max number of clients reached");
    (void)co_await asio::async_write(socket, asio::buffer(refusal), use_tuple);
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
}

asio::awaitable<void> proxy_server::serve(std::shared_ptr<session> s) {
    join_tenant(*s, "default");
    const resp::limits limits{options_.max_request_bytes, 1024, 1};
    std::array<char, 4096> chunk;
    while (!stopping_ && !s->quit) {
        const auto parsed = resp::parse(s->buffer, limits);
        if (parsed.status == resp::parse_status::incomplete) {
            s->reading = true;
            auto [ec, n] = co_await s->socket.async_read_some(asio::buffer(chunk), use_tuple);
            s->reading = false;
            if (ec) break;
            s->buffer.append(chunk.data(), n);
            continue;
        }
        ++counters_->requests;
        if (parsed.status != resp::parse_status::complete) {
            // The stream cannot be resynchronised: answer, then close.
            ++counters_->errors_other;
            const std::string reply = resp::error(parsed.status == resp::parse_status::too_large
                                                      ? "ERR request too large"
                                                      : "ERR protocol error");
            (void)co_await asio::async_write(s->socket, asio::buffer(reply), use_tuple);
            break;
        }
        s->buffer.erase(0, parsed.length);
        const auto reply = co_await handle_request(*s, parsed.frame);
        if (!reply) break;  // the client went away
        auto [ec, n] = co_await asio::async_write(s->socket, asio::buffer(*reply), use_tuple);
        if (ec) break;
    }
    boost::system::error_code ignored;
    s->socket.shutdown(tcp::socket::shutdown_both, ignored);
    s->socket.close(ignored);
    leave_tenant(*s);
    sessions_.erase(s.get());
    --clients_;
}

asio::awaitable<std::optional<std::string>> proxy_server::handle_request(session& s, const resp::value& request) {
    const auto args = resp::arguments(request);
    if (args.empty()) {
        ++counters_->errors_other;
        co_return resp::error("ERR protocol error: expected an array of bulk strings");
    }
    const std::string name = resp::upper(args[0]);
    if (name == "CLIENT" && args.size() == 3 && resp::upper(args[1]) == "SETNAME") {
        if (!valid_tenant_name(args[2])) {
            ++counters_->errors_other;
            co_return resp::error("ERR invalid tenant name (1..64 of A-Z a-z 0-9 _ . : -)");
        }
        const std::string previous = s.owner->name;
        leave_tenant(s);
        if (join_tenant(s, args[2])) co_return resp::simple("OK");
        join_tenant(s, previous);
        ++counters_->errors_other;
        co_return resp::error("ERR too many tenants");
    }
    if (name == "QUIT") {
        s.quit = true;
        co_return resp::simple("OK");
    }
    if (!forwardable(args)) {
        ++counters_->errors_other;
        co_return resp::error("ERR unknown or unsupported command '" + args[0].substr(0, 32) + "'");
    }
    co_return co_await forward(s, resp::command(args));
}

asio::awaitable<std::optional<std::string>> proxy_server::forward(session& s, std::string request) {
    using namespace asio::experimental::awaitable_operators;
    const auto deadline = std::chrono::steady_clock::now() + options_.request_timeout;

    // [forward]
    // Wait for a connection, unless the client leaves first (nothing is on the wire yet).
    auto acquired = co_await (s.owner->handle.async_acquire(options_.request_timeout, use_tuple) ||
                              watch_client(s.socket));
    if (acquired.index() == 1) co_return std::nullopt;
    auto [ec, lease] = std::get<0>(std::move(acquired));
    if (ec) co_return acquire_error(ec);

    // On the wire: the reply, the deadline or the client's departure, whichever first.
    // The connection is fit for reuse only once its reply has come: cut off mid-flight
    // (the reply may still arrive on it) or failed, the guard leaves the lease dirty and
    // the connection never serves anyone again.
    asio::steady_timer timer(executor_, deadline);
    auto guard = lease.in_flight();
    auto outcome = co_await (lease->round_trip(request) || wait_until(timer) || watch_client(s.socket));
    if (outcome.index() == 0) {
        auto reply = std::get<0>(std::move(outcome));
        if (!reply.ec) {
            guard.done();
            ++counters_->backend_replies;
            co_return std::move(reply.frame);
        }
        ++counters_->backend_failures;
        ++counters_->errors_unavailable;
        co_return resp::error("ERR backend unavailable");
    }
    if (outcome.index() == 2) {
        ++counters_->cut_by_disconnect;
        co_return std::nullopt;
    }
    ++counters_->cut_by_timeout;
    ++counters_->errors_timeout;
    co_return resp::error("ERR timeout");
    // [/forward]
}

// [acquire-error]
std::string proxy_server::acquire_error(boost::system::error_code ec) {
    if (ec == fairpool::condition::overloaded) {  // saturated, busy or timed out: shed load
        if (ec != fairpool::error::timeout) {
            ++counters_->errors_busy;
            return resp::error("BUSY pool saturated");
        }
        // Timed out with nothing live to wait for: the backend cannot be reached at the moment.
        const auto st = pool_.stats();
        if (st.slots_idle + st.slots_leased + st.slots_checking + st.slots_resetting == 0) {
            ++counters_->errors_unavailable;
            return resp::error("ERR backend unavailable");
        }
        ++counters_->errors_timeout;
        return resp::error("ERR timeout");
    }
    ++counters_->errors_other;
    return resp::error("ERR shutting down");
}
// [/acquire-error]

// [metrics-text]
std::string proxy_server::metrics_text() const {
    std::vector<fairpool::handle_observer> handles;
    handles.reserve(tenants_.size());
    for (const auto& [name, t] : tenants_) handles.push_back(t->handle.observer());
    return fairpool::prometheus_text(pool_, metrics_pool_label, handles);
}
// [/metrics-text]

bool proxy_server::join_tenant(session& s, const std::string& name) {
    auto it = tenants_.find(name);
    if (it == tenants_.end()) {
        if (tenants_.size() >= options_.max_tenants) return false;
        fairpool::handle_options ho;
        ho.name = name;  // its `tenant` label at /metrics
        it = tenants_.emplace(name, std::make_unique<tenant>(name, pool_.make_handle(ho))).first;
    }
    s.owner = it->second.get();
    ++s.owner->sessions;
    return true;
}

void proxy_server::leave_tenant(session& s) {
    if (!s.owner) return;
    if (--s.owner->sessions == 0) {
        const std::string name = s.owner->name;
        tenants_.erase(name);
    }
    s.owner = nullptr;
}

asio::awaitable<fairpool::close_report> proxy_server::close(std::chrono::milliseconds grace) {
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto* s : sessions_)
        if (s->reading) s->socket.cancel(ignored);  // idle clients go now; busy ones after their reply
    const auto deadline = std::chrono::steady_clock::now() + grace;
    asio::steady_timer poll(executor_);
    bool forced = false;
    while (!sessions_.empty() || accepting_) {
        if (!forced && std::chrono::steady_clock::now() >= deadline) {
            forced = true;  // cut off whoever is still busy: their requests are released dirty
            for (auto* s : sessions_) s->socket.close(ignored);
        }
        poll.expires_after(std::chrono::milliseconds(5));
        (void)co_await poll.async_wait(use_tuple);
    }
    auto [ec, report] = co_await pool_.async_close(grace + std::chrono::seconds(2), use_tuple);
    co_return report;
}

}  // namespace fairpool::demo
