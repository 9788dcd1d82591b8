#include "command_policy.hpp"

#include <array>
#include <cctype>

namespace fairpool::demo {

namespace {

// A command's name or argument in upper case, in place: longer than any command
// (`fits` false) is never denied nor handled here, only forwarded.
class upper_word {
public:
    explicit upper_word(std::string_view s) : size_(s.size()) {
        if (!fits()) return;
        for (std::size_t i = 0; i < size_; ++i)
            text_[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
    }
    [[nodiscard]] bool fits() const noexcept { return size_ <= text_.size(); }
    [[nodiscard]] std::string_view view() const noexcept { return {text_.data(), fits() ? size_ : 0}; }

private:
    std::array<char, 48> text_{};
    std::size_t size_;
};

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    for (const auto n : names)
        if (name == n) return true;
    return false;
}

command_class refuse(std::string message) { return {command_kind::refused, transaction_op::none, false, std::move(message)}; }
command_class handled(command_kind kind) { return {kind, transaction_op::none, false, {}}; }

transaction_op op_of(std::string_view name) {
    if (name == "MULTI") return transaction_op::multi;
    if (name == "EXEC") return transaction_op::exec;
    if (name == "DISCARD") return transaction_op::discard;
    if (name == "WATCH") return transaction_op::watch;
    if (name == "UNWATCH") return transaction_op::unwatch;
    return transaction_op::none;
}

// Commands that may wait on the server for their reply: the rest of their connection's
// pipeline waits behind them.
bool blocks(std::string_view name) {
    return one_of(name, {"BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
                         "XREAD", "XREADGROUP"});
}

bool denied_as(const deny_list& denied, std::string_view name, std::string_view sub) {
    if (denied.contains(name)) return true;
    if (sub.empty()) return false;
    std::array<char, 2 * 48 + 1> both{};
    std::size_t n = 0;
    for (const char c : name) both[n++] = c;
    both[n++] = ' ';
    for (const char c : sub) both[n++] = c;
    return denied.contains(std::string_view(both.data(), n));
}

}  // namespace

deny_list default_deny_list() {
    return {"FLUSHALL", "FLUSHDB",      "CONFIG",        "SHUTDOWN",       "DEBUG",           "SAVE",
            "BGSAVE",   "BGREWRITEAOF", "REPLICAOF",     "SLAVEOF",        "FAILOVER",        "MODULE",
            "ACL",      "CLUSTER",      "SWAPDB",        "MIGRATE",        "SCRIPT FLUSH",    "SCRIPT KILL",
            "FUNCTION FLUSH", "FUNCTION KILL", "FUNCTION RESTORE", "CLIENT KILL"};
}

command_class classify(std::string_view raw_name, std::string_view raw_first, std::size_t argc,
                       const deny_list& denied) {
    const upper_word upper_name(raw_name);
    if (!upper_name.fits()) return {};
    const std::string_view name = upper_name.view();
    const upper_word upper_sub(argc > 1 ? raw_first : std::string_view());
    const std::string_view sub = upper_sub.view();
    const auto text = [name] { return std::string(name); };  // for refusals only
    if (denied_as(denied, name, sub))
        return refuse("ERR '" + (sub.empty() || denied.contains(name) ? text() : text() + " " + std::string(sub)) +
                      "' is denied by this proxy (a server-wide or administrative command)");
    if (const auto op = op_of(name); op != transaction_op::none) return {command_kind::transaction, op, true, {}};
    if (name == "AUTH") {
        if (argc == 2 || argc == 3) return handled(command_kind::auth);
        return refuse("ERR wrong number of arguments for 'auth' command");
    }
    if (name == "QUIT") return handled(command_kind::quit);
    if (name == "CLIENT") {
        if (sub == "SETNAME" && argc == 3) return handled(command_kind::set_name);
        if (sub == "GETNAME" && argc == 2) return handled(command_kind::get_name);
        if (sub == "ID" || sub == "INFO") return {};
        return refuse("ERR 'CLIENT " + std::string(upper_word(raw_first.substr(0, 32)).view()) +
                      "' would change a shared backend connection: only CLIENT SETNAME, GETNAME, ID and INFO "
                      "pass this proxy");
    }
    if (name == "SELECT") {
        if (argc == 2 && raw_first == "0") return handled(command_kind::select_zero);
        return refuse("ERR SELECT: this proxy serves database 0 only");
    }
    if (name == "HELLO") {
        if (argc >= 2 && raw_first != "2") return refuse("NOPROTO this proxy speaks RESP2 only");
        return refuse("ERR HELLO is not supported by this proxy (it speaks RESP2; name the tenant with AUTH or "
                      "CLIENT SETNAME)");
    }
    if (one_of(name, {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
                      "MONITOR", "SYNC", "PSYNC"}))
        return refuse("ERR '" + text() + "' would hold a shared backend connection for ever: not supported by this proxy");
    if (one_of(name, {"RESET", "READONLY", "READWRITE", "WAIT", "WAITAOF"}))
        return refuse("ERR '" + text() + "' would change a shared backend connection: not supported by this proxy");
    if (blocks(name)) return {command_kind::forward, transaction_op::none, true, {}};
    return {};
}

void transaction_state::after(transaction_op op) noexcept {
    switch (op) {
        case transaction_op::multi: in_multi = true; break;
        case transaction_op::watch: watching = true; break;
        case transaction_op::exec:
        case transaction_op::discard: in_multi = watching = false; break;
        case transaction_op::unwatch:
            if (!in_multi) watching = false;
            break;
        case transaction_op::none: break;
    }
}

}  // namespace fairpool::demo
