// Snapshot equivalence (docs/CONTRACT.md section 7.2, "Restoring") over the simulator
// sweep of tools/meson.build (sim-sweep: seeds 1..2000, 1000 events each, the default
// settings): every run's events are replayed by a core, and at k = 0, at the last
// event and at 10 random points k in between:
//   (a) the core's snapshot after event k is the reference model's, record for record;
//   (b) a core restored from it, once from the records and once after a text round
//       trip (trace::write_snapshot_record, trace::read), given events k+1... gives
//       exactly the original's error, effects, counters and next_deadline() after every
//       step, and at the end the original's snapshot;
//   (c) a reference model restored from it does the same;
//   (d) an invariant checker restored from it accepts the rest of the run.
// FAIRPOOL_SWEEP_STRIDE=N (tests/meson.build sets 20 under a sanitizer) takes every Nth
// seed of the sweep only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/invariant_checker.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/model/planted_faults.hpp"
#include "fairpool/model/reference_model.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "fairpool/trace/write.hpp"
#include "simulation.hpp"

namespace fairpool::testing {
namespace {

// The sweep of the sim-sweep test, cut into chunks so that progress shows.
constexpr std::uint64_t sweep_seeds = 2000;
constexpr std::uint64_t sweep_events = 1000;
constexpr std::uint64_t chunks = 8;
constexpr std::size_t random_points = 10;

std::uint64_t sweep_stride() {
    const char* text = std::getenv("FAIRPOOL_SWEEP_STRIDE");
    const unsigned long long stride = text != nullptr ? std::strtoull(text, nullptr, 10) : 1;
    return stride == 0 ? 1 : stride;
}

using records = std::vector<core::snapshot_record>;

struct step_out {
    core::event_error error = core::event_error::ok;
    std::vector<core::effect> effects;
    core::stats counters{};
    std::optional<core::nanos> next_deadline;
};

// One run of the simulator, replayed once from `start` by a core (and a model beside
// it), with the core's snapshots at the chosen points.
struct recorded_run {
    std::uint64_t seed = 0;
    core::config config;
    std::vector<core::event> events;
    std::vector<step_out> outs;  // outs[i]: after events[i]
    std::vector<std::size_t> points;
    std::vector<records> snapshots;  // snapshots[j]: the core's, after points[j] events
};

records snapshot_of(const core::scheduler& s) { return trace::snapshot_of(s); }

std::string where(const recorded_run& r, std::size_t k) {
    return "seed " + std::to_string(r.seed) + ", snapshot after event " + std::to_string(k) + " of " +
           std::to_string(r.events.size());
}

// "" if equal, else the first record that differs.
std::string records_difference(const records& want, const records& got) {
    for (std::size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
        const std::string w = i < want.size() ? trace::format(want[i]) : std::string("(none)");
        const std::string g = i < got.size() ? trace::format(got[i]) : std::string("(none)");
        if (i >= want.size() || i >= got.size() || !(want[i] == got[i]))
            return "record " + std::to_string(i) + ": expected `" + w + "`, got `" + g + "`";
    }
    return "";
}

// k = 0, the last event, and random points in between (all of them for a short run).
std::vector<std::size_t> choose_points(std::uint64_t seed, std::size_t n) {
    std::set<std::size_t> points{0, n};
    std::mt19937_64 random(seed);
    if (n > 1) {
        const std::size_t wanted = std::min(random_points, n - 1);
        while (points.size() < wanted + 2) points.insert(1 + static_cast<std::size_t>(random() % (n - 1)));
    }
    return {points.begin(), points.end()};
}

// Replays the run from `start`; (a) at every point.
recorded_run record(std::uint64_t seed) {
    sim::run_settings settings;
    settings.events = sweep_events;
    sim::simulation simulation(seed, settings);
    const sim::seed_result result = simulation.run();
    EXPECT_FALSE(result.failure) << "seed " << seed << ": the simulation itself failed: " << *result.failure;

    recorded_run r;
    r.seed = seed;
    r.config = simulation.config();
    r.events = simulation.events();
    r.points = choose_points(seed, r.events.size());
    core::scheduler core(r.config, seed);
    model::reference_model model(r.config);
    std::size_t next_point = 0;
    for (std::size_t i = 0; i <= r.events.size(); ++i) {
        if (next_point < r.points.size() && r.points[next_point] == i) {
            r.snapshots.push_back(snapshot_of(core));
            const std::string d = records_difference(r.snapshots.back(), model.snapshot());
            EXPECT_EQ(d, "") << where(r, i) << ": the model's snapshot is not the core's (expected: the core's)";
            ++next_point;
        }
        if (i == r.events.size()) break;
        const core::step_result s = core.step(r.events[i]);
        r.outs.push_back({s.error, {s.effects.begin(), s.effects.end()}, core.counters(), core.next_deadline()});
        model.step(r.events[i]);
    }
    return r;
}

// (b), (c): `m` restored after k events replays the rest exactly; "" or what differs.
template <typename Machine, typename Snapshot>
std::string tail_difference(Machine& m, const recorded_run& r, std::size_t k, Snapshot&& snapshot) {
    for (std::size_t i = k; i < r.events.size(); ++i) {
        const core::step_result s = m.step(r.events[i]);
        const step_out& want = r.outs[i];
        const std::string at = "event " + std::to_string(i + 1) + " (" + trace::format_line(r.events[i]) + "): ";
        if (s.error != want.error)
            return at + "returned " + core::to_string(s.error) + ", expected " + core::to_string(want.error);
        if (!std::equal(s.effects.begin(), s.effects.end(), want.effects.begin(), want.effects.end()))
            return at + "emitted " + model::describe({s.effects.begin(), s.effects.end()}) + ", expected " +
                   model::describe(want.effects);
        if (!(m.counters() == want.counters)) return at + "counters differ";
        if (m.next_deadline() != want.next_deadline)
            return at + "next_deadline " + (m.next_deadline() ? std::to_string(*m.next_deadline()) : "none") +
                   ", expected " + (want.next_deadline ? std::to_string(*want.next_deadline) : "none");
    }
    if (const std::string d = records_difference(r.snapshots.back(), snapshot(m)); !d.empty())
        return "the snapshot at the end differs: " + d;
    return "";
}

// (d): "" or the first breach.
std::string checker_breach(const recorded_run& r, std::size_t k, const records& snapshot) {
    model::invariant_checker checker(r.config, snapshot);
    for (std::size_t i = k; i < r.events.size(); ++i) {
        const step_out& o = r.outs[i];
        if (auto breach = checker.check_step(r.events[i], o.error, o.effects, o.counters))
            return "event " + std::to_string(i + 1) + " (" + trace::format_line(r.events[i]) + "): " + *breach;
    }
    return "";
}

// The records after a trip through the text of a v2 trace.
records through_text(const core::config& c, const records& snapshot, std::string& error) {
    std::ostringstream text;
    trace::write_header_v2(text, c, std::nullopt, {});
    for (const core::snapshot_record& r : snapshot) trace::write_snapshot_record(text, r);
    const trace::read_result read = trace::read(text.str());
    if (const auto* e = std::get_if<trace::read_error>(&read)) {
        error = e->describe("(snapshot text)") + "\n" + text.str();
        return {};
    }
    records back;
    for (const trace::snapshot_line& line : std::get<trace::trace>(read).snapshot) back.push_back(line.record);
    return back;
}

struct totals {
    std::uint64_t runs = 0;
    std::uint64_t points = 0;
    std::uint64_t events = 0;       // of the runs
    std::uint64_t tail_events = 0;  // replayed after a snapshot, by each of the four
};

// Failures are reported, at most a few per chunk: one broken restore fails every point.
constexpr int failures_reported = 5;

class snapshot_equivalence : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(snapshot_equivalence, restored_machines_replay_the_rest_of_every_sweep_run_exactly) {
    const std::uint64_t first = 1 + GetParam() * (sweep_seeds / chunks);
    const std::uint64_t last = first + sweep_seeds / chunks - 1;
    totals t;
    int failures = 0;
    auto report = [&](const std::string& what) {
        if (what.empty()) return;
        if (++failures <= failures_reported) ADD_FAILURE() << what;
    };
    const std::uint64_t stride = sweep_stride();
    for (std::uint64_t seed = first; seed <= last; seed += stride) {
        const recorded_run r = record(seed);
        ++t.runs;
        t.events += r.events.size();
        for (std::size_t j = 0; j < r.points.size(); ++j) {
            const std::size_t k = r.points[j];
            const records& snapshot = r.snapshots[j];
            ++t.points;
            t.tail_events += r.events.size() - k;
            const std::string at = where(r, k) + ": ";
            auto core_snapshot = [](const core::scheduler& s) { return snapshot_of(s); };
            auto model_snapshot = [](const model::reference_model& m) { return m.snapshot(); };
            try {
                core::scheduler restored(r.config, snapshot, seed * 7919 + k);  // another hash seed: no matter
                const std::string d = tail_difference(restored, r, k, core_snapshot);
                report(d.empty() ? "" : at + "core restored from the records: " + d);
                std::string error;
                const records text = through_text(r.config, snapshot, error);
                if (!error.empty()) {
                    report(at + "the text round trip failed: " + error);
                } else if (const std::string dt = records_difference(snapshot, text); !dt.empty()) {
                    report(at + "the text round trip changed the snapshot: " + dt);
                } else {
                    core::scheduler from_text(r.config, text, seed);
                    const std::string df = tail_difference(from_text, r, k, core_snapshot);
                    report(df.empty() ? "" : at + "core restored from the text: " + df);
                }
            } catch (const core::snapshot_error& e) {
                report(at + "the core refused its own snapshot at record " + std::to_string(e.record()) + " (" +
                       (e.record() < snapshot.size() ? trace::format(snapshot[e.record()]) : "the end") +
                       "): " + e.what());
                continue;
            }
            model::reference_model model(r.config, snapshot);
            const std::string dm = tail_difference(model, r, k, model_snapshot);
            report(dm.empty() ? "" : at + "model restored from the records: " + dm);
            const std::string dc = checker_breach(r, k, snapshot);
            report(dc.empty() ? "" : at + "invariant checker restored from the records: " + dc);
        }
        if (failures > failures_reported) break;
    }
    std::printf("seeds %llu..%llu: %llu runs, %llu events, %llu snapshots, %llu events replayed after them (x4)\n",
                static_cast<unsigned long long>(first), static_cast<unsigned long long>(last),
                static_cast<unsigned long long>(t.runs), static_cast<unsigned long long>(t.events),
                static_cast<unsigned long long>(t.points), static_cast<unsigned long long>(t.tail_events));
    EXPECT_GE(t.points, t.runs * 3) << "most runs are long enough for 12 points";
}

INSTANTIATE_TEST_SUITE_P(sweep, snapshot_equivalence, ::testing::Range<std::uint64_t>(0, chunks));

// The lockstep restored from a snapshot (what fairpool-replay runs on a segment) agrees
// with itself over the rest of a run: core, model and checker start from the same state.
TEST(snapshot_lockstep, a_lockstep_restored_mid_run_finds_no_breach) {
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        const recorded_run r = record(seed);
        for (std::size_t j = 0; j < r.points.size(); ++j) {
            model::lockstep pool(r.config, r.snapshots[j], seed);
            for (std::size_t i = r.points[j]; i < r.events.size(); ++i) {
                const model::lockstep::outcome o = pool.step(r.events[i]);
                ASSERT_FALSE(o.breach) << where(r, r.points[j]) << ", event " << i + 1 << ": " << *o.breach;
            }
        }
    }
}

// A checker restored from a snapshot still checks: each known bug planted in the tail's
// effects (model/planted_faults.hpp) is reported, at the step it first changed or later.
TEST(snapshot_checker, a_checker_restored_mid_run_catches_a_bug_planted_after_the_snapshot) {
    for (const char* name : {"reuse-dirty", "lose-cancel", "keep-dead"}) {
        const model::lockstep::fault fault = model::planted_fault(name);
        std::uint64_t planted = 0;
        for (std::uint64_t seed = 1; seed <= 100; ++seed) {
            const recorded_run r = record(seed);
            for (std::size_t j = 0; j < r.points.size(); ++j) {
                const std::size_t k = r.points[j];
                model::invariant_checker checker(r.config, r.snapshots[j]);
                std::optional<std::size_t> first_changed;
                std::optional<std::string> breach;
                for (std::size_t i = k; i < r.events.size() && !breach; ++i) {
                    std::vector<core::effect> effects = r.outs[i].effects;
                    fault(r.events[i], effects);
                    if (!first_changed && effects != r.outs[i].effects) first_changed = i;
                    breach = checker.check_step(r.events[i], r.outs[i].error, effects, r.outs[i].counters);
                    if (breach) {
                        EXPECT_TRUE(first_changed) << name << ", " << where(r, k) << ": a breach before the fault: "
                                                   << *breach;
                    }
                }
                if (!first_changed) continue;
                ++planted;
                EXPECT_TRUE(breach) << name << ", " << where(r, k) << ": the fault at event " << *first_changed + 1
                                    << " went unnoticed";
            }
        }
        EXPECT_GT(planted, 50u) << name << ": the sweep must trigger the fault after many snapshots";
    }
}

}  // namespace
}  // namespace fairpool::testing
