#pragma once
// The pool's resources: one optional Resource per slot, made, checked, reset and closed
// by the user's hooks (resource_hooks), all outside the actor. The actor only says when
// (spawn, check, reset and retire effects); each coroutine reports back with a slot
// event (spawned, spawn_failed, checked, reset_done, retired) through the mailbox. The
// scheduler's slot states order the accesses: a slot's resource is written by its
// spawn, read by its lease holder or its check or reset, taken by its retirement, one
// at a time.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "fairpool/asio/detail/saturating_time.hpp"
#include "fairpool/asio/hooks.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool::detail {

template <class Resource>
struct resource_slots {
    resource_slots(std::uint32_t max_slots, resource_hooks<Resource> h) : slots(max_slots), hooks(std::move(h)) {}

    std::vector<std::optional<Resource>> slots;
    const resource_hooks<Resource> hooks;
};

// A hook's result, with a throw as `failed`. The || operator waits for the first
// operation to *succeed*: a hook that threw would otherwise count only once the timer
// beside it had run out.
template <class Result, class Call>
boost::asio::awaitable<Result> or_on_throw(Call call, Result failed) {
    try {
        co_return co_await call();
    } catch (...) {
        co_return failed;
    }
}

// A timer's wait as an awaitable of its error code rather than one that throws when
// the wait is cancelled: a hook that wins its race against the timer cancels it, and an
// exception per check or close would cost more than the rest of the check together.
inline constexpr auto as_value = boost::asio::as_tuple(boost::asio::use_awaitable);

// A hook's one report, from whichever of two racing branches comes first.
class first_report {
public:
    [[nodiscard]] bool claim() noexcept { return !reported_.exchange(true, std::memory_order_acq_rel); }
    [[nodiscard]] bool claimed() const noexcept { return reported_.load(std::memory_order_acquire); }

private:
    std::atomic<bool> reported_{false};
};

// State: the pool's actor; it provides get_executor(), resources(), create_timeout(),
// retire_grace(), check_timeout(), reset_timeout(), timer_type, clock_type and
// push_slot_result(kind, slot, passed).
//
// A spawn: `spawned` with the resource in its slot, or `spawn_failed` when the factory
// throws or, with a create_timeout (0: none), the timeout runs out first. At the
// timeout the failure is reported at once (the slot may be spawned again), then the
// factory is cancelled (the || operator's cancellation slot); a resource it still
// returns is destroyed unused, never put in the slot. The timer is made only if the
// factory has not reported by the time the timeout's branch has yielded once (its
// expiry still counted from the spawn's start): a factory that completes at once (a
// resource made in memory, a worker taken from a set) costs no timer, and without a
// create_timeout none is ever made. Either way a pool whose context has no other timer
// or socket then runs no reactor (Asio makes its reactor with a context's first timer,
// and from then on every pass of run() polls it: ~170 instructions a round trip).
template <class State>
boost::asio::awaitable<void> create_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    using namespace boost::asio::experimental::awaitable_operators;
    auto& resources = self->resources();
    first_report report;
    const auto create = [&]() -> boost::asio::awaitable<bool> {
        auto made = co_await resources.hooks.create();
        if (!report.claim()) co_return false;  // too late: the slot failed, `made` goes here
        // Claimed: this is the one report. A Resource whose move throws here is a failed
        // spawn (the slot stays empty), never a spawn that reports nothing.
        bool placed = false;
        try {
            resources.slots[slot].emplace(std::move(made));
            placed = true;
        } catch (...) {
        }
        self->push_slot_result(placed ? core::event_kind::spawned : core::event_kind::spawn_failed, slot);
        co_return placed;
    };
    try {
        if (self->create_timeout().count() == 0) {
            co_await or_on_throw(create, false);
        } else {
            // Saturating, as a timer's expires_after is: a timeout near nanoseconds::max()
            // must not wrap around to a time long past.
            const auto expiry = saturating_after(State::clock_type::now(), self->create_timeout());
            const auto time_out = [&]() -> boost::asio::awaitable<void> {
                const auto ex = co_await boost::asio::this_coro::executor;
                co_await boost::asio::post(ex, boost::asio::use_awaitable);  // the factory first
                if (report.claimed()) co_return;                              // done at once: no timer
                typename State::timer_type limit(ex, expiry);
                const auto [ec] = co_await limit.async_wait(as_value);
                if (!ec && report.claim()) self->push_slot_result(core::event_kind::spawn_failed, slot);
            };
            co_await (or_on_throw(create, false) || time_out());
        }
    } catch (...) {  // the operator itself failed (out of memory): a failure, still reported
    }
    if (report.claim()) self->push_slot_result(core::event_kind::spawn_failed, slot);
}

