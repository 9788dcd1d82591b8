#include "fairpool/budget/options.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>

namespace fairpool::budget {

std::optional<std::string> validate(const budget_options& o) {
    const auto name_char = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '.' || c == ':';
    };
    if (o.name.empty() || o.name.size() > 64 || !std::all_of(o.name.begin(), o.name.end(), name_char))
        return "name must be 1..64 letters, digits or -_.: (got '" + o.name + "')";
    if (o.budget < 1) return "budget must be at least 1";
    if (o.budget > 1'000'000) return "budget must be at most 1000000";
    if (o.fallback > o.budget) return "fallback (" + std::to_string(o.fallback) + ") above the budget (" +
                                      std::to_string(o.budget) + ")";
    if (o.member_id.size() > 200 || std::any_of(o.member_id.begin(), o.member_id.end(),
                                                [](unsigned char c) { return c <= ' ' || c == 127; }))
        return "member_id must be at most 200 printable characters without spaces";
    using ms = std::chrono::milliseconds;
    if (o.refresh_interval < ms(10)) return "refresh_interval must be at least 10 ms";
    if (o.refresh_interval >= o.lease) return "refresh_interval must be below lease";
    if (!(o.refresh_jitter >= 0 && o.refresh_jitter < 0.5)) return "refresh_jitter must be in [0, 0.5)";
    if (o.min_refresh_gap < ms(0) || o.min_refresh_gap > o.refresh_interval)
        return "min_refresh_gap must be in [0, refresh_interval]";
    if (o.grace < ms(0)) return "grace must not be negative";
    if (o.lease_margin <= ms(0) || o.lease_margin >= o.lease) return "lease_margin must be in (0, lease)";
    if (o.call_timeout <= ms(0) || o.connect_timeout <= ms(0)) return "timeouts must be positive";
    if (o.refresh_interval + o.call_timeout >= o.lease - o.lease_margin)
        return "refresh_interval + call_timeout must be below lease - lease_margin (a member would fall back "
               "between two timely refreshes)";
    if (o.forget_after < o.lease + o.grace) return "forget_after must be at least lease + grace";
    if (o.reconnect_backoff_initial <= ms(0) || o.reconnect_backoff_max < o.reconnect_backoff_initial)
        return "reconnect backoff must be positive, max >= initial";
    if (o.redis.port() == 0) return "redis endpoint has no port";
    if (o.user.size() && o.password.empty()) return "a Redis user needs a password";
    return std::nullopt;
}

std::string default_member_id() {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host = {'h', 'o', 's', 't'};
    std::random_device device;
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%08x%08x", device(), device());
    std::string id = host.data();
    std::replace_if(id.begin(), id.end(), [](unsigned char c) { return c <= ' ' || c == 127; }, '_');
    return id + ":" + std::to_string(::getpid()) + ":" + nonce;
}

}  // namespace fairpool::budget
