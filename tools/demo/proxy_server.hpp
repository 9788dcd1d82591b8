#pragma once
// The pooled Redis proxy: accepts RESP clients on loopback, identifies each client's
// tenant, and forwards each request over a leased backend connection, one fairpool
// handle per tenant (the unit of fairness).
//
// Every request gets exactly one reply: the backend's, or a RESP error —
//   -BUSY pool saturated          the pool refused the acquire (saturated or busy)
//   -ERR timeout                  no connection within request_timeout, or no reply
//                                 within request_timeout of getting one
//   -ERR backend unavailable      the backend connection failed, or none could be made
//   -ERR shutting down            the proxy is closing
//   -ERR protocol error / request too large / unknown command / too many tenants
// except when the client itself disconnected. Replies come back in request order.
//
// Turns: each tenant has a queue of its clients with requests waiting. A turn is one
// grant of the tenant's handle, one backend connection, exclusively: it carries the
// waiting requests of the clients at the front of that queue (each client's in order,
// never one client's requests in two turns at once), at most max_batch_commands and
// max_batch_bytes of them, as one pipeline, and hands each reply to its client as it
// comes. So a tenant's requests share a connection turn by turn as twemproxy's would,
// while tenants are scheduled by the pool (fair share, caps). Requests that must not
// share a pipeline with other clients' — MULTI ... EXEC and WATCH ... EXEC, and blocking
// commands (BLPOP, XREAD, ...) — take a turn of their client's own (command_policy.hpp).
//
// A turn cut off while on the wire (request timeout, an I/O error, its only client
// gone) releases its connection dirty: it is closed, never reused. A client that goes
// while its requests share a turn with others' does not cut it: its replies are read
// and dropped, and the connection stays in step.
//
// Requests: RESP arrays or inline commands (resp::scan_request, parse_request),
// forwarded as the bytes that came (inline ones re-encoded as RESP). Commands that would
// leave state on a shared connection, and the deny list's, are answered with an error
// (command_policy.hpp). MULTI ... EXEC and WATCH ... EXEC run on one connection, held
// from MULTI or WATCH to EXEC, DISCARD or UNWATCH for at most request_timeout from the
// turn that opened it; a client that leaves or runs out of time holding it releases it
// dirty. The proxy answers its own commands (AUTH, CLIENT SETNAME, ...) and errors in
// order, after the replies to what came before.
//
// Bounds per client: max_request_bytes for one request; max_client_pipeline requests
// read ahead of their replies (beyond, the client is not read until replies go out);
// max_reply_backlog bytes of replies it has not read (the same). Deadlines are kept by
// one timer for the whole proxy, not one per request.
//
// Tenants: a client is tenant "default" until it sends CLIENT SETNAME <tenant> or
// AUTH <tenant> <password> (AUTH <password> names "default"; passwords from
// tenant_passwords, AUTH refused without them); 1..64 characters of [A-Za-z0-9_.:-].
// The proxy answers both itself, never forwarding them. All connections of one tenant
// share that tenant's handle.
//
// Single-threaded: run the executor's context on one thread. close() must complete
// before the object is destroyed.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend_connection.hpp"
#include "command_policy.hpp"
#include "fairpool/asio/pool.hpp"
#include "fairpool/asio/handle_stats.hpp"
#include "fairpool/asio/pool_stats.hpp"

namespace fairpool::demo {

// The demo's pool: 8 slots, 2 kept warm, connections recycled after 60 s idle or
// 10 min of life, spawn backoff 100 ms doubling to 2 s, 4096 waiters; checks (PING) and
// resets (RESET) bounded by 1 s, and off until check_after_idle, keepalive_interval or
// reset_on_release turn them on. Acquires wait at most a request's request_timeout and
// backend connections take at most connect_timeout to make (the pool's own 30 s bounds,
// acquire_timeout and create_timeout, are never the first to expire).
[[nodiscard]] fairpool::pool_options default_proxy_pool_options();

inline constexpr std::string_view metrics_pool_label = "demo";

struct proxy_options {
    boost::asio::ip::tcp::endpoint listen{boost::asio::ip::address_v4::loopback(), 0};
    boost::asio::ip::tcp::endpoint backend;
    fairpool::pool_options pool = default_proxy_pool_options();
    std::size_t max_clients = 256;           // beyond: "-ERR max number of clients reached", then close
    std::size_t max_tenants = 256;           // beyond: CLIENT SETNAME and AUTH get "-ERR too many tenants", and a new
                                             // client (tenant "default") while that one is absent is told so and closed
    std::size_t max_request_bytes = 64 * 1024;  // beyond: "-ERR request too large", then close
    std::chrono::milliseconds request_timeout{1000};
    std::chrono::milliseconds connect_timeout{1000};  // connect + PING handshake of a backend connection
    std::size_t max_batch_commands = 16;        // pipelined requests forwarded per turn (>= 1)
    std::size_t max_batch_bytes = 64 * 1024;    // and their bytes (a turn takes at least one request)
    std::size_t max_client_pipeline = 256;      // requests of one client read ahead of their replies (>= 1)
    std::size_t max_reply_backlog = 1024 * 1024;  // reply bytes a client has not read before it is read no more
    std::map<std::string, std::string, std::less<>> tenant_passwords;  // AUTH <tenant> <password>; empty: AUTH refused
    deny_list denied = default_deny_list();     // refused commands ("NAME" or "NAME SUBCOMMAND", upper case)
};

// Counters, readable from any thread.
struct proxy_totals {
    std::uint64_t clients_accepted = 0;
    std::uint64_t clients_refused = 0;
    std::uint64_t requests = 0;
    std::uint64_t backend_replies = 0;  // replies relayed from the backend
    std::uint64_t errors_busy = 0;
    std::uint64_t errors_timeout = 0;
    std::uint64_t errors_unavailable = 0;
    std::uint64_t errors_other = 0;  // protocol, unknown command, shutting down, ...
    std::uint64_t turns = 0;              // turns on the wire (backend round trips)
    std::uint64_t cut_by_timeout = 0;     // turns on the wire when they timed out, and transactions held too long: released dirty
    std::uint64_t cut_by_disconnect = 0;  // turns (and held transactions) whose client went: released dirty
    std::uint64_t backend_failures = 0;   // I/O error on the backend connection: released dirty
};

class proxy_server {
public:
    // Listens at once; throws if the port is taken or the options are invalid.
    proxy_server(boost::asio::any_io_executor ex, proxy_options options);
    proxy_server(const proxy_server&) = delete;
    proxy_server& operator=(const proxy_server&) = delete;
    ~proxy_server();

