#include "fairness.hpp"

#include <algorithm>

#include "jain_index.hpp"

namespace fairpool::sim {

void fairness_meter::reshare(handle& s) {
    const double share = static_cast<double>(std::min(s.weight, s.queued));
    s.entitled += s.share * (clock_ - s.clock_mark);
    s.clock_mark = clock_;
    active_share_ += share - s.share;
    s.share = share;
}

void fairness_meter::queued(std::size_t h, std::uint64_t weight) {
    handle& s = handles_[h];
    s.waited = true;
    if (s.queued++ == 0) s.weight = weight;
    reshare(s);
}

void fairness_meter::left(std::size_t h, bool granted) {
    handle& s = handles_[h];
    if (granted) {
        clock_ += 1 / active_share_;
        ++s.grants;
    }
    --s.queued;
    reshare(s);
}

fairness_sample fairness_meter::finish() const {
    fairness_sample out;
    std::vector<double> shares;
    std::vector<double> grants;
    std::uint64_t total = 0;
    for (const handle& s : handles_) {
        const double entitled = s.entitled + s.share * (clock_ - s.clock_mark);
        if (entitled >= 1) shares.push_back(static_cast<double>(s.grants) / entitled);
        if (s.waited) grants.push_back(static_cast<double>(s.grants)), total += s.grants;
    }
    out.queue_grants = total;
    if (total < min_queue_grants) return out;
    if (shares.size() >= 2) out.share_index = tools::jain_index(shares), out.handles_counted = shares.size();
    if (grants.size() >= 2 && total > 0) out.grant_index = tools::jain_index(grants);
    return out;
}

}  // namespace fairpool::sim
