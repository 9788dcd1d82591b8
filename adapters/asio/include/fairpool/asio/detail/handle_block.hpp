#pragma once
// A handle's shared block: what the handle object, its acquires in flight and its
// leases out share. It counts the acquires not yet delivered (a destroyed handle sends
// a deregistration only while it has one) and keeps the handle's statistics
// (handle_stats.hpp).
//
// The statistics have one writer, the pool's actor (a drain at a time holds it; the
// actor's scheduling state orders successive drains, whatever their threads), so each
// is a relaxed load and store, no read-modify-write; only busy, counted on the caller's
// thread before anything reaches the actor, is a relaxed fetch_add (and a fetch_sub
// when the refusal's completion could not be posted: admission.hpp). Readers on any
// thread load each count relaxed: each is exact, a copy taken while the pool runs may
// mix moments. The actor keeps a granted lease's block alive until the lease is
// released (slot_keeping.hpp), so a lease that outlives its handle object
// still counts itself back.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "fairpool/asio/handle_stats.hpp"
#include "fairpool/core/event.hpp"

namespace fairpool::detail {

struct handle_block {
    explicit handle_block(std::string n) : name(std::move(n)) {}

    using counter = std::atomic<std::uint64_t>;

    std::atomic<std::uint32_t> outstanding{0};  // acquires not yet delivered
    const std::string name;                     // handle_options::name

    // --- Written by the actor ---------------------------------------------------------
    void acquired() noexcept { bump(acquires); }
    void granted(core::nanos wait) noexcept {
        bump(grants);
        const std::uint64_t out = leases_out.load(std::memory_order_relaxed) + 1;
        leases_out.store(out, std::memory_order_relaxed);
        if (out > leases_out_max.load(std::memory_order_relaxed)) leases_out_max.store(out, std::memory_order_relaxed);
        bump(wait_total_ns, wait);
        if (wait > wait_max_ns.load(std::memory_order_relaxed)) wait_max_ns.store(wait, std::memory_order_relaxed);
    }
    void rejected(core::reject_reason why) noexcept { bump(rejections[static_cast<std::size_t>(why)]); }
    void returned() noexcept { leases_out.store(leases_out.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed); }

    // --- Written by the caller's thread -----------------------------------------------
    void refused_busy() noexcept { busy.fetch_add(1, std::memory_order_relaxed); }
    void busy_refusal_withdrawn() noexcept { busy.fetch_sub(1, std::memory_order_relaxed); }  // its post threw

    // --- Any thread -------------------------------------------------------------------
    [[nodiscard]] handle_stats read() const noexcept {
        const auto get = [](const counter& c) { return c.load(std::memory_order_relaxed); };
        const auto rejected_for = [&](core::reject_reason r) { return get(rejections[static_cast<std::size_t>(r)]); };
        handle_stats s;
        s.acquires = get(acquires);
        s.grants = get(grants);
        s.rejected_timeout = rejected_for(core::reject_reason::timeout);
        s.rejected_cancelled = rejected_for(core::reject_reason::cancelled);
        s.rejected_deregistered = rejected_for(core::reject_reason::deregistered);
        s.rejected_closed = rejected_for(core::reject_reason::closed);
        s.rejected_saturated = rejected_for(core::reject_reason::saturated);
        s.rejected_busy = get(busy);
        s.leases_out = get(leases_out);
        s.leases_out_max = get(leases_out_max);
        s.wait_total_ns = get(wait_total_ns);
        s.wait_max_ns = get(wait_max_ns);
        return s;
    }

private:
    static void bump(counter& c, std::uint64_t by = 1) noexcept {
        c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    }

    counter acquires{0}, grants{0};
    std::array<counter, core::reject_reason_count> rejections{};
    counter busy{0};
    counter leases_out{0}, leases_out_max{0};
    counter wait_total_ns{0}, wait_max_ns{0};
};

}  // namespace fairpool::detail
