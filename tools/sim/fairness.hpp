#pragma once
// Fairness of one seed's run, measured from the outside (from the effects only).
//
// Two numbers, both Jain's index J(x) = (sum x)^2 / (n * sum x^2), 1 = perfectly even
// (tools/common/jain_index.hpp):
//
// - share index: over handles that waited, x = grants a handle received from the
//   queue / the grants it was entitled to while it was backlogged. At every grant of a
//   queued waiter, each handle with queued waiters is entitled to e / (sum of e over
//   the handles with queued waiters) of that grant, where e = min(weight, its queued
//   waiters): a turn of `weight` grants can only be used by a handle that has that many
//   waiters (weights count under round_robin only; elsewhere weight = 1). A perfectly fair round robin gives x = 1 for everyone whatever
//   the demand; FIFO favours handles that queue more. Only handles entitled to at
//   least one grant count, and only seeds with >= min_queue_grants grants from the
//   queue (fewer is noise).
// - grant index: plain J over the number of queue grants per handle, among handles
//   that had a waiter queued at some point. It reflects demand as much as policy.
//
// Bookkeeping is O(1) per change: a share clock advances by 1 / (sum of e) at each
// queue grant, and a handle's entitlement grows by e times the clock's advance.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fairpool::sim {

inline constexpr std::uint64_t min_queue_grants = 50;

struct fairness_sample {
    std::optional<double> share_index;  // needs >= 2 handles entitled to >= 1 grant
    std::optional<double> grant_index;  // needs >= 2 handles that waited and >= 1 queue grant
    std::size_t handles_counted = 0;     // handles in the share index
    std::uint64_t queue_grants = 0;
};

class fairness_meter {
public:
    explicit fairness_meter(std::size_t handles) : handles_(handles) {}

    // A waiter of handle h queued; `weight` is in force if this makes h active.
    void queued(std::size_t h, std::uint64_t weight);
    // A queued waiter of handle h left the queue: granted, or rejected.
    void left(std::size_t h, bool granted);

    [[nodiscard]] fairness_sample finish() const;

private:
    struct handle {
        std::uint64_t queued = 0;
        std::uint64_t weight = 1;  // in force while active
        double share = 0;          // min(weight, queued)
        double clock_mark = 0;     // share clock when `share` last changed
        double entitled = 0;
        std::uint64_t grants = 0;
        bool waited = false;
    };
    void reshare(handle& s);

    std::vector<handle> handles_;
    double active_share_ = 0;  // sum of `share` over the handles
    double clock_ = 0;
};

}  // namespace fairpool::sim
