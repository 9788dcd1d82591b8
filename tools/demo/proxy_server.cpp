#include "proxy_server.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <cstring>
#include <stdexcept>

#include "fairpool/asio/error.hpp"
#include "fairpool/asio/prometheus.hpp"
#include "handler_memory.hpp"

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_tenant_name = 64;
constexpr std::size_t read_chunk = 16 * 1024;
// A buffer grown past this by one large request or reply is given back once used.
constexpr std::size_t keep_capacity = 256 * 1024;

bool valid_tenant_name(std::string_view name) {
    if (name.empty() || name.size() > max_tenant_name) return false;
    for (const char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-')) return false;
    return true;
}

void trim(std::string& buffer) {
    if (buffer.capacity() > keep_capacity) std::string().swap(buffer);
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
        errors_busy{0}, errors_timeout{0}, errors_unavailable{0}, errors_other{0}, turns{0}, cut_by_timeout{0},
        cut_by_disconnect{0}, backend_failures{0};
};

enum class proxy_server::cut_reason : std::uint8_t { none, timeout, client_gone };

// A request read from a client and waiting for its turn: its bytes are in the client's
// outbox, in order.
struct queued_request {
    std::uint32_t bytes;
    transaction_op op;
};

struct proxy_server::session : std::enable_shared_from_this<session> {
    session(tcp::socket s, std::size_t max_pipeline) : socket(std::move(s)) {
        input.resize(read_chunk);
        queued.reserve(max_pipeline);
    }

    tcp::socket socket;
    tenant* owner = nullptr;

    std::string input;  // its first input_used bytes are read and not yet parsed
    std::size_t input_used = 0;

    std::string outbox;                  // requests waiting for a turn, back to back
    std::vector<queued_request> queued;  // theirs, from queued_front on
    std::size_t queued_front = 0;
    bool solo = false;          // what is queued or on the wire goes in a turn of its own
    turn* on_wire = nullptr;    // the turn carrying this client's requests

    std::string replies;  // to write next
    std::string writing;  // being written
    handler_memory read_memory, write_memory;  // for the one wait and the one write that may be out

    bool reading = false, write_pending = false;
    bool drained = false;  // the last read emptied the socket, and a wait has been out since
    bool gone = false;     // the client left (or was closed): nothing more is read or written
    bool ended = false;    // end_session ran
    bool finishing = false;  // QUIT, or a request the stream cannot recover from: close once answered

    // In its tenant's queue of clients waiting for a turn.
    session* ready_prev = nullptr;
    session* ready_next = nullptr;
    bool ready = false;

    // The connection of an open transaction (MULTI or WATCH relayed, EXEC, DISCARD or
    // UNWATCH not yet), held until `held_until`.
    std::optional<fairpool::lease<backend_connection>> held;
    clock_type::time_point held_until;
    transaction_state transaction;

    [[nodiscard]] std::size_t waiting() const noexcept { return queued.size() - queued_front; }
    // Requests read whose replies have not come: the proxy's own answers wait behind them.
    [[nodiscard]] bool busy() const noexcept { return waiting() > 0 || on_wire != nullptr; }
    [[nodiscard]] std::size_t backlog() const noexcept { return replies.size() + writing.size(); }

    void drop_waiting() {
        outbox.clear();
        queued.clear();
        queued_front = 0;
    }
    // Gives the held connection back dirty: its transaction was cut off.
    void drop_held() {
        if (held) held->mark_dirty();
        held.reset();
        transaction = {};
    }
};

struct proxy_server::tenant {
    tenant(std::string n, fairpool::handle<backend_connection> h) : name(std::move(n)), handle(std::move(h)) {}
    std::string name;
    fairpool::handle<backend_connection> handle;
    std::size_t sessions = 0;
    std::size_t turns = 0;      // waiting for a grant or on the wire: the tenant outlives them
    std::size_t acquiring = 0;  // of them, waiting for a grant

    // Its clients with requests waiting for a turn, in the order they became ready.
    session* ready_head = nullptr;
    session* ready_tail = nullptr;
    std::size_t ready_clients = 0;
    std::size_t ready_solo = 0;            // of them, clients whose requests need a turn of their own
    std::size_t ready_shared_requests = 0;  // the others' requests, which share turns

    // Turns it takes to carry what is waiting: one per solo client, one per
    // max_batch_commands of the rest.
    [[nodiscard]] std::size_t turns_needed(std::size_t max_batch) const noexcept {
        return ready_solo + (ready_shared_requests + max_batch - 1) / max_batch;
    }
    void count(session& s, int sign) {
        if (s.solo) ready_solo += static_cast<std::size_t>(sign);
        else ready_shared_requests += static_cast<std::size_t>(sign) * s.waiting();
    }
    void push_ready(session& s) {
        s.ready = true;
        s.ready_prev = ready_tail;
        s.ready_next = nullptr;
        (ready_tail ? ready_tail->ready_next : ready_head) = &s;
        ready_tail = &s;
        ++ready_clients;
        count(s, 1);
    }
    void remove_ready(session& s) {
        (s.ready_prev ? s.ready_prev->ready_next : ready_head) = s.ready_next;
        (s.ready_next ? s.ready_next->ready_prev : ready_tail) = s.ready_prev;
        s.ready = false;
        s.ready_prev = s.ready_next = nullptr;
        --ready_clients;
        count(s, -1);
    }
};

// One grant: a backend connection, exclusively, for the requests of one or more clients
// of one tenant, sent as one pipeline; `parts` say whose they are, in order.
struct proxy_server::turn final : reply_sink {
    turn(proxy_server& p, std::size_t max_commands) : proxy(p) {
        parts.reserve(max_commands);
        ops.reserve(max_commands);
    }
    void on_reply(std::string_view frame) override { proxy.on_reply(*this, frame); }
    void on_done(boost::system::error_code ec) override { proxy.on_done(*this, ec); }

    struct part {
        std::shared_ptr<session> client;
        std::size_t requests;
    };

    proxy_server& proxy;
    tenant* owner = nullptr;
    std::optional<fairpool::lease<backend_connection>> lease;  // its own; empty on a held transaction's
    std::shared_ptr<session> holder;  // the client whose held transaction's connection it runs on
    backend_connection* connection = nullptr;
    std::string requests;
    std::size_t count = 0;    // requests it carries
    std::size_t replied = 0;  // replies read so far
    std::vector<part> parts;
    std::vector<transaction_op> ops;  // of a solo turn's requests, in order
    std::size_t part_index = 0;       // the part the next reply is for
    std::size_t part_replies = 0;     // replies it has had
    bool solo = false;
    bool on_the_wire = false;
    cut_reason cut = cut_reason::none;
    clock_type::time_point deadline;

    [[nodiscard]] fairpool::lease<backend_connection>& used() { return holder ? *holder->held : *lease; }
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
      sweep_(ex),
      counters_(std::make_unique<counters>()) {
    if (options_.max_batch_commands == 0 || options_.max_client_pipeline == 0)
        throw std::invalid_argument("proxy_options: max_batch_commands and max_client_pipeline must be at least 1");
    accepting_ = true;
    asio::co_spawn(executor_, accept_loop(), asio::detached);
}

proxy_server::~proxy_server() = default;

proxy_totals proxy_server::totals() const noexcept {
    const auto& c = *counters_;
    return {c.clients_accepted.load(),   c.clients_refused.load(), c.requests.load(),
            c.backend_replies.load(),    c.errors_busy.load(),     c.errors_timeout.load(),
            c.errors_unavailable.load(), c.errors_other.load(),    c.turns.load(),
            c.cut_by_timeout.load(),     c.cut_by_disconnect.load(), c.backend_failures.load()};
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
            asio::co_spawn(executor_, refuse(std::move(socket), "ERR max number of clients reached"), asio::detached);
            continue;
        }
        if (!tenants_.contains("default") && tenants_.size() >= options_.max_tenants) {
            // A client starts as tenant "default", and there is no room for it.
            ++counters_->clients_refused;
            asio::co_spawn(executor_, refuse(std::move(socket), "ERR too many tenants"), asio::detached);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        socket.non_blocking(true, ignored);  // read_some returns would_block instead of waiting
        auto s = std::make_shared<session>(std::move(socket), options_.max_client_pipeline);
        sessions_.emplace(s.get(), s);
        ++clients_;
        ++counters_->clients_accepted;
        join_tenant(*s, "default");
        start_read(*s);
    }
    accepting_ = false;
}

asio::awaitable<void> proxy_server::refuse(tcp::socket socket, std::string_view why) {
    const std::string refusal = resp::error(why);
    (void)co_await asio::async_write(socket, asio::buffer(refusal), use_tuple);
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
}

// --- A client ------------------------------------------------------------------------

// A client is read when it is readable: an async_wait, then a non-blocking read. (An
// async_read_some started right after a read would first try the socket at once, and
// find it empty: an extra recvfrom per request, as the client waits for its reply.)
// After a read that drained the socket, the wait is enough: what comes next raises a
// new readiness edge. While no wait is out (the client past a bound), an edge may pass
// unseen, so the next read tries the socket first.
void proxy_server::start_read(session& s) {
    // Past its bounds a client is not read until its replies go out: the kernel's
    // buffers then push back on it.
    if (s.reading || s.gone) return;
    if (stopping_ || s.finishing || s.input_used > options_.max_request_bytes ||
        s.backlog() >= options_.max_reply_backlog) {
        s.drained = false;
        return;
    }
    if (!s.drained) return read_now(s);
    s.reading = true;
    s.socket.async_wait(tcp::socket::wait_read,
                        asio::bind_allocator(handler_allocator<int>(s.read_memory),
                                             [this, self = s.shared_from_this()](boost::system::error_code ec) {
                                                 self->reading = false;
                                                 if (self->gone) return;
                                                 if (ec) return client_gone(*self);
                                                 self->drained = false;
                                                 read_now(*self);
                                             }));
}

void proxy_server::read_now(session& s) {
    if (s.input.size() - s.input_used < read_chunk) s.input.resize(s.input_used + read_chunk);
    const std::size_t room = s.input.size() - s.input_used;
    boost::system::error_code ec;
    const std::size_t n = s.socket.read_some(asio::buffer(s.input.data() + s.input_used, room), ec);
    if (ec == asio::error::would_block) {
        s.drained = true;
        return start_read(s);
    }
    if (ec) return client_gone(s);
    s.drained = n < room;
    s.input_used += n;
    resume(s);
}

void proxy_server::process_input(session& s) {
    if (s.gone || stopping_) return;
    const resp::limits limits{options_.max_request_bytes, 1024, 1};
    std::size_t consumed = 0;
    while (!s.finishing) {
        if (s.waiting() >= options_.max_client_pipeline || s.backlog() >= options_.max_reply_backlog) break;
        const std::string_view rest(s.input.data() + consumed, s.input_used - consumed);
        const auto scan = resp::scan_request(rest, limits);
        if (scan.status == resp::parse_status::incomplete) break;
        // What the proxy answers itself goes after the replies to what came before.
        const auto answer = [&](std::string reply) {
            s.replies += reply;
            consumed += scan.length;
        };
        // An inline command is parsed in full (rare: telnet and nc users): its words are
        // its arguments, and it is forwarded re-encoded as RESP.
        const bool parse_inline = scan.inline_form && scan.status == resp::parse_status::complete;
        resp::parse_result parsed;
        if (parse_inline) parsed = resp::parse_request(rest, limits);
        if (const auto status = parse_inline ? parsed.status : scan.status; status != resp::parse_status::complete) {
            if (s.busy()) break;
            // The stream cannot be resynchronised: answer, then close.
            ++counters_->requests;
            ++counters_->errors_other;
            s.replies += resp::error(status == resp::parse_status::too_large ? "ERR request too large"
                                                                            : "ERR protocol error");
            s.finishing = true;
            break;
        }
        std::string_view request = rest.substr(0, scan.length), name = scan.name, first = scan.first;
        std::size_t argc = scan.argc;
        std::vector<std::string> words;  // an inline command's
        std::string encoded;             // and the same as RESP
        if (scan.inline_form) {
            words = resp::arguments(parsed.frame);
            if (words.empty()) {  // an empty line
                consumed += scan.length;
                continue;
            }
            encoded = resp::command(words);
            request = encoded;
            name = words[0];
            first = words.size() > 1 ? std::string_view(words[1]) : std::string_view();
            argc = words.size();
        } else if (scan.not_bulk) {
            if (s.busy()) break;
            ++counters_->requests;
            ++counters_->errors_other;
            answer(resp::error("ERR protocol error: expected an array of bulk strings"));
            continue;
        } else if (argc == 0) {  // an empty array
            consumed += scan.length;
            continue;
        }
        const command_class c = classify(name, first, argc, options_.denied);
        if (c.kind == command_kind::forward || c.kind == command_kind::transaction) {
            const bool solo = c.solo || s.held || s.transaction.holds_connection();
            if (s.busy() && solo && !s.solo) break;  // waits until the shared requests before it are answered
            if (!s.busy()) s.solo = solo;
            ++counters_->requests;
            if (s.queued.size() == s.queued.capacity() && s.queued_front > 0) {
                s.queued.erase(s.queued.begin(), s.queued.begin() + static_cast<std::ptrdiff_t>(s.queued_front));
                s.queued_front = 0;
            }
            s.outbox.append(request);
            s.queued.push_back({static_cast<std::uint32_t>(request.size()), c.op});
            if (s.ready && !s.solo) ++s.owner->ready_shared_requests;
            consumed += scan.length;
            continue;
        }
        if (s.busy()) break;
        ++counters_->requests;
        answer(answer_locally(s, c, request, scan.inline_form ? &words : nullptr));
    }
    if (consumed > 0) {
        std::memmove(s.input.data(), s.input.data() + consumed, s.input_used - consumed);
        s.input_used -= consumed;
    }
    if (s.waiting() > 0 && !s.on_wire) {
        if (!s.ready) make_ready(s);
        else request_turns(*s.owner);
    }
    flush_replies(s);
}

void proxy_server::flush_replies(session& s) {
    if (s.write_pending || s.replies.empty() || s.gone) return;
    std::swap(s.replies, s.writing);
    s.write_pending = true;
    asio::async_write(s.socket, asio::buffer(s.writing),
                      asio::bind_allocator(handler_allocator<int>(s.write_memory),
                                           [this, self = s.shared_from_this()](boost::system::error_code ec, std::size_t) {
                                               self->write_pending = false;
                                               self->writing.clear();
                                               trim(self->writing);
                                               if (self->gone) return;
                                               if (ec) return client_gone(*self);
                                               flush_replies(*self);
                                               resume(*self);
                                           }));
}

void proxy_server::resume(session& s) {
    if (s.gone) {
        if (!s.on_wire) end_session(s);
        return;
    }
    process_input(s);
    start_read(s);
    finish_if_done(s);
}

void proxy_server::finish_if_done(session& s) {
    if (s.gone || !(s.finishing || stopping_) || s.busy() || s.write_pending || !s.replies.empty()) return;
    boost::system::error_code ignored;
    s.socket.shutdown(tcp::socket::shutdown_both, ignored);
    client_gone(s);
}

void proxy_server::client_gone(session& s) {
    if (s.gone) return;
    s.gone = true;
    boost::system::error_code ignored;
    s.socket.close(ignored);  // what is still pending on it completes, and finds the client gone
    if (s.ready) s.owner->remove_ready(s);
    s.drop_waiting();
    if (s.on_wire) {
        // A turn of its own is cut off (a BLPOP need not wait out its timeout); a shared
        // one goes on for the others, this client's replies read and dropped.
        if (s.on_wire->solo) cut(*s.on_wire, cut_reason::client_gone);
        return;  // ended when the turn is done with it
    }
    end_session(s);
}

void proxy_server::end_session(session& s) {
    if (s.ended) return;
    s.ended = true;
    if (s.held) {  // the client left, or the proxy closed it, mid-transaction
        ++counters_->cut_by_disconnect;
        s.drop_held();
    }
    leave_tenant(s);
    --clients_;
    sessions_.erase(&s);  // its pending handlers keep it until they have run
}

std::string proxy_server::answer_locally(session& s, const command_class& c, std::string_view request,
                                         const std::vector<std::string>* inline_args) {
    // The arguments, for the commands that read them (rare: parsed again, in full).
    const auto args = [&] { return inline_args ? *inline_args : resp::arguments(resp::parse(request).frame); };
    switch (c.kind) {
        case command_kind::set_name: return switch_tenant(s, args()[2]);
        case command_kind::get_name: return resp::bulk(s.owner->name);
        case command_kind::quit: s.finishing = true; return resp::simple("OK");
        case command_kind::select_zero: return resp::simple("OK");
        case command_kind::auth: {
            const auto a = args();
            const std::string tenant_name = a.size() == 3 ? a[1] : "default";
            if (options_.tenant_passwords.empty()) {
                ++counters_->errors_other;
                return resp::error("ERR AUTH: this proxy has no tenant passwords (--tenant-passwords FILE)");
            }
            const auto it = options_.tenant_passwords.find(tenant_name);
            if (it == options_.tenant_passwords.end() || it->second != a.back()) {
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

// --- Turns ---------------------------------------------------------------------------

void proxy_server::make_ready(session& s) {
    if (s.held) {  // an open transaction: its connection is at hand
        turn& tr = take_turn(*s.owner);
        tr.holder = s.shared_from_this();
        fill(tr, *s.owner);
        start_wire(tr);
        return;
    }
    s.owner->push_ready(s);
    request_turns(*s.owner);
}

// [turns]
// Enough grants asked for to carry what the tenant's clients have waiting: one per
// client that needs a turn of its own, one per max_batch_commands of the other
// requests. So a tenant's many clients do not flood the pool's queue: it holds about
// one waiter per turn's worth of work. A grant that finds nothing left (others took
// it) goes straight back, clean.
void proxy_server::request_turns(tenant& t) {
    while (t.acquiring < t.turns_needed(options_.max_batch_commands)) {
        turn& tr = take_turn(t);
        ++t.acquiring;
        t.handle.async_acquire(options_.request_timeout,
                               [this, &tr](boost::system::error_code ec, fairpool::lease<backend_connection> lease) {
                                   on_granted(tr, ec, std::move(lease));
                               });
    }
}
// [/turns]

void proxy_server::on_granted(turn& tr, boost::system::error_code ec, fairpool::lease<backend_connection> lease) {
    tenant& t = *tr.owner;
    --t.acquiring;
    fill(tr, t);
    if (tr.count == 0) return recycle(tr);  // others took it all: the lease, if any, goes back unused
    if (ec) {
        const std::string reply = acquire_error(ec, tr.count);
        for (std::size_t i = 0; i < tr.parts.size(); ++i) finish_part(tr, i, reply);
        request_turns(t);
        return recycle(tr);
    }
    tr.lease.emplace(std::move(lease));
    start_wire(tr);
    request_turns(t);
}

// Takes the requests of the clients at the front of the tenant's queue (or of the
// holder), each client's oldest first, up to the turn's bounds; a turn takes at least one.
void proxy_server::fill(turn& tr, tenant& t) {
    const auto take = [&](session& s) {
        std::size_t k = 0, bytes = 0;
        while (k < s.waiting()) {
            const auto& q = s.queued[s.queued_front + k];
            if (tr.count + k > 0 && (tr.count + k + 1 > options_.max_batch_commands ||
                                     tr.requests.size() + bytes + q.bytes > options_.max_batch_bytes))
                break;
            bytes += q.bytes;
            if (s.solo) tr.ops.push_back(q.op);
            ++k;
        }
        if (k == 0) return false;
        if (s.ready) t.remove_ready(s);
        tr.requests.append(s.outbox, 0, bytes);
        s.outbox.erase(0, bytes);
        s.queued_front += k;
        if (s.queued_front == s.queued.size()) s.queued.clear(), s.queued_front = 0;
        tr.parts.push_back({s.shared_from_this(), k});
        tr.count += k;
        s.on_wire = &tr;
        tr.solo = tr.solo || s.solo;
        return true;
    };
    if (tr.holder) {
        take(*tr.holder);
        return;
    }
    while (t.ready_head && !tr.solo) {
        session& s = *t.ready_head;
        if (s.solo && tr.count > 0) break;  // a turn of its own: the next one
        if (!take(s)) break;                // the turn is full
    }
}

void proxy_server::start_wire(turn& tr) {
    tr.on_the_wire = true;
    tr.connection = &*tr.used();
    tr.deadline = tr.holder ? tr.holder->held_until : clock_type::now() + options_.request_timeout;
    ++counters_->turns;
    arm_sweep(tr.deadline);
    tr.connection->start_pipeline(tr.requests, tr.count, tr);
}

void proxy_server::on_reply(turn& tr, std::string_view frame) {
    ++counters_->backend_replies;
    ++tr.replied;
    session& s = *tr.parts[tr.part_index].client;
    if (!s.gone) s.replies.append(frame);
    if (++tr.part_replies == tr.parts[tr.part_index].requests && tr.part_index + 1 < tr.parts.size()) {
        finish_part(tr, tr.part_index, {});
        ++tr.part_index;
        tr.part_replies = 0;
    }
}

// [on-done]
// The turn's exchange is over. The connection is fit for reuse only if every reply
// came: cut off (replies may still be on the way) or failed, the lease goes back dirty
// and the connection never serves anyone again. Requests left unanswered get an error.
void proxy_server::on_done(turn& tr, boost::system::error_code ec) {
    tr.on_the_wire = false;
    auto& lease = tr.used();
    std::string_view unanswered;
    if (ec) {
        lease.mark_dirty();
        const std::size_t missing = tr.count - tr.replied;
        if (tr.cut == cut_reason::timeout) {
            ++counters_->cut_by_timeout;
            counters_->errors_timeout += missing;
            unanswered = "-ERR timeout\r\n";
        } else if (tr.cut == cut_reason::client_gone) {
            ++counters_->cut_by_disconnect;
        } else {
            ++counters_->backend_failures;
            counters_->errors_unavailable += missing;
            unanswered = "-ERR backend unavailable\r\n";
        }
    }
    if (tr.solo) {  // a transaction opened in this turn keeps its connection; one that ended gives it back
        session& s = *tr.parts.front().client;
        if (ec) {
            s.transaction = {};
        } else {
            for (const auto op : tr.ops) s.transaction.after(op);
        }
        if (s.transaction.holds_connection()) {
            if (s.gone) {
                if (!tr.holder) tr.lease->mark_dirty();  // left mid-transaction (a held one: end_session)
            } else if (!tr.holder) {
                s.held = std::move(tr.lease);
                s.held_until = tr.deadline;
                arm_sweep(s.held_until);
            }
        } else if (tr.holder) {
            s.held.reset();
        }
    }
    tr.lease.reset();  // back to the pool (dirty if marked)
    for (std::size_t i = tr.part_index; i < tr.parts.size(); ++i) finish_part(tr, i, unanswered);
    recycle(tr);
}
// [/on-done]

// The part's client is done with the turn: the replies it did not get are `error_reply`
// each (none if empty; the caller counted them), then it goes on.
void proxy_server::finish_part(turn& tr, std::size_t index, std::string_view error_reply) {
    auto& part = tr.parts[index];
    session& s = *part.client;
    const std::size_t got = index == tr.part_index ? tr.part_replies : 0;
    if (!error_reply.empty() && !s.gone)
        for (std::size_t i = got; i < part.requests; ++i) s.replies += error_reply;
    s.on_wire = nullptr;
    resume(s);
}

void proxy_server::cut(turn& tr, cut_reason why) {
    if (!tr.on_the_wire || tr.cut != cut_reason::none) return;
    tr.cut = why;
    tr.connection->cancel();
}

proxy_server::turn& proxy_server::take_turn(tenant& t) {
    if (free_turns_.empty()) {
        turns_.push_back(std::make_unique<turn>(*this, options_.max_batch_commands));
        free_turns_.push_back(turns_.back().get());
    }
    turn& tr = *free_turns_.back();
    free_turns_.pop_back();
    tr.owner = &t;
    ++t.turns;
    return tr;
}

void proxy_server::recycle(turn& tr) {
    tenant& t = *tr.owner;
    tr.lease.reset();
    tr.holder.reset();
    tr.connection = nullptr;
    tr.requests.clear();
    trim(tr.requests);
    tr.count = tr.replied = 0;
    tr.parts.clear();
    tr.ops.clear();
    tr.part_index = tr.part_replies = 0;
    tr.solo = false;
    tr.cut = cut_reason::none;
    tr.owner = nullptr;
    free_turns_.push_back(&tr);
    --t.turns;
    forget_if_unused(t);
}

// [acquire-error]
std::string proxy_server::acquire_error(boost::system::error_code ec, std::size_t requests) {
    if (ec == fairpool::condition::overloaded) {  // saturated, busy or timed out: shed load
        if (ec != fairpool::error::timeout) {
            counters_->errors_busy += requests;
            return resp::error("BUSY pool saturated");
        }
        // Timed out with nothing live to wait for: the backend cannot be reached at the moment.
        const auto st = pool_.stats();
        if (st.slots_idle + st.slots_leased + st.slots_checking + st.slots_resetting == 0) {
            counters_->errors_unavailable += requests;
            return resp::error("ERR backend unavailable");
        }
        counters_->errors_timeout += requests;
        return resp::error("ERR timeout");
    }
    counters_->errors_other += requests;
    return resp::error("ERR shutting down");
}
// [/acquire-error]

// --- The deadline timer --------------------------------------------------------------

// One timer for every deadline: armed for the earliest, and when it fires, it cuts what
// is due and arms itself for the next. Under steady load it is set about once per
// request_timeout, not once per request.
void proxy_server::arm_sweep(clock_type::time_point at) {
    if (sweep_armed_ && sweep_at_ <= at) return;
    sweep_armed_ = true;
    sweep_at_ = at;
    sweep_.expires_at(at);
    sweep_.async_wait([this](boost::system::error_code ec) {
        if (ec == asio::error::operation_aborted) return;  // re-armed earlier, or closing
        sweep_armed_ = false;
        sweep();
    });
}

void proxy_server::sweep() {
    const auto now = clock_type::now();
    auto next = clock_type::time_point::max();
    for (const auto& tr : turns_) {
        if (!tr->on_the_wire || tr->cut != cut_reason::none) continue;
        if (tr->deadline <= now) cut(*tr, cut_reason::timeout);
        else next = std::min(next, tr->deadline);
    }
    for (const auto& [ptr, s] : sessions_) {
        if (!s->held || s->on_wire) continue;  // a held connection's turn keeps its deadline
        if (s->held_until <= now) {
            ++counters_->cut_by_timeout;
            s->drop_held();
        } else {
            next = std::min(next, s->held_until);
        }
    }
    if (next != clock_type::time_point::max()) arm_sweep(next);
}

// [metrics-text]
std::string proxy_server::metrics_text() const {
    std::vector<fairpool::handle_observer> handles;
    handles.reserve(tenants_.size());
    for (const auto& [name, t] : tenants_) handles.push_back(t->handle.observer());
    return fairpool::prometheus_text(pool_, metrics_pool_label, handles);
}
// [/metrics-text]

std::optional<fairpool::handle_stats> proxy_server::tenant_stats(std::string_view tenant) const {
    const auto it = tenants_.find(tenant);
    if (it == tenants_.end()) return std::nullopt;
    return it->second->handle.stats();
}

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
    tenant& t = *s.owner;
    --t.sessions;
    s.owner = nullptr;
    forget_if_unused(t);
}

void proxy_server::forget_if_unused(tenant& t) {
    if (t.sessions == 0 && t.turns == 0) {
        const std::string name = t.name;
        tenants_.erase(name);
    }
}

asio::awaitable<fairpool::close_report> proxy_server::close(std::chrono::milliseconds grace) {
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    const auto each_session = [this](auto f) {
        std::vector<std::shared_ptr<session>> all;
        for (const auto& [ptr, s] : sessions_) all.push_back(s);
        for (const auto& s : all) f(*s);
    };
    each_session([this](session& s) { finish_if_done(s); });  // idle clients go now; busy ones after their reply
    const auto deadline = clock_type::now() + grace;
    asio::steady_timer poll(executor_);
    bool forced = false;
    const auto turns_busy = [this] { return free_turns_.size() < turns_.size(); };
    while (!sessions_.empty() || accepting_ || turns_busy()) {
        if (!forced && clock_type::now() >= deadline) {
            forced = true;  // cut off whoever is still busy: their turns are released dirty
            for (const auto& tr : turns_) cut(*tr, cut_reason::client_gone);
            each_session([this](session& s) { client_gone(s); });
        }
        poll.expires_after(std::chrono::milliseconds(5));
        (void)co_await poll.async_wait(use_tuple);
    }
    sweep_.cancel();
    auto [ec, report] = co_await pool_.async_close(grace + std::chrono::seconds(2), use_tuple);
    co_return report;
}

}  // namespace fairpool::demo
