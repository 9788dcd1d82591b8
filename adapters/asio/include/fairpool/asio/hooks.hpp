#pragma once
// What a pool does with its resources, by name: the user's coroutines that make, close,
// check and reset one. Only `create` is required.
//
//   fairpool::pool<conn> pool(ex, options, fairpool::resource_hooks<conn>{
//       .create = [&]() -> awaitable<conn> { co_return co_await conn::connect(...); },
//       .close = [](conn& c) -> awaitable<void> { co_await c.quit(); },
//       .check = [](conn& c) -> awaitable<bool> { co_return co_await c.ping(); },
//       .reset = [](conn& c) -> awaitable<bool> { co_return co_await c.discard_session(); },
//   });
//
// Every member has a default (empty), so designated initializers may name only the
// hooks they give. Every hook runs on the pool's executor, never inside the pool's
// actor, and one at a time per resource: while a check or a reset runs, nobody holds
// the resource. Calls for different slots each run on a strand of their own, so on a
// context run by several threads they may run at once: a hook must be safe to call
// concurrently. A hook must not hold a pool or handle object of its own pool (a copy
// captured by value): the pool stays open while one exists, so dropping every other
// would not shut it down, and the state holding the hook would never be freed. A check
// or reset past its timeout (pool_options::check_timeout, reset_timeout) is cancelled
// through its cancellation slot, and its resource closed only once it has returned: a
// hook must honour cancellation.
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>
#include <string>

#include "fairpool/asio/options.hpp"

namespace fairpool {

template <class Resource>
struct resource_hooks {
    // Makes a resource. Throwing, or taking longer than pool_options::create_timeout
    // (30 s unless set; it is then cancelled, and a resource it still returns is
    // destroyed unused), is a failed spawn: the pool backs off (spawn_backoff_initial, doubling to
    // spawn_backoff_max).
    std::function<boost::asio::awaitable<Resource>()> create{};

    // Closes a resource gracefully before it is dropped; after retire_grace it is
    // cancelled and its slot freed anyway (the resource is destroyed when it returns).
    // Optional: without it a retired resource is just destroyed.
    std::function<boost::asio::awaitable<void>(Resource&)> close{};

    // Is this idle resource still usable (a PING)? true: alive, it is granted or kept
    // idle. false, a throw, or no answer within check_timeout: dead, it is closed and
    // replaced as needed. Needed by pool_options::check_after_idle and keepalive_interval.
    std::function<boost::asio::awaitable<bool>(Resource&)> check{};

    // Brings a resource released clean back to a fresh state before anyone reuses it
    // (Redis RESET, PostgreSQL DISCARD ALL). true: ok, it is idle again. false, a throw,
    // or no answer within reset_timeout: failed, it is retired (reason reset_failed).
    // Needed by pool_options::reset_on_release.
    std::function<boost::asio::awaitable<bool>(Resource&)> reset{};
};

// Empty if the hooks can serve these options, else "FIELD: why". A setting that needs a
// hook the pool was not given is refused rather than ignored: a pool told to check its
// connections must never quietly hand out unchecked ones.
template <class Resource>
[[nodiscard]] std::optional<std::string> validate(const pool_options& o, const resource_hooks<Resource>& hooks) {
    if (!hooks.create) return std::string("hooks.create: a pool needs a function that makes its resources");
    const auto needs = [](const char* field, const char* hook) {
        return std::string(field) + ": is set, but the pool has no " + hook + " hook (resource_hooks::" + hook + ")";
    };
    if (!hooks.check && o.check_after_idle != forever) return needs("check_after_idle", "check");
    if (!hooks.check && o.keepalive_interval != forever) return needs("keepalive_interval", "check");
    if (!hooks.reset && o.reset_on_release) return needs("reset_on_release", "reset");
    return std::nullopt;
}

}  // namespace fairpool
