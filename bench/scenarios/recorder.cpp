// The flight recorder's writer on its own: how many records a second it turns into
// segment files on local disk. A recorder whose writer never wakes by itself (a flush
// interval of hours, the actor's high-water wake off) is given `steps` round-trip steps
// of a real scheduler (an acquire and its grant, a release), all held by its ring; its
// destruction then wakes the writer, which drains them all, copies them into blocks of
// trace format v3 and writes the files. Timed: that drain, to the files closed.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common.hpp"
#include "fairpool/asio/detail/flight_recorder.hpp"
#include "scenarios.hpp"

namespace fairpool_bench {
namespace {

struct writer_result {
    double records_per_s = 0;
    double events_per_s = 0;
};

writer_result drain_once(std::size_t steps) {
    fairpool::core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    const fairpool::core::config resolved = c.resolved();
    fairpool::core::scheduler core(resolved, 1);
    fairpool::recorder_options r = bench_recorder_options();
    r.ring_bytes = static_cast<std::uint32_t>(41 * steps + 4096);  // v3: an acquire and its grant 54 bytes, a release 28
    r.flush_interval = std::chrono::hours(24);
    std::size_t records = 0, events = 0;
    // Off for this drain only (flight_recorder::wake_at_high_water): else the actor
    // would wake the writer as the ring passes half full, and the timed drain would be
    // only the rest.
    fairpool::detail::flight_recorder::wake_at_high_water.store(false);
    auto recorder = std::make_unique<fairpool::detail::flight_recorder>(r, core);
    recorder->commit();  // as a pool's start does: the writer may write
    const auto feed = [&](const fairpool::core::event& e) {
        recorder->before_step(core);
        const auto result = core.step(e);
        recorder->after_step(e, result);
        records += 1 + result.effects.size();
        ++events;
        return result;
    };
    fairpool::core::nanos now = 0;
    feed(fairpool::core::event::start(now));
    feed(fairpool::core::event::spawned(++now, 0));
    std::uint64_t waiter = 0;
    while (events < steps) {  // feed counts the events
        const auto granted = feed(fairpool::core::event::acquire(++now, ++waiter, 1));
        const std::uint64_t lease = granted.effects.empty() ? 0 : granted.effects.front().lease;
        feed(fairpool::core::event::release(++now, 0, lease));
    }
    const auto status = recorder->status();
    if (status.events_lost != 0) {
        std::fprintf(stderr, "recorder: %llu events lost: the ring was too small\n",
                     static_cast<unsigned long long>(status.events_lost));
        std::exit(1);
    }
    const auto t0 = clock_type::now();
    recorder.reset();  // the writer drains everything, writes, closes, and is joined
    const auto t1 = clock_type::now();
    fairpool::detail::flight_recorder::wake_at_high_water.store(true);
    const double s = static_cast<double>(ns_between(t0, t1)) / 1e9;
    return {static_cast<double>(records) / s, static_cast<double>(events) / s};
}

}  // namespace

void scenario_recorder(int reps, std::size_t steps) {
    std::fprintf(stderr, "recorder/writer: %d reps x %zu steps\n", reps, steps);
    std::vector<double> records, events;
    for (int r = 0; r < reps; ++r) {
        const writer_result w = drain_once(steps);
        records.push_back(w.records_per_s);
        events.push_back(w.events_per_s);
    }
    row("recorder/writer", "fairpool", "records_per_s", median(records), "count");
    row("recorder/writer", "fairpool", "events_per_s", median(events), "count");
}

}  // namespace fairpool_bench
