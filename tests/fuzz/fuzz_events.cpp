// libFuzzer harness: bytes decoded into a config (caps and slot_capacity included), then read as the choices of the event
// generator (tests/support/event_generator.hpp) for a sequence of events fed to the
// core and the reference model in lock step; any disagreement or broken invariant
// aborts. The generator picks mostly valid events from the core's state (live waiters,
// leases, slots, deadlines), with a share of invalid and arbitrary ones. Before each
// event the input may also say "snapshot here" (docs/CONTRACT.md section 7.2): the
// core's snapshot must be the model's, and the run goes on with a core, a model and an
// invariant checker restored from it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "../support/event_generator.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/format.hpp"

namespace {

using namespace fairpool;

// The input, read front to back; past its end, every byte is 0.
class bytes {
public:
    bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    [[nodiscard]] bool empty() const { return at_ >= size_; }

    // A number in [0, n), from as many bytes as n - 1 has (none for n = 1).
    std::uint64_t pick(std::uint64_t n) {
        if (n <= 1) return 0;
        std::uint64_t value = 0;
        for (std::uint64_t rest = n - 1; rest != 0; rest >>= 8) value = value << 8 | next_byte();
        return value % n;
    }

private:
    std::uint8_t next_byte() { return empty() ? 0 : data_[at_++]; }

    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

core::config decode_config(bytes& in) {
    static constexpr core::nanos durations[] = {0, 0, 1, 5, 20, 100};
    core::config c;
    c.max_slots = 1 + in.pick(6);
    c.min_slots = in.pick(c.max_slots + 1);
    c.max_waiters = 1 + in.pick(12);
    if (in.pick(2)) c.max_waiters_per_handle = 1 + in.pick(c.max_waiters);
    c.policy = in.pick(2) ? core::fairness_policy::fifo : core::fairness_policy::round_robin;
    c.idle_order = in.pick(2) ? core::idle_order::fifo : core::idle_order::lifo;
    c.acquire_timeout = durations[in.pick(6)];
    c.idle_timeout = durations[in.pick(6)];
    c.max_lifetime = durations[in.pick(6)];
    c.max_uses = in.pick(4);
    c.spawn_backoff_initial = 1 + in.pick(10);
    c.spawn_backoff_max = c.spawn_backoff_initial * (1 + in.pick(8));
    if (in.pick(2)) c.max_concurrent_spawns = 1 + in.pick(c.max_slots + 1);
    c.leak_threshold = durations[in.pick(6)];
    // Health (issue 13), read last so that older inputs keep their meaning up to here.
    c.check_after_idle = durations[in.pick(6)];
    c.keepalive_interval = durations[in.pick(6)];
    c.max_concurrent_checks = 1 + in.pick(c.max_slots + 1);
    c.reset_on_release = in.pick(3) == 2;
    c.max_lifetime_jitter = in.pick(c.max_lifetime + 1);
    c.jitter_seed = in.pick(256);
    // Tenant isolation (issue 15), read after health for the same reason: a cap for
    // every handle now and then (acquires draw their own max_leases), and room above
    // max_slots for resizes to grow into (the generator draws resizes, some bad_size).
    c.max_leases_per_handle = in.pick(3);
    if (in.pick(2)) c.slot_capacity = c.max_slots + in.pick(4);
    return c;
}

// About how many events an input of a few hundred bytes makes: see event_generator.
constexpr std::uint64_t run_length = 100;

[[noreturn]] void fail(const std::string& what, const core::config& c) {
    std::fprintf(stderr, "fuzz_events: %s\n  config: %s\n", what.c_str(), trace::format_canonical(c).c_str());
    std::abort();
}

// The core's snapshot, checked against the model's; then all three restored from it.
void restore_from_snapshot(std::optional<model::lockstep>& machines, const core::config& c) {
    std::vector<core::snapshot_record> snapshot;
    auto put = [&](const core::snapshot_record& r) { snapshot.push_back(r); };
    machines->core().snapshot(put);
    if (snapshot.size() != machines->core().snapshot_size()) fail("snapshot_size() is not the records written", c);
    const std::vector<core::snapshot_record> model = machines->model().snapshot();
    for (std::size_t i = 0; i < std::max(snapshot.size(), model.size()); ++i)
        if (i >= snapshot.size() || i >= model.size() || !(snapshot[i] == model[i]))
            fail("snapshots differ at record " + std::to_string(i) + ": core " +
                     (i < snapshot.size() ? trace::format(snapshot[i]) : "(none)") + ", model " +
                     (i < model.size() ? trace::format(model[i]) : "(none)"),
                 c);
    try {
        machines.emplace(c, snapshot, 2);
    } catch (const core::snapshot_error& e) {
        fail("the core refused its own snapshot at record " + std::to_string(e.record()) + ": " + e.what(), c);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bytes in(data, size);
    const core::config c = decode_config(in);
    std::optional<model::lockstep> machines(std::in_place, c, 1);
    testing::event_generator events(c, run_length);
    while (!in.empty()) {  // every event reads at least one byte
        if (in.pick(8) == 0) restore_from_snapshot(machines, c);
        const core::event e = events.next(machines->core(), in);
        const auto outcome = machines->step(e);
        if (outcome.breach) {
            std::fprintf(stderr, "fuzz_events: %s\n  config: %s\n  at: %s\n", outcome.breach->c_str(),
                         trace::format_canonical(c).c_str(), trace::format_line(e).c_str());
            std::abort();
        }
        events.observe(e, core::step_result{outcome.error, *outcome.effects});
    }
    return 0;
}
