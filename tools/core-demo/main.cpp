// fairpool-core-demo: drives the core scheduler through a scripted multi-tenant
// scenario in virtual time and prints every decision it makes. Resources take 5 ms to
// create; every lease is held for 10 ms. One greedy tenant asks for six leases at
// once, two light tenants for a few; round robin interleaves them. Along the way: a
// request released dirty (its resource is destroyed and replaced), a try-acquire that
// finds nothing idle, a cancelled request, and a graceful shutdown.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/format.hpp"

namespace {

using namespace fairpool;
using core::event;
using core::nanos;

constexpr nanos ms = 1'000'000;

struct request {
    const char* tenant;
    std::uint64_t handle;
    nanos at;
    std::optional<nanos> deadline = {};
};

class demo {
public:
    explicit demo(const core::config& c) : pool_(c, 1) {}

    void run(const std::vector<request>& requests) {
        for (std::uint64_t id = 1; const request& r : requests) {
            tenants_[id] = r.tenant;
            schedule(r.at, event::acquire(r.at, id++, r.handle, r.deadline));
        }
        schedule(3 * ms, event::start(0));
        schedule(31 * ms, event::cancel(31 * ms, 9));
        schedule(120 * ms, event::shutdown(120 * ms));
        while (!pending_.empty()) {
            auto next = pending_.begin();
            const event e = next->second;
            pending_.erase(next);
            step(e);
        }
        summary();
    }

private:
    void schedule(nanos at, event e) {
        e.now = at;
        pending_.emplace(std::pair{at, sequence_++}, e);
    }

    void step(const event& e) {
        now_ = e.now;
        std::printf("%7.1f ms  %-52s", static_cast<double>(e.now) / ms, describe(e).c_str());
        first_effect_ = true;
        const core::step_result r = pool_.step(e);
        for (const core::effect& f : r.effects) perform(f);
        if (!r.ok()) std::printf("  ! %s", core::to_string(r.error));
        std::printf("\n");
    }

    std::string describe(const event& e) const {
        std::string text = trace::format(e);
        if (e.kind == core::event_kind::acquire) text += " (" + tenants_.at(e.waiter) + ")";
        return text;
    }

    void perform(const core::effect& f) {
        std::printf("%s%s", first_effect_ ? "→ " : ", ", trace::format(f).c_str());
        first_effect_ = false;
        switch (f.kind) {
            case core::effect_kind::grant: {
                const std::string& who = tenants_.at(f.waiter);
                order_.push_back(who);
                // The fourth grant is "cancelled mid-request": released dirty.
                const auto outcome = order_.size() == 4 ? core::release_outcome::dirty : core::release_outcome::clean;
                schedule(now_ + 10 * ms, event::release(0, f.slot, f.lease, outcome));
                break;
            }
            case core::effect_kind::spawn: schedule(now_ + 5 * ms, event::spawned(0, f.slot)); break;
            case core::effect_kind::retire: schedule(now_ + 1 * ms, event::retired(0, f.slot)); break;
            case core::effect_kind::reject: rejected_.push_back(tenants_.at(f.waiter) + ":" + core::to_string(f.rejected)); break;
            default: break;
        }
    }

    void summary() const {
        std::printf("\nGrant order: ");
        for (const auto& who : order_) std::printf("%s ", who.c_str());
        std::printf("\nRejections:  ");
        for (const auto& r : rejected_) std::printf("%s ", r.c_str());
        const core::stats& s = pool_.counters();
        std::printf("\nCounters: %llu acquires, %llu granted at once, %llu after waiting, %llu spawns, "
                    "%llu dirty retirements, %llu shutdown retirements\n",
                    static_cast<unsigned long long>(s.acquires), static_cast<unsigned long long>(s.grants_immediate),
                    static_cast<unsigned long long>(s.grants_after_wait), static_cast<unsigned long long>(s.spawns),
                    static_cast<unsigned long long>(s.retirements[0]),
                    static_cast<unsigned long long>(s.retirements[static_cast<int>(core::retire_reason::shutdown)]));
    }

    core::scheduler pool_;
    std::map<std::pair<nanos, std::uint64_t>, event> pending_;
    std::uint64_t sequence_ = 0;
    std::map<std::uint64_t, std::string> tenants_;
    std::vector<std::string> order_;
    std::vector<std::string> rejected_;
    nanos now_ = 0;
    bool first_effect_ = true;
};

}  // namespace

int main() {
    core::config c;
    c.max_slots = 2;
    c.min_slots = 1;
    c.acquire_timeout = 200 * ms;
    std::printf("fairpool core demo — %s\n\n", trace::format_canonical(c).c_str());
    std::vector<request> requests;
    for (int i = 0; i < 6; ++i) requests.push_back({"greedy", 1, 10 * ms});
    requests.push_back({"alice", 2, 11 * ms});
    requests.push_back({"bob", 3, 12 * ms});
    requests.push_back({"bob", 3, 12 * ms});  // waiter 9: cancelled at 31 ms
    requests.push_back({"carol", 4, 13 * ms, 13 * ms});  // try-acquire: nothing idle
    requests.push_back({"alice", 2, 40 * ms});
    requests.push_back({"late", 5, 125 * ms});  // after shutdown
    demo(c).run(requests);
}
