#pragma once
// A lease: one grant of one resource, RAII. Destroying it (or release()) gives the
// resource back, from any thread, without blocking. Movable, not copyable; may outlive
// the pool.
//
// Clean or dirty, by one rule (a dirty resource is destroyed, never handed out again):
//  1. A lease destroyed during stack unwinding is dirty: it records
//     std::uncaught_exceptions() when it is constructed or moved into, on that thread,
//     and is dirty if more exceptions are in flight when it is destroyed. A coroutine
//     whose co_await throws (operation_aborted included) so gives its lease back dirty.
//  2. An in-flight guard marks it dirty if the guard ends without done():
//        auto guard = lease.in_flight();
//        auto [ec, n] = co_await op(*lease, asio::as_tuple(asio::use_awaitable));
//        guard.done();  // or (op || timer), a parallel_group, a catch
//     So an operation that errs by error code, loses a race or is cancelled leaves the
//     resource dirty unless the code says it finished. The lease must stay where it is
//     while a guard is out (not moved, not released).
//  3. Any other way it goes is clean, unless mark_dirty() was called. A lease that a
//     composition discards before user code saw it (a timer won an `acquire || timer`)
//     is clean: nothing was done with its resource.
#include <boost/assert.hpp>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>

#include "fairpool/asio/detail/uncaught_exceptions.hpp"
#include "fairpool/asio/fwd.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool {

template <class Lease>
class in_flight_guard;

template <class Resource, class Clock, class WaitTraits>
class lease {
public:
    lease() noexcept = default;
    // Inline, always: a lease is moved several times on its way to the caller (GCC left
    // it out of line once it read the thread's exception count: +110 instructions per
    // contended acquire, callgrind).
    [[gnu::always_inline]] lease(lease&& other) noexcept
        : state_(std::move(other.state_)), slot_(other.slot_), id_(other.id_), dirty_(other.dirty_) {
        if (state_) unwinding_ = detail::uncaught_exceptions();  // an empty lease gives nothing back
    }
    lease& operator=(lease&& other) noexcept {
        if (this != &other) {
            go_back();
            state_ = std::move(other.state_);
            slot_ = other.slot_, id_ = other.id_, dirty_ = other.dirty_;
            if (state_) unwinding_ = detail::uncaught_exceptions();
        }
        return *this;
    }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { go_back(); }

    [[nodiscard]] explicit operator bool() const noexcept { return state_ != nullptr; }
    [[nodiscard]] Resource& operator*() const noexcept {
        BOOST_ASSERT_MSG(state_, "fairpool::lease: * on an empty lease (failed acquire, released or moved from)");
        return state_->resource(slot_);
    }
    [[nodiscard]] Resource* operator->() const noexcept {
        BOOST_ASSERT_MSG(state_, "fairpool::lease: -> on an empty lease (failed acquire, released or moved from)");
        return &state_->resource(slot_);
    }

    // The resource must not be reused: it is retired when the lease is released.
    void mark_dirty() noexcept { dirty_ = true; }
    [[nodiscard]] bool dirty() const noexcept { return dirty_; }

    // A guard around an operation on the resource: dirty unless done() (rule 2 above).
    [[nodiscard]] in_flight_guard<lease> in_flight() noexcept { return in_flight_guard<lease>(*this); }

    // Gives the resource back now, clean unless marked dirty; the lease becomes empty.
    // Idempotent. Inline, the work out of line: a moved-from lease costs a test.
    void release() noexcept {
        if (state_) give_back();
    }

    [[nodiscard]] std::uint32_t slot() const noexcept { return slot_; }
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

private:
    // Destroyed or assigned over: dirty if more exceptions are in flight than when it
    // came here (rule 1). Inline, the work out of line: most leases destroyed are
    // moved-from ones.
    void go_back() noexcept {
        if (state_) give_back_at_end();
    }
    [[gnu::noinline]] void give_back_at_end() noexcept {
        if (detail::uncaught_exceptions() > unwinding_) dirty_ = true;
        give_back();
    }

    // Its reference to the pool goes along: released on the pool's executor, where the
    // actor takes it back for the slot's next lease (slot_keeping.hpp: lease tokens);
    // otherwise dropped here, once the release is in the mailbox.
    [[gnu::noinline]] void give_back() noexcept {
        state_->release(slot_, id_, dirty_ ? core::release_outcome::dirty : core::release_outcome::clean, state_);
        state_.reset();
    }

    using state_type = detail::pool_state<Resource, Clock, WaitTraits>;
    friend state_type;
    lease(std::shared_ptr<state_type> state, std::uint32_t slot, std::uint64_t id) noexcept
        : state_(std::move(state)), slot_(slot), id_(id), unwinding_(detail::uncaught_exceptions()) {}

    std::shared_ptr<state_type> state_;
    std::uint32_t slot_ = 0;
    std::uint64_t id_ = 0;
    bool dirty_ = false;
    int unwinding_ = 0;  // std::uncaught_exceptions() where it was made or moved into
};

// Marks its lease dirty when it ends, unless done() was called first. Made by
// lease::in_flight(); neither copied nor moved.
template <class Lease>
class in_flight_guard {
public:
    explicit in_flight_guard(Lease& l) noexcept : lease_(&l) {}
    in_flight_guard(const in_flight_guard&) = delete;
    in_flight_guard& operator=(const in_flight_guard&) = delete;
    ~in_flight_guard() {
        if (lease_ != nullptr) lease_->mark_dirty();
    }
    // The operation finished and left the resource fit for reuse.
    void done() noexcept { lease_ = nullptr; }

private:
    Lease* lease_;
};

}  // namespace fairpool
