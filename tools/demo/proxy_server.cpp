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
#include <tuple>
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
    // The connection of an open transaction (MULTI or WATCH seen, EXEC, DISCARD or
    // UNWATCH not yet), held until `held_until`.
    std::optional<fairpool::lease<backend_connection>> held;
    std::chrono::steady_clock::time_point held_until;
    transaction_state transaction;

    // Gives the held connection back dirty: its transaction was cut off.
    void drop_held() {
        if (held) held->mark_dirty();
        held.reset();
        transaction = {};
    }
};

// Requests gathered for one turn: encoded back to back, with their command names.
struct proxy_server::batch {
    std::string requests;
    std::vector<std::string> names;  // upper case
    [[nodiscard]] std::size_t size() const noexcept { return names.size(); }
    void clear() {
        requests.clear();
        names.clear();
    }
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
    using namespace asio::experimental::awaitable_operators;
    join_tenant(*s, "default");
    const resp::limits limits{options_.max_request_bytes, 1024, 1};
    std::array<char, 4096> chunk;
    batch pending;
    std::string replies;
    bool open = true;
    // Forwards what is pending; false if the client went away.
    auto flush = [&]() -> asio::awaitable<bool> {
        if (pending.size() == 0) co_return true;
        auto r = co_await forward(*s, pending);
        pending.clear();
        if (!r) co_return false;
        replies += *r;
        co_return true;
    };
    while (open && !stopping_ && !s->quit) {
        // Every complete request in the buffer, in order: forwarded in turns of at most
        // max_batch_commands and max_batch_bytes, the proxy's own answers in between.
        std::size_t consumed = 0;
        bool broken = false;
        while (!s->quit) {
            const auto parsed = resp::parse_request(std::string_view(s->buffer).substr(consumed), limits);
            if (parsed.status == resp::parse_status::incomplete) break;
            if (parsed.status != resp::parse_status::complete) {
                // The stream cannot be resynchronised: answer, then close.
                ++counters_->requests;
                ++counters_->errors_other;
                if (!(open = co_await flush())) break;
                replies += resp::error(parsed.status == resp::parse_status::too_large ? "ERR request too large"
                                                                                      : "ERR protocol error");
                broken = true;
                break;
            }
            consumed += parsed.length;
            if (parsed.frame.type == resp::type::array && parsed.frame.elements.empty()) continue;  // an empty line
            ++counters_->requests;
            const auto args = resp::arguments(parsed.frame);
            if (args.empty()) {
                if (!(open = co_await flush())) break;
                ++counters_->errors_other;
                replies += resp::error("ERR protocol error: expected an array of bulk strings");
                continue;
            }
            command_class c = classify(args, options_.denied);
            if (c.kind == command_kind::forward || c.kind == command_kind::transaction) {
                pending.requests += resp::command(args);
                pending.names.push_back(std::move(c.name));
                if (pending.size() >= options_.max_batch_commands || pending.requests.size() >= options_.max_batch_bytes)
                    if (!(open = co_await flush())) break;
                continue;
            }
            if (!(open = co_await flush())) break;
            replies += answer_locally(*s, args, c);
        }
        if (open) open = co_await flush();
        if (!open) break;
        s->buffer.erase(0, consumed);
        if (!replies.empty()) {
            auto [ec, n] = co_await asio::async_write(s->socket, asio::buffer(replies), use_tuple);
            replies.clear();
            if (ec) break;
        }
        if (broken || s->quit) break;
        s->reading = true;
        std::size_t n = 0;
        boost::system::error_code ec;
        if (s->held) {
            // An open transaction holds a connection: at most until its deadline.
            asio::steady_timer timer(executor_, s->held_until);
            auto r = co_await (s->socket.async_read_some(asio::buffer(chunk), use_tuple) || wait_until(timer));
            if (r.index() == 1) {
                ++counters_->cut_by_timeout;
                s->drop_held();
                s->reading = false;
                continue;
            }
            std::tie(ec, n) = std::get<0>(r);
        } else {
            std::tie(ec, n) = co_await s->socket.async_read_some(asio::buffer(chunk), use_tuple);
        }
        s->reading = false;
        if (ec) break;
        s->buffer.append(chunk.data(), n);
    }
    if (s->held) {  // the client left, or the proxy closed it, mid-transaction
        ++counters_->cut_by_disconnect;
        s->drop_held();
    }
    boost::system::error_code ignored;
    s->socket.shutdown(tcp::socket::shutdown_both, ignored);
    s->socket.close(ignored);
    leave_tenant(*s);
    sessions_.erase(s.get());
    --clients_;
}

