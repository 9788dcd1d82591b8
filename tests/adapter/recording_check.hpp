#pragma once
// Checking what a pool's flight recorder wrote (pool_options::recording): segment files
// read back in process (the core restored from each segment's snapshot, its events
// replayed), and replayed by the tool, `fairpool-replay --check FILE|DIR` (its path in
// FAIRPOOL_REPLAY, set by meson.build).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/segment_order.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::testing {

// A fresh directory under /tmp, removed with its contents when the test passed (kept
// and named when it failed, for a look).
class scratch_directory {
public:
    scratch_directory() {
        char path[] = "/tmp/fairpool-recording-XXXXXX";
        const char* made = ::mkdtemp(path);
        if (made == nullptr) ADD_FAILURE() << "mkdtemp failed";
        else path_ = made;
    }
    scratch_directory(const scratch_directory&) = delete;
    scratch_directory& operator=(const scratch_directory&) = delete;
    ~scratch_directory() {
        if (path_.empty()) return;
        if (::testing::Test::HasFailure()) std::printf("recording kept in %s\n", path_.c_str());
        else std::filesystem::remove_all(path_);
    }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

// The segment files of a directory (segment-*.trace), in segment order
// (trace::segment_order_key: by the number in the name, not by name).
inline std::vector<std::filesystem::path> segment_files(const std::filesystem::path& dir) {
    std::vector<std::pair<std::string, std::filesystem::path>> files;  // {order key, path}
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("segment-") && name.ends_with(".trace"))
            files.emplace_back(trace::segment_order_key(name), entry.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<std::filesystem::path> paths;
    for (auto& f : files) paths.push_back(std::move(f.second));
    return paths;
}

inline std::string file_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// A segment file read back; a failure (and an empty trace) when it does not read.
inline trace::trace read_segment(const std::filesystem::path& p) {
    const trace::read_result read = trace::read(file_text(p));
    if (const auto* t = std::get_if<trace::trace>(&read)) return *t;
    ADD_FAILURE() << std::get<trace::read_error>(read).describe(p.string());
    return {};
}

// A segment file (text v2 or binary v3) as canonical v2 text: what the tests look for
// records in, whichever format the recorder wrote.
inline std::string recording_text(const std::filesystem::path& p) {
    trace::trace t = read_segment(p);
    t.version = 2;
    std::ostringstream text;
    trace::write(text, t);
    return std::move(text).str();
}

// The core restored from a segment's snapshot, then fed its events: each must give
// exactly the recorded effects and error. Returns the counters at the end.
inline core::stats replay_segment(const trace::trace& t, const std::string& name) {
    core::scheduler replayed(t.config, trace::snapshot_of(t), 1);
    for (const trace::step& s : t.steps) {
        const core::step_result r = replayed.step(s.event);
        std::vector<core::effect> recorded;
        for (const auto& e : s.effects) recorded.push_back(e.effect);
        EXPECT_EQ(r.error, s.error.value_or(core::event_error::ok)) << name << ":" << s.line;
        EXPECT_TRUE(std::equal(r.effects.begin(), r.effects.end(), recorded.begin(), recorded.end()))
            << name << ":" << s.line << ": the replayed effects differ from the recorded ones";
    }
    return replayed.counters();
}

// The counters the core held after the last event recorded: the recording's last
// segment, restored and replayed.
inline core::stats counters_of_recording(const std::filesystem::path& dir) {
    const auto files = segment_files(dir);
    if (files.empty()) {
        ADD_FAILURE() << "no segment in " << dir;
        return {};
    }
    return replay_segment(read_segment(files.back()), files.back().string());
}

// Runs `fairpool-replay ARGS`; its exit status, and what it printed (both streams).
inline std::pair<int, std::string> run_replay(const std::string& tool, const std::string& args) {
    char out[] = "/tmp/fairpool-replay-out-XXXXXX";
    const int fd = ::mkstemp(out);
    if (fd < 0) return {-1, "mkstemp failed"};
    ::close(fd);
    const std::string command = "'" + tool + "' " + args + " >'" + out + "' 2>&1";
    const int status = std::system(command.c_str());
    std::string printed = file_text(out);
    std::remove(out);
    if (status == -1 || !WIFEXITED(status)) return {-1, printed};
    return {WEXITSTATUS(status), printed};
}

inline std::pair<int, std::string> run_replay_check(const std::string& tool, const std::filesystem::path& target) {
    return run_replay(tool, "--check '" + target.string() + "'");
}

// The FAIRPOOL_REPLAY tool, or empty when the test runs without it.
inline std::string replay_tool() {
    const char* tool = std::getenv("FAIRPOOL_REPLAY");
    return tool ? tool : "";
}

// A memory-only recorder that keeps the whole of a short test in one segment.
inline recorder_options whole_test_in_memory() {
    recorder_options r;
    r.memory_only = true;
    r.segment_events = 1'000'000;
    return r;
}

// The tool checks a file or a directory (a chain of segments): no failure means it
// replayed with identical effects.
inline void expect_replays_identically(const std::string& tool, const std::filesystem::path& target) {
    const auto [status, printed] = run_replay_check(tool, target);
    EXPECT_EQ(status, 0) << printed;
    EXPECT_NE(printed.find(": ok,"), std::string::npos) << printed;
}

}  // namespace fairpool::testing