// A graceful close bounded by retire_grace. The slot is reported retired when the close
// returns (or throws), its resource destroyed first; or when retire_grace runs out,
// whichever comes first. At the grace the hook is cancelled (the || operator's
// cancellation slot), and the slot is reported retired at once, without waiting for the
// hook to return: a hook that ignores cancellation must not keep its slot retiring (and
// counted against max_slots) for ever. The resource, out of the slot table since the
// retire effect, is destroyed when the hook does return, whenever that is.
template <class State>
boost::asio::awaitable<void> destroy_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    auto& resources = self->resources();
    // Out of the slot (which may be spawned again once reported retired). A Resource
    // whose move throws is destroyed in place, without its close hook: the slot is
    // still reported retired, once.
    std::optional<typename decltype(resources.slots)::value_type::value_type> resource;
    try {
        if (resources.slots[slot]) resource.emplace(std::move(*resources.slots[slot]));
    } catch (...) {
    }
    resources.slots[slot].reset();
    first_report reported;
    const auto report = [&] {
        if (reported.claim()) self->push_slot_result(core::event_kind::retired, slot);
    };
    if (resource && resources.hooks.close) {
        using namespace boost::asio::experimental::awaitable_operators;
        typename State::timer_type grace(co_await boost::asio::this_coro::executor,
                                         std::chrono::ceil<typename State::clock_type::duration>(self->retire_grace()));
        const auto close = [&]() -> boost::asio::awaitable<bool> {
            co_await resources.hooks.close(*resource);
            co_return true;
        };
        const auto grace_over = [&]() -> boost::asio::awaitable<void> {
            const auto [ec] = co_await grace.async_wait(as_value);
            if (!ec) report();  // before the || operator cancels the hook and waits for it
        };
        try {
            co_await (or_on_throw(close, false) || grace_over());
        } catch (...) {  // the operator itself failed (out of memory): the resource is dropped now
        }
    }
    resource.reset();
    report();
}

// A check or reset hook on a slot's resource, bounded by `timeout`: true only if it
// returned true in time. A throw or false is a failure; so is the timeout, after which
// the hook is cancelled through its cancellation slot (the || operator's), and this
// returns only once the hook has: until its result is reported, the resource stays in
// its slot, and only a retirement after that report closes it.
template <class State, class Hook, class Resource>
boost::asio::awaitable<bool> run_bounded(const Hook& hook, Resource& resource, std::chrono::nanoseconds timeout) {
    using namespace boost::asio::experimental::awaitable_operators;
    typename State::timer_type limit(co_await boost::asio::this_coro::executor,
                                     std::chrono::ceil<typename State::clock_type::duration>(timeout));
    try {
        const auto outcome =
            co_await (or_on_throw([&] { return hook(resource); }, false) || limit.async_wait(as_value));
        co_return outcome.index() == 0 && std::get<0>(outcome);
    } catch (...) {  // the operator itself failed (out of memory): a failure too, still reported
        co_return false;
    }
}

// A check of an idle resource (on checkout or keepalive): reports checked alive or dead.
template <class State>
boost::asio::awaitable<void> check_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    auto& resources = self->resources();
    const bool alive =
        co_await run_bounded<State>(resources.hooks.check, *resources.slots[slot], self->check_timeout());
    self->push_slot_result(core::event_kind::checked, slot, alive);
}

// A reset of a resource released clean: reports reset_done ok or failed.
template <class State>
boost::asio::awaitable<void> reset_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    auto& resources = self->resources();
    const bool ok = co_await run_bounded<State>(resources.hooks.reset, *resources.slots[slot], self->reset_timeout());
    self->push_slot_result(core::event_kind::reset_done, slot, ok);
}

// Starts a coroutine from a posted handler: co_spawn may run a coroutine's first step
// inline, and no user hook may ever run inside the drain that asked for it. Each
// coroutine runs on a strand of its own over the pool's executor: the || operator's
// branches (the hook, its timer) must never run on two threads at once, since a branch
// that completes cancels the other through Asio's cancellation slots, which are not
// thread-safe (on a context run by several threads, a hook finishing as its timeout
// fired freed what the other thread was cancelling).
template <class State, class Coroutine>
void start_outside_actor(std::shared_ptr<State> self, std::uint32_t slot, Coroutine coroutine) {
    auto ex = self->get_executor();
    boost::asio::post(ex, [self = std::move(self), slot, coroutine]() mutable {
        const auto pool_executor = self->get_executor();
        if (const auto* io = pool_executor.template target<boost::asio::io_context::executor_type>())
            boost::asio::co_spawn(boost::asio::make_strand(*io), coroutine(std::move(self), slot), boost::asio::detached);
        else
            boost::asio::co_spawn(boost::asio::make_strand(pool_executor), coroutine(std::move(self), slot),
                                  boost::asio::detached);
    });
}

}  // namespace fairpool::detail