std::string proxy_server::answer_locally(session& s, const std::vector<std::string>& args, const command_class& c) {
    switch (c.kind) {
        case command_kind::set_name: return switch_tenant(s, args[2]);
        case command_kind::get_name: return resp::bulk(s.owner->name);
        case command_kind::quit: s.quit = true; return resp::simple("OK");
        case command_kind::select_zero: return resp::simple("OK");
        case command_kind::auth: {
            const std::string tenant_name = args.size() == 3 ? args[1] : "default";
            if (options_.tenant_passwords.empty()) {
                ++counters_->errors_other;
                return resp::error("ERR AUTH: this proxy has no tenant passwords (--tenant-passwords FILE)");
            }
            const auto it = options_.tenant_passwords.find(tenant_name);
            if (it == options_.tenant_passwords.end() || it->second != args.back()) {
                ++counters_->errors_other;
                return resp::error("WRONGPASS invalid username-password pair or user is disabled.");
            }
            return switch_tenant(s, tenant_name);
        }
        default: ++counters_->errors_other; return resp::error(c.refusal);
    }
}

std::string proxy_server::switch_tenant(session& s, const std::string& name) {
    if (!valid_tenant_name(name)) {
        ++counters_->errors_other;
        return resp::error("ERR invalid tenant name (1..64 of A-Z a-z 0-9 _ . : -)");
    }
    const std::string previous = s.owner->name;
    leave_tenant(s);
    if (join_tenant(s, name)) return resp::simple("OK");
    join_tenant(s, previous);
    ++counters_->errors_other;
    return resp::error("ERR too many tenants");
}

asio::awaitable<std::optional<std::string>> proxy_server::forward(session& s, batch& b) {
    using namespace asio::experimental::awaitable_operators;
    const std::size_t count = b.size();
    auto each = [count](const std::string& reply) {
        std::string out;
        for (std::size_t i = 0; i < count; ++i) out += reply;
        return out;
    };

    // [forward]
    // A connection: the open transaction's, or one leased for this turn. Waiting for a
    // lease ends early if the client leaves (nothing is on the wire yet).
    std::optional<fairpool::lease<backend_connection>> leased;
    if (!s.held) {
        auto acquired = co_await (s.owner->handle.async_acquire(options_.request_timeout, use_tuple) ||
                                  watch_client(s.socket));
        if (acquired.index() == 1) co_return std::nullopt;
        auto [ec, lease] = std::get<0>(std::move(acquired));
        if (ec) co_return each(acquire_error(ec));
        leased.emplace(std::move(lease));
    }
    auto& lease = s.held ? *s.held : *leased;
    const auto deadline = s.held ? s.held_until : std::chrono::steady_clock::now() + options_.request_timeout;

    // On the wire: the replies, the deadline or the client's departure, whichever first.
    // The connection is fit for reuse only once every reply has come: cut off mid-flight
    // (replies may still arrive on it) or failed, the guard leaves the lease dirty and
    // the connection never serves anyone again.
    enum class ending : std::uint8_t { replied, timed_out, client_gone };
    ending how = ending::replied;
    backend_replies replies;
    {
        asio::steady_timer timer(executor_, deadline);
        auto guard = lease.in_flight();
        auto outcome = co_await (lease->pipeline(b.requests, count) || wait_until(timer) || watch_client(s.socket));
        if (outcome.index() == 2) {
            how = ending::client_gone;
        } else if (outcome.index() == 1) {
            how = ending::timed_out;
        } else {
            replies = std::get<0>(std::move(outcome));
            if (!replies.ec) guard.done();
        }
    }  // the guard ends here: the lease is dirty unless it was done
    // [/forward]
    if (how != ending::replied || replies.ec) {
        s.held.reset();  // a transaction cut off ends with its connection (and `leased` with this call)
        s.transaction = {};
    }
    if (how == ending::client_gone) {
        ++counters_->cut_by_disconnect;
        co_return std::nullopt;
    }
    if (how == ending::timed_out) {
        ++counters_->cut_by_timeout;
        counters_->errors_timeout += count;
        co_return each(resp::error("ERR timeout"));
    }
    if (replies.ec) {
        ++counters_->backend_failures;
        counters_->backend_replies += replies.replies;
        counters_->errors_unavailable += count - replies.replies;
        std::string out = std::move(replies.frames);
        for (std::size_t i = replies.replies; i < count; ++i) out += resp::error("ERR backend unavailable");
        co_return out;
    }
    counters_->backend_replies += count;
    // A transaction opened in this turn keeps its connection; one that ended gives it back.
    for (const auto& name : b.names) s.transaction.after(name);
    if (s.transaction.holds_connection() && !s.held) {
        s.held = std::move(leased);
        s.held_until = deadline;
    } else if (!s.transaction.holds_connection()) {
        s.held.reset();
    }
    co_return std::move(replies.frames);
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
