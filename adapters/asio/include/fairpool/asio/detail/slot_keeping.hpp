#pragma once
// What the actor keeps per slot between the slot's leases: the block of the handle the
// last lease went to, and the slot's lease token. Touched only by the drain holding
// the actor (and by abandon_pending, once no drain can run again).
//
// Handle blocks. A lease counts itself back to its handle's block at its release, even
// after the handle object is gone, so the actor keeps the block alive while the lease
// is out (`counting`). It keeps it after the release too: the reference changes hands
// only when the slot's next lease goes to another handle.
//
// Lease tokens. A lease holds a reference to the pool's state (it may outlive the
// pool). Taking one per grant and dropping it per release would cost two atomic
// read-modify-writes of the reference count per round trip. Instead each slot has a
// token: a reference the actor hands to the slot's lease at its grant (take_token) and
// takes back at its release, when the release is fed directly on the pool's executor
// (keep_token); one released through the mailbox is dropped by its lease, and the
// slot's next grant takes a new one. A grant to an operation that already holds a
// reference (it came through the mailbox) gives the lease that one; a waiter fed
// directly holds none while queued (pool_drain.hpp: count_queued), so a release fed
// directly that hands its slot to such a waiter passes the token on: no reference
// count changes per contended cycle either. Tokens
// kept by the actor are references from the state to itself: they are dropped when the
// pool has closed (every lease back: none can be kept again) and when the execution
// context shuts down; dropped by a drain, they go only after the drain has let the
// actor go (actor.hpp), since they may be the last references.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "fairpool/asio/detail/acquire_operation.hpp"
#include "fairpool/asio/detail/handle_block.hpp"
#include "fairpool/core/detail/assert.hpp"

namespace fairpool::detail {

template <class State>
class slot_keeping {
public:
    explicit slot_keeping(std::uint32_t slots) : kept_(slots) { dying_.reserve(slots); }

    // A grant of `slot` through `op`, whose handle has a block: the actor keeps that
    // block for the lease. Moved from the operation if it holds it; else (fed directly
    // and granted at once) `caller` is the initiating function's, copied only if the
    // slot's last lease was another handle's.
    void keep_block(std::uint32_t slot, acquire_operation& op, const std::shared_ptr<handle_block>* caller) {
        per_slot& kept = kept_[slot];
        if (op.holds_block()) {
            kept.block = op.take_block_owner();
        } else if (kept.block.get() != op.block()) {
            FAIRPOOL_DEBUG_ASSERT(caller != nullptr && caller->get() == op.block());
            kept.block = *caller;
        }
        kept.counting = true;
    }

    // The release of `slot`'s lease, before it is fed: counted back to its handle.
    void lease_returned(std::uint32_t slot) noexcept {
        if (per_slot& kept = kept_[slot]; kept.counting) {
            kept.block->returned();
            kept.counting = false;
        }
    }

    // A grant of `slot` to an operation that holds no reference to the state: the slot's
    // token, or a new reference.
    std::shared_ptr<State> take_token(std::uint32_t slot, State& state) {
        FAIRPOOL_DEBUG_ASSERT(!tokens_dropped_);  // no grant once the pool closed, no drain once abandoned
        if (std::shared_ptr<State>& kept = kept_[slot].token) return std::move(kept);
        return state.shared_from_this();
    }

    // A release of `slot` fed directly: its lease's reference becomes the slot's token,
    // unless the slot has one.
    void keep_token(std::uint32_t slot, std::shared_ptr<State>& token) noexcept {
        FAIRPOOL_DEBUG_ASSERT(!tokens_dropped_);  // no lease out once the pool closed, no drain once abandoned
        if (std::shared_ptr<State>& kept = kept_[slot].token; !kept) kept = std::move(token);
    }

    // The tokens move to the dying references (their capacity reserved: no allocation),
    // which the drain drops after letting the actor go. Once: no token is kept again.
    void drop_tokens() noexcept {
        tokens_dropped_ = true;
        for (per_slot& k : kept_)
            if (k.token) dying_.push_back(std::move(k.token));
    }

    [[nodiscard]] bool has_dying() const noexcept { return !dying_.empty(); }
    [[nodiscard]] std::vector<std::shared_ptr<State>> take_dying() noexcept { return std::exchange(dying_, {}); }

    // The execution context shuts down: no drain will take a token again.
    void abandon() noexcept {
        drop_tokens();
        dying_.clear();
    }

private:
    struct per_slot {
        std::shared_ptr<handle_block> block;  // of the handle the slot's last lease went to
        bool counting = false;                // that lease is out: its release counts back
        std::shared_ptr<State> token;         // the slot's lease token, if the actor holds it
    };
    std::vector<per_slot> kept_;
    std::vector<std::shared_ptr<State>> dying_;  // dropped, until the drain lets go
    bool tokens_dropped_ = false;                // (for assertions)
};

}  // namespace fairpool::detail
