#pragma once
// The pooled Redis proxy: accepts RESP clients on loopback, identifies each client's
// tenant, and forwards each request over a leased backend connection, one fairpool
// handle per tenant (the unit of fairness).
//
// Every request gets exactly one reply: the backend's, or a RESP error —
//   -BUSY pool saturated          the pool refused the acquire (saturated or busy)
//   -ERR timeout                  no reply within request_timeout (waiting included)
//   -ERR backend unavailable      the backend connection failed, or none could be made
//   -ERR shutting down            the proxy is closing
//   -ERR protocol error / request too large / unknown command / too many tenants
// except when the client itself disconnected. A request cut off while on the wire
// (request timeout, client disconnect, I/O error) releases its lease dirty: that
// backend connection is closed, never reused.
//
// Requests: RESP arrays or inline commands (resp::parse_request). The complete requests
// a client has sent are forwarded as one pipeline over one lease, up to
// max_batch_commands and max_batch_bytes a turn (the rest take the tenant's next turn);
// replies come back in order. Commands that would leave state on a shared connection,
// and the deny list's, are answered with an error (command_policy.hpp). MULTI ... EXEC
// and WATCH ... EXEC run on one connection, held from MULTI or WATCH to EXEC, DISCARD or
// UNWATCH for at most request_timeout; a client that leaves or runs out of time holding
// it releases it dirty.
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
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "backend_connection.hpp"
#include "command_policy.hpp"
#include "fairpool/asio/pool.hpp"
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
    std::size_t max_tenants = 256;           // beyond: CLIENT SETNAME gets "-ERR too many tenants"
    std::size_t max_request_bytes = 64 * 1024;  // beyond: "-ERR request too large", then close
    std::chrono::milliseconds request_timeout{1000};
    std::chrono::milliseconds connect_timeout{1000};  // connect + PING handshake of a backend connection
    std::size_t max_batch_commands = 16;        // pipelined requests forwarded per turn (>= 1)
    std::size_t max_batch_bytes = 64 * 1024;    // and their bytes (a turn takes at least one request)
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
    std::uint64_t cut_by_timeout = 0;     // on the wire when the request timed out: released dirty
    std::uint64_t cut_by_disconnect = 0;  // on the wire when the client went: released dirty
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

private:
    struct session;
    struct tenant;
    struct counters;

    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> refuse(boost::asio::ip::tcp::socket socket);
    boost::asio::awaitable<void> serve(std::shared_ptr<session> s);
    // The replies to `batch`, in order (nullopt: the client went away).
    struct batch;
    boost::asio::awaitable<std::optional<std::string>> forward(session& s, batch& b);
    std::string answer_locally(session& s, const std::vector<std::string>& args, const command_class& c);
    std::string switch_tenant(session& s, const std::string& name);
    std::string acquire_error(boost::system::error_code ec);
    bool join_tenant(session& s, const std::string& name);
    void leave_tenant(session& s);

    proxy_options options_;
    boost::asio::any_io_executor executor_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::endpoint endpoint_;
    fairpool::pool<backend_connection> pool_;
    std::map<std::string, std::unique_ptr<tenant>, std::less<>> tenants_;
    std::unordered_set<session*> sessions_;
    std::unique_ptr<counters> counters_;
    std::atomic<std::size_t> clients_{0};
    bool stopping_ = false;
    bool accepting_ = false;
};

}  // namespace fairpool::demo
