#pragma once
// A lease: one grant of one resource, RAII. Destroying it (or release()) gives the
// resource back, from any thread, without blocking: clean, unless mark_dirty() said an
// operation on it was cancelled or failed mid-way, in which case the pool destroys the
// resource and never hands it out again. Movable, not copyable; may outlive the pool.
#include <cstdint>
#include <memory>
#include <utility>

#include "fairpool/asio/fwd.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool {

template <class Resource, class Clock, class WaitTraits>
class lease {
public:
    lease() noexcept = default;
    lease(lease&& other) noexcept
        : state_(std::move(other.state_)), slot_(other.slot_), id_(other.id_), dirty_(other.dirty_) {}
    lease& operator=(lease&& other) noexcept {
        if (this != &other) {
            release();
            state_ = std::move(other.state_);
            slot_ = other.slot_, id_ = other.id_, dirty_ = other.dirty_;
        }
        return *this;
    }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { release(); }

    [[nodiscard]] explicit operator bool() const noexcept { return state_ != nullptr; }
    [[nodiscard]] Resource& operator*() const noexcept { return state_->resource(slot_); }
    [[nodiscard]] Resource* operator->() const noexcept { return &state_->resource(slot_); }

    // The resource must not be reused: it is retired when the lease is released.
    void mark_dirty() noexcept { dirty_ = true; }
    [[nodiscard]] bool dirty() const noexcept { return dirty_; }

    // Gives the resource back now; the lease becomes empty. Idempotent. Inline, the
    // work out of line: a moved-from lease (most of them) costs a test.
    void release() noexcept {
        if (state_) give_back();
    }

    [[nodiscard]] std::uint32_t slot() const noexcept { return slot_; }
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

private:
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
        : state_(std::move(state)), slot_(slot), id_(id) {}

    std::shared_ptr<state_type> state_;
    std::uint32_t slot_ = 0;
    std::uint64_t id_ = 0;
    bool dirty_ = false;
};

}  // namespace fairpool
