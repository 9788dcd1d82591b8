// What a recording costs on disk and how fast it replays. A real scheduler's round
// trips (an acquire and its grant, a release) are fed through the flight recorder, as
// a pool's actor feeds it, into segment files on local disk:
//   - bytes per event: the same steps recorded as text (v2) and as binary (v3);
//   - replay speed: a recording of `replay_events` events in v3 (keep_segments raised
//     so that all of it stays), then `fairpool-replay --check DIR` timed (FAIRPOOL_REPLAY
//     names the tool; without it that row is skipped). The feeder waits for the writer
//     whenever it is more than half a ring ahead: no event is lost, so the recording
//     replays as one chain.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "common.hpp"
#include "fairpool/asio/detail/flight_recorder.hpp"
#include "scenarios.hpp"

namespace fairpool_bench {
namespace {

namespace fs = std::filesystem;

struct recorded {
    std::uint64_t events = 0;
    std::uintmax_t bytes = 0;
};

recorded record(const fs::path& dir, fairpool::recording_format format, std::uint64_t events, std::uint32_t keep) {
    fairpool::core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    const fairpool::core::config resolved = c.resolved();
    fairpool::core::scheduler core(resolved, 1);
    fairpool::recorder_options r;
    r.directory = dir;
    r.format = format;
    r.keep_segments = keep;
    std::uint64_t fed = 0;
    {
        fairpool::detail::flight_recorder recorder(r, core);
        recorder.commit();
        const auto feed = [&](const fairpool::core::event& e) {
            recorder.before_step(core);
            const auto result = core.step(e);
            recorder.after_step(e, result);
            ++fed;
            return result;
        };
        fairpool::core::nanos now = 0;
        feed(fairpool::core::event::start(now));
        feed(fairpool::core::event::spawned(++now, 0));
        std::uint64_t waiter = 0;
        while (fed < events) {
            const auto granted = feed(fairpool::core::event::acquire(++now, ++waiter, 1));
            feed(fairpool::core::event::release(++now, 0, granted.effects.front().lease));
            if (fed % 8192 == 0)  // 41 bytes an event: stay within half the default ring of the writer
                while (fed - recorder.status().events_written > r.ring_bytes / 41 / 2) std::this_thread::yield();
        }
        if (recorder.status().events_lost != 0) {
            std::fprintf(stderr, "recording_files: events lost\n");
            std::exit(1);
        }
    }
    recorded out{fed, 0};
    for (const auto& f : fs::directory_iterator(dir)) out.bytes += f.file_size();
    return out;
}

}  // namespace

void scenario_recording_files(std::uint64_t size_events, std::uint64_t replay_events) {
    const fs::path root = recording_directory() / "files";
    std::fprintf(stderr, "recorder/files: %llu events in v2 and v3, then %llu in v3 replayed\n",
                 static_cast<unsigned long long>(size_events), static_cast<unsigned long long>(replay_events));
    const recorded text = record(root / "v2", fairpool::recording_format::text, size_events, 1000);
    const recorded binary = record(root / "v3", fairpool::recording_format::binary, size_events, 1000);
    row("recorder/files", "fairpool", "bytes_per_event_v2", static_cast<double>(text.bytes) / static_cast<double>(text.events), "bytes");
    row("recorder/files", "fairpool", "bytes_per_event_v3", static_cast<double>(binary.bytes) / static_cast<double>(binary.events), "bytes");
    row("recorder/files", "fairpool", "v3_vs_v2_bytes", static_cast<double>(binary.bytes) / static_cast<double>(text.bytes), "ratio");
    fs::remove_all(root);

    const char* tool = std::getenv("FAIRPOOL_REPLAY");
    if (tool == nullptr || *tool == '\0') {
        std::fprintf(stderr, "recorder/replay skipped: FAIRPOOL_REPLAY does not name fairpool-replay\n");
        return;
    }
    const std::uint64_t segment_events = fairpool::recorder_options{}.segment_events;
    const recorded big = record(root / "replay", fairpool::recording_format::binary, replay_events,
                                static_cast<std::uint32_t>(replay_events / segment_events + 2));
    const std::string command = std::string("'") + tool + "' --check '" + (root / "replay").string() + "' > /dev/null";
    const auto t0 = clock_type::now();
    const int status = std::system(command.c_str());
    const auto t1 = clock_type::now();
    if (status != 0) {
        std::fprintf(stderr, "recorder/replay: %s failed (%d)\n", command.c_str(), status);
        std::exit(1);
    }
    const double s = static_cast<double>(ns_between(t0, t1)) / 1e9;
    row("recorder/replay", "fairpool", "events", static_cast<double>(big.events), "count");
    row("recorder/replay", "fairpool", "bytes", static_cast<double>(big.bytes), "bytes");
    row("recorder/replay", "fairpool", "check_events_per_s", static_cast<double>(big.events) / s, "/s");
    fs::remove_all(root);
}

}  // namespace fairpool_bench
