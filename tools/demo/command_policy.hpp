#pragma once
// Which client commands the proxy forwards, answers itself or refuses (docs/DEMO.md,
// "Commands"). A backend connection serves many clients one request or transaction at
// a time, so a command that would leave state on it for its next user is never
// forwarded: the proxy answers it, or refuses it with an error that says why. Server-wide
// and administrative commands are refused by a deny list (proxy_options::denied), whose
// default keeps a tenant from touching what every tenant shares.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace fairpool::demo {

enum class command_kind {
    forward,      // relayed to the backend as it is
    transaction,  // MULTI, EXEC, DISCARD, WATCH, UNWATCH: relayed, on a connection held until the end
    auth,         // AUTH [tenant] password: names the client's tenant (never forwarded)
    set_name,     // CLIENT SETNAME tenant: names the client's tenant
    get_name,     // CLIENT GETNAME: the client's tenant
    quit,         // QUIT: +OK, then the proxy closes the client
    select_zero,  // SELECT 0: +OK (every backend connection is on database 0)
    refused,      // state-changing or denied: an error naming why
};

// What a relayed command does to its connection's transaction state.
enum class transaction_op : std::uint8_t { none, multi, exec, discard, watch, unwatch };

struct command_class {
    command_kind kind = command_kind::forward;
    transaction_op op = transaction_op::none;
    // Forwarded in a turn of its client's own, never beside other clients' requests: a
    // transaction command, or one that blocks its connection (BLPOP, XREAD, ...).
    bool solo = false;
    std::string refusal;  // for refused: the whole error message ("ERR ...")
};

// "FLUSHALL", "CONFIG", "SCRIPT FLUSH", ...: a command name, or a name and its first
// argument, upper case.
using deny_list = std::set<std::string, std::less<>>;

// FLUSHALL, FLUSHDB, CONFIG, SHUTDOWN, DEBUG, SAVE, BGSAVE, BGREWRITEAOF, REPLICAOF,
// SLAVEOF, FAILOVER, MODULE, ACL, CLUSTER, SWAPDB, MIGRATE, SCRIPT FLUSH, SCRIPT KILL,
// FUNCTION FLUSH, FUNCTION KILL, FUNCTION RESTORE and CLIENT KILL.
[[nodiscard]] deny_list default_deny_list();

// A request of `argc` >= 1 arguments, by its name and first argument (empty if none),
// in any case. Allocates only to refuse.
[[nodiscard]] command_class classify(std::string_view name, std::string_view first, std::size_t argc,
                                     const deny_list& denied);

// The transaction state relayed commands leave on their connection, as the proxy
// tracks it: MULTI opens one, EXEC and DISCARD end it (and any WATCH), WATCH holds the
// connection until EXEC, DISCARD or UNWATCH.
struct transaction_state {
    bool in_multi = false;
    bool watching = false;
    [[nodiscard]] bool holds_connection() const noexcept { return in_multi || watching; }
    void after(transaction_op op) noexcept;
};

}  // namespace fairpool::demo
