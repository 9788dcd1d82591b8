#include "command_policy.hpp"

#include "resp.hpp"

namespace fairpool::demo {

namespace {

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    for (const auto n : names)
        if (name == n) return true;
    return false;
}

command_class refuse(std::string message) { return {command_kind::refused, {}, std::move(message)}; }

}  // namespace

deny_list default_deny_list() {
    return {"FLUSHALL", "FLUSHDB",      "CONFIG",        "SHUTDOWN",       "DEBUG",           "SAVE",
            "BGSAVE",   "BGREWRITEAOF", "REPLICAOF",     "SLAVEOF",        "FAILOVER",        "MODULE",
            "ACL",      "CLUSTER",      "SWAPDB",        "MIGRATE",        "SCRIPT FLUSH",    "SCRIPT KILL",
            "FUNCTION FLUSH", "FUNCTION KILL", "FUNCTION RESTORE", "CLIENT KILL"};
}

namespace {

// classify() but for the name it reports.
command_class kind_of(const std::string& name, const std::vector<std::string>& args, const deny_list& denied) {
    const std::string sub = args.size() > 1 ? resp::upper(args[1]) : std::string();
    if (denied.contains(name) || (!sub.empty() && denied.contains(name + " " + sub)))
        return refuse("ERR '" + (sub.empty() || denied.contains(name) ? name : name + " " + sub) +
                      "' is denied by this proxy (a server-wide or administrative command)");
    if (one_of(name, {"MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH"})) return {command_kind::transaction, {}, {}};
    if (name == "AUTH") {
        if (args.size() == 2 || args.size() == 3) return {command_kind::auth, {}, {}};
        return refuse("ERR wrong number of arguments for 'auth' command");
    }
    if (name == "QUIT") return {command_kind::quit, {}, {}};
    if (name == "CLIENT") {
        if (sub == "SETNAME" && args.size() == 3) return {command_kind::set_name, {}, {}};
        if (sub == "GETNAME" && args.size() == 2) return {command_kind::get_name, {}, {}};
        if (sub == "ID" || sub == "INFO") return {command_kind::forward, {}, {}};
        return refuse("ERR 'CLIENT " + sub.substr(0, 32) +
                      "' would change a shared backend connection: only CLIENT SETNAME, GETNAME, ID and INFO "
                      "pass this proxy");
    }
    if (name == "SELECT") {
        if (args.size() == 2 && args[1] == "0") return {command_kind::select_zero, {}, {}};
        return refuse("ERR SELECT: this proxy serves database 0 only");
    }
    if (name == "HELLO") {
        if (args.size() >= 2 && args[1] != "2") return refuse("NOPROTO this proxy speaks RESP2 only");
        return refuse("ERR HELLO is not supported by this proxy (it speaks RESP2; name the tenant with AUTH or "
                      "CLIENT SETNAME)");
    }
    if (one_of(name, {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
                      "MONITOR", "SYNC", "PSYNC"}))
        return refuse("ERR '" + name + "' would hold a shared backend connection for ever: not supported by this proxy");
    if (one_of(name, {"RESET", "READONLY", "READWRITE", "WAIT", "WAITAOF"}))
        return refuse("ERR '" + name + "' would change a shared backend connection: not supported by this proxy");
    return {command_kind::forward, {}, {}};
}

}  // namespace

command_class classify(const std::vector<std::string>& args, const deny_list& denied) {
    std::string name = resp::upper(args[0]);
    command_class c = kind_of(name, args, denied);
    c.name = std::move(name);
    return c;
}

void transaction_state::after(std::string_view name) noexcept {
    if (name == "MULTI") in_multi = true;
    else if (name == "WATCH") watching = true;
    else if (name == "EXEC" || name == "DISCARD") in_multi = watching = false;
    else if (name == "UNWATCH" && !in_multi) watching = false;
}

}  // namespace fairpool::demo
