#pragma once
// The pool's resources: one optional Resource per slot, made by the user's factory and
// closed by the user's close function, both outside the actor. The actor only says
// when (spawn and retire effects); each coroutine reports back with a slot event
// (spawned, spawn_failed, retired) through the mailbox. The scheduler's slot states
// order the accesses: a slot's resource is written by its spawn, read by its lease
// holder, taken by its retirement, one at a time.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fairpool/core/event.hpp"

namespace fairpool::detail {

template <class Resource>
struct resource_slots {
    using create_function = std::function<boost::asio::awaitable<Resource>()>;
    using close_function = std::function<boost::asio::awaitable<void>(Resource&)>;

    resource_slots(std::uint32_t max_slots, create_function c, close_function d)
        : slots(max_slots), create(std::move(c)), close(std::move(d)) {}

    std::vector<std::optional<Resource>> slots;
    create_function create;
    close_function close;
};

// State: the pool's actor; it provides get_executor(), resources(), retire_grace(),
// timer_type and push_slot_result(kind, slot).
template <class State>
boost::asio::awaitable<void> create_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    auto& resources = self->resources();
    bool created = false;
    try {
        resources.slots[slot].emplace(co_await resources.create());
        created = true;
    } catch (...) {
    }
    self->push_slot_result(created ? core::event_kind::spawned : core::event_kind::spawn_failed, slot);
}

// A graceful close bounded by retire_grace, then the resource is dropped.
template <class State>
boost::asio::awaitable<void> destroy_resource(std::shared_ptr<State> self, std::uint32_t slot) {
    auto& resources = self->resources();
    std::optional<typename decltype(resources.slots)::value_type::value_type> resource =
        std::move(resources.slots[slot]);
    resources.slots[slot].reset();
    if (resource && resources.close) {
        using namespace boost::asio::experimental::awaitable_operators;
        typename State::timer_type grace(co_await boost::asio::this_coro::executor,
                                         std::chrono::ceil<typename State::clock_type::duration>(self->retire_grace()));
        try {
            co_await (resources.close(*resource) || grace.async_wait(boost::asio::use_awaitable));
        } catch (...) {
        }
    }
    resource.reset();
    self->push_slot_result(core::event_kind::retired, slot);
}

// Starts a coroutine on the pool's executor from a posted handler: co_spawn may run a
// coroutine's first step inline, and the user's factory or close function must never
// run inside the drain that asked for it.
template <class State, class Coroutine>
void start_outside_actor(std::shared_ptr<State> self, std::uint32_t slot, Coroutine coroutine) {
    auto ex = self->get_executor();
    boost::asio::post(ex, [self = std::move(self), slot, coroutine]() mutable {
        auto executor = self->get_executor();
        boost::asio::co_spawn(executor, coroutine(std::move(self), slot), boost::asio::detached);
    });
}

}  // namespace fairpool::detail