    [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const { return endpoint_; }

    // Stops accepting; lets requests in flight finish (their clients get their reply),
    // closes every client, then closes the pool (each backend connection gets QUIT).
    // After `grace`, clients still busy are cut off. Completes with the pool's report.
    boost::asio::awaitable<fairpool::close_report> close(std::chrono::milliseconds grace);

    [[nodiscard]] ::fairpool::pool_stats pool_stats() const noexcept { return pool_.stats(); }
    // The pool itself, for what reads it (its Prometheus text, its diagnostics).
    [[nodiscard]] const fairpool::pool<backend_connection>& backend_pool() const noexcept { return pool_; }
    // The most backend connections the pool may ever hold (its slot_capacity).
    [[nodiscard]] std::size_t slot_capacity() const noexcept {
        return options_.pool.slot_capacity.value_or(options_.pool.max_slots);
    }
    // The pool's flight recorder (proxy_options::pool.recording): blocks while it writes.
    [[nodiscard]] boost::system::error_code dump_recording(const std::filesystem::path& dir) const {
        return pool_.dump_recording(dir);
    }
    [[nodiscard]] std::optional<fairpool::recording_status> recording_status() const {
        return pool_.recording_status();
    }
    [[nodiscard]] proxy_totals totals() const noexcept;
    // The /metrics page (fairpool::prometheus_text): the pool's counters, then each
    // connected tenant's handle statistics (label tenant="<name>"), all with pool="demo".
    // A tenant with no client connected has no handle, and no series. Call it on the
    // executor's thread.
    [[nodiscard]] std::string metrics_text() const;
    [[nodiscard]] std::size_t clients() const noexcept { return clients_.load(); }
    // A connected tenant's handle statistics (its grants are its turns); nullopt if no
    // client of that tenant is connected. Call it on the executor's thread.
    [[nodiscard]] std::optional<fairpool::handle_stats> tenant_stats(std::string_view tenant) const;

private:
    struct session;
    struct tenant;
    struct turn;
    struct counters;
    enum class cut_reason : std::uint8_t;

    boost::asio::awaitable<void> accept_loop();
    // Answers `why` (an error message) and closes: a client the proxy cannot take.
    boost::asio::awaitable<void> refuse(boost::asio::ip::tcp::socket socket, std::string_view why);

    // A client: reading, parsing, writing, leaving.
    void start_read(session& s);
    void read_now(session& s);
    void process_input(session& s);
    void flush_replies(session& s);
    void resume(session& s);        // after progress: parse, read, close when finished
    void finish_if_done(session& s);
    void client_gone(session& s);
    void end_session(session& s);
    std::string answer_locally(session& s, const command_class& c, std::string_view request,
                               const std::vector<std::string>* inline_args);
    std::string switch_tenant(session& s, const std::string& name);

    // Turns.
    void make_ready(session& s);
    void request_turns(tenant& t);
    void on_granted(turn& tr, boost::system::error_code ec, fairpool::lease<backend_connection> lease);
    void fill(turn& tr, tenant& t);
    void start_wire(turn& tr);
    void on_reply(turn& tr, std::string_view frame);
    void on_done(turn& tr, boost::system::error_code ec);
    void finish_part(turn& tr, std::size_t index, std::string_view error_reply);
    void cut(turn& tr, cut_reason why);
    turn& take_turn(tenant& t);
    void recycle(turn& tr);
    std::string acquire_error(boost::system::error_code ec, std::size_t requests);

    // The one deadline timer.
    void arm_sweep(std::chrono::steady_clock::time_point at);
    void sweep();

    bool join_tenant(session& s, const std::string& name);
    void leave_tenant(session& s);
    void forget_if_unused(tenant& t);

    proxy_options options_;
    boost::asio::any_io_executor executor_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::endpoint endpoint_;
    fairpool::pool<backend_connection> pool_;
    std::map<std::string, std::unique_ptr<tenant>, std::less<>> tenants_;
    std::unordered_map<session*, std::shared_ptr<session>> sessions_;
    std::vector<std::unique_ptr<turn>> turns_;  // every turn made; the idle ones in free_turns_
    std::vector<turn*> free_turns_;
    boost::asio::steady_timer sweep_;
    std::chrono::steady_clock::time_point sweep_at_;
    bool sweep_armed_ = false;
    std::unique_ptr<counters> counters_;
    std::atomic<std::size_t> clients_{0};
    bool stopping_ = false;
    bool accepting_ = false;
};

}  // namespace fairpool::demo
