// libFuzzer harness: bytes decoded into a config and a sequence of events, fed to the
// core and the reference model in lock step; any disagreement or broken invariant
// aborts. The decoding keeps fields in small ranges so that events often hit live
// waiters, leases and slots, with a fraction of invalid ones.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/format.hpp"

namespace {

using namespace fairpool;

class bytes {
public:
    bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    [[nodiscard]] bool empty() const { return at_ >= size_; }
    std::uint64_t next(std::uint64_t bound) { return bound == 0 ? 0 : (empty() ? 0 : data_[at_++]) % bound; }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

core::config decode_config(bytes& in) {
    static constexpr core::nanos durations[] = {0, 0, 1, 5, 20, 100};
    core::config c;
    c.max_slots = 1 + in.next(6);
    c.min_slots = in.next(c.max_slots + 1);
    c.max_waiters = 1 + in.next(12);
    if (in.next(2)) c.max_waiters_per_handle = 1 + in.next(c.max_waiters);
    c.policy = in.next(2) ? core::fairness_policy::fifo : core::fairness_policy::round_robin;
    c.idle_order = in.next(2) ? core::idle_order::fifo : core::idle_order::lifo;
    c.acquire_timeout = durations[in.next(6)];
    c.idle_timeout = durations[in.next(6)];
    c.max_lifetime = durations[in.next(6)];
    c.max_uses = in.next(4);
    c.spawn_backoff_initial = 1 + in.next(10);
    c.spawn_backoff_max = c.spawn_backoff_initial * (1 + in.next(8));
    if (in.next(2)) c.max_concurrent_spawns = 1 + in.next(c.max_slots + 1);
    c.leak_threshold = durations[in.next(6)];
    return c;
}

core::event decode_event(bytes& in, core::nanos& now, std::uint64_t& waiters) {
    const auto kind = static_cast<core::event_kind>(in.next(core::event_kind_count));
    const std::uint64_t step = in.next(16);
    now = step == 15 ? now - std::min<core::nanos>(now, 1) : now + step * step;  // 1 in 16 goes back
    core::event e = core::event::of(kind, now);
    e.waiter = kind == core::event_kind::acquire && in.next(8) != 0 ? ++waiters : in.next(waiters + 2);
    e.handle = in.next(5);
    e.slot = static_cast<std::uint32_t>(in.next(8));
    e.lease = in.next(12);
    e.outcome = in.next(4) == 0 ? core::release_outcome::dirty : core::release_outcome::clean;
    if (const auto d = in.next(4); d == 1) e.deadline = now + in.next(60);
    else if (d == 2) e.deadline = now - std::min<core::nanos>(now, in.next(3));
    if (in.next(4) == 0) e.weight = in.next(5);
    return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bytes in(data, size);
    const core::config c = decode_config(in);
    model::lockstep machines(c, 1);
    core::nanos now = 0;
    std::uint64_t waiters = 0;
    // Most runs should get going: start first unless the input says otherwise.
    if (in.next(8) != 0) machines.step(core::event::start(0));
    while (!in.empty()) {
        const core::event e = decode_event(in, now, waiters);
        if (auto outcome = machines.step(e); outcome.breach) {
            std::fprintf(stderr, "fuzz_events: %s\n  config: %s\n  at: %s\n", outcome.breach->c_str(),
                         trace::format_canonical(c).c_str(), trace::format_line(e).c_str());
            std::abort();
        }
    }
    return 0;
}
