// Recording: a pool with the flight recorder on, and its retained segments dumped into a
// directory that `fairpool-replay --check DIR` replays. Given a directory as its argument
// it dumps there and leaves the dump; without one, it removes everything it wrote.
#include <unistd.h>

#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace fs = std::filesystem;

struct connection {
    int id;
};

void record(const fs::path& scratch, const fs::path& dump) {
    asio::io_context io;
    // [options]
    fairpool::pool_options options{.max_slots = 2};
    options.recording = fairpool::recorder_options{
        .directory = scratch / "recording",  // segment-00000000.trace, segment-00000001.trace, ...
        .segment_events = 20,                // events per segment (small here: several segments)
        .keep_segments = 3,                  // the older ones are deleted
    };
    // [/options]
    int next_id = 0;
    auto connect = [&]() -> asio::awaitable<connection> { co_return connection{++next_id}; };
    fairpool::pool<connection> pool(io.get_executor(), options, connect);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 30; ++i) {  // 30 acquires and releases: about 60 events
            auto lease = co_await pool.async_acquire(asio::use_awaitable);
        }
        // [dump]
        // Blocks this thread until the writer has written what was recorded so far.
        if (const boost::system::error_code ec = pool.dump_recording(dump))
            std::printf("dump failed: %s\n", ec.message().c_str());
        const std::optional<fairpool::recording_status> status = pool.recording_status();
        std::printf("segments started %llu, events lost %llu, write errors %llu\n",
                    static_cast<unsigned long long>(status->segments_started),
                    static_cast<unsigned long long>(status->events_lost),
                    static_cast<unsigned long long>(status->write_errors));
        // [/dump]
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dump))
            names.push_back(entry.path().filename());
        std::sort(names.begin(), names.end());
        for (const auto& name : names) std::printf("%s\n", name.c_str());
        co_await pool.async_close(asio::use_awaitable);
    }, asio::detached);
    io.run();
}  // the pool goes, and its recorder's writer thread with it

int main(int argc, char** argv) {
    const fs::path scratch =
        fs::temp_directory_path() / ("fairpool-guide-" + std::to_string(getpid()));
    record(scratch, argc > 1 ? fs::path(argv[1]) : scratch / "dump");
    fs::remove_all(scratch);  // the recording, and the dump unless it went to argv[1]
}
