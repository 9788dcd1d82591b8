#pragma once
// Checking what a pool recorded (pool_options::recorder): the counters its core holds,
// from the recording replayed in process; and the recording replayed by the tool,
// `fairpool-replay --check FILE` (its path in FAIRPOOL_REPLAY, set by meson.build).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/read.hpp"

namespace fairpool::testing {

// The counters the core holds after the events the actor fed it so far: the recording
// replayed through a scheduler of its own.
inline core::stats counters_of_recording(const std::string& recorded) {
    const trace::read_result read = trace::read(recorded);
    const auto* t = std::get_if<trace::trace>(&read);
    if (t == nullptr) {
        ADD_FAILURE() << std::get<trace::read_error>(read).describe("recording");
        return {};
    }
    core::scheduler replayed(t->config);
    for (const trace::step& s : t->steps) EXPECT_TRUE(replayed.step(s.event).ok());
    return replayed.counters();
}

// Runs `fairpool-replay --check FILE`; its exit status, and what it printed.
inline std::pair<int, std::string> run_replay_check(const std::string& tool, const std::string& file) {
    const std::string out = file + ".out";
    const std::string command = "'" + tool + "' --check '" + file + "' >'" + out + "' 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream printed(out);
    std::stringstream text;
    text << printed.rdbuf();
    std::remove(out.c_str());
    if (status == -1 || !WIFEXITED(status)) return {-1, text.str()};
    return {WEXITSTATUS(status), text.str()};
}

// The FAIRPOOL_REPLAY tool, or empty when the test runs without it.
inline std::string replay_tool() {
    const char* tool = std::getenv("FAIRPOOL_REPLAY");
    return tool ? tool : "";
}

// Writes `recording` to a temporary file and checks it with the tool: no failure means
// it replayed with identical effects. The file is kept (and named) when it did not.
inline void expect_replays_identically(const std::string& tool, const std::string& recording) {
    char path[] = "/tmp/fairpool-recording-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    {
        std::ofstream file(path);
        file << recording;
        ASSERT_TRUE(file.good());
    }
    const auto [status, printed] = run_replay_check(tool, path);
    EXPECT_EQ(status, 0) << printed;
    EXPECT_NE(printed.find(": ok,"), std::string::npos) << printed;
    if (status == 0) std::remove(path);
    else std::printf("recording kept in %s\n", path);
}

}  // namespace fairpool::testing
