// The flight recorder (pool_options::recording) on one thread, with the manual clock:
// segments and their retention, memory-only recording and dump_recording, a writer
// that stalls (the gap path), a step too big for the ring, a writer that cannot write
// (no directory, a full disk, a full disk and a cut back that fails), a process killed
// while its writer writes, and options validation. Every recording is read back in
// process (the core restored from each segment's snapshot replays its events with the
// recorded effects) and, where FAIRPOOL_REPLAY names the tool, replayed by
// `fairpool-replay --check` file by file and as a chain.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "fixture.hpp"
#include "fairpool/trace/binary.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

namespace fs = std::filesystem;

// Every recorder test runs twice: the binary format (v3, the default) and text (v2).
class recorder : public adapter, public ::testing::WithParamInterface<recording_format> {
protected:
    [[nodiscard]] bool text() const { return GetParam() == recording_format::text; }

    // `n` acquire → grant → release cycles (each two events), settled.
    void cycles(test_pool& pool, int n) {
        for (int i = 0; i < n; ++i) {
            outcome o;
            pool.async_acquire(record(o));
            settle();
            ASSERT_TRUE(o.lease);
            o.lease.release();
            settle();
        }
    }

    // Drops the pool and runs until its state is gone: its shutdown recorded, the
    // recorder's writer drained and joined.
    void end(std::unique_ptr<test_pool>& pool) {
        const auto lifetime = pool->diagnostics().lifetime;
        pool.reset();
        settle();
        run_due();
        ASSERT_TRUE(lifetime.expired());
    }

    [[nodiscard]] recorder_options in_directory(const fs::path& dir, std::uint64_t segment_events,
                                                std::uint32_t keep) const {
        recorder_options r;
        r.format = GetParam();
        r.directory = dir;
        r.segment_events = segment_events;
        r.keep_segments = keep;
        return r;
    }

    // Each file replays alone, and the directory as a chain, with the tool.
    static void expect_each_and_chain_replay(const fs::path& dir) {
        const std::string tool = replay_tool();
        if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
        for (const fs::path& f : segment_files(dir)) expect_replays_identically(tool, f);
        expect_replays_identically(tool, dir);
    }
};

// Segments are numbered, consecutive, of segment_events events each, each starting with
// the config and a snapshot; segment N's events_before is the events before it.
void expect_consecutive(const std::vector<fs::path>& files, std::uint64_t first, std::uint64_t segment_events,
                        int version) {
    std::uint64_t number = first;
    std::optional<std::uint64_t> events_before;
    for (const fs::path& f : files) {
        SCOPED_TRACE(f.string());
        EXPECT_EQ(f.filename().string(), detail::flight_writer::file_name(number));
        const trace::trace t = read_segment(f);
        EXPECT_EQ(t.version, version);
        ASSERT_TRUE(t.segment);
        EXPECT_EQ(t.segment->number, number);
        EXPECT_FALSE(t.snapshot.empty());
        EXPECT_FALSE(t.gap);
        const std::uint64_t expected_before = events_before ? *events_before : first * segment_events;
        EXPECT_EQ(t.segment->events_before, expected_before);
        events_before = t.segment->events_before + t.steps.size();
        if (&f != &files.back()) {
            EXPECT_EQ(t.steps.size(), segment_events);
        }
        replay_segment(t, f.string());
        ++number;
    }
}

// Runs `child` in a forked process, which exits with what it returns (or is killed);
// the parent waits for it: its exit status, -1 if it did not exit. The child runs
// nothing of GoogleTest's: it reports through files, the parent checks them.
int in_child_process(const std::function<int()>& child, const std::function<void(pid_t)>& meanwhile = {}) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(child());
    if (pid < 0) return -1;
    if (meanwhile) meanwhile(pid);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A pool of ints on the steady clock and an io_context of its own (a child process's:
// the fixture's belongs to the parent), leased and released in turn by `cycle`.
struct int_pool {
    explicit int_pool(const pool_options& o)
        : pool(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 1; }) {}

    void cycle() {
        using lease_type = fairpool::pool<int>::lease_type;
        lease_type lease;
        pool.async_acquire([&lease](boost::system::error_code, lease_type l) { lease = std::move(l); });
        run();
        lease = {};
        run();
    }
    void run() {
        io.restart();
        while (io.poll() > 0) io.restart();
    }

    boost::asio::io_context io;
    fairpool::pool<int> pool;
};

TEST_P(recorder, segments_roll_every_segment_events_and_only_the_last_keep_segments_stay) {
    scratch_directory recording;
    pool_options o = options(1, 1);
    o.recording = in_directory(recording.path(), 5, 3);
    auto pool = make_pool(o);
    settle();           // start, spawned: 2 events
    cycles(*pool, 20);  // 40 more: segments 0..8, the last with 2
    EXPECT_EQ(pool->diagnostics().commands_fed, 42u);
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->segments_started, 9u);
    EXPECT_EQ(status->events_lost, 0u);
    end(pool);  // shutdown, retired: segment 8 has 4
    const auto files = segment_files(recording.path());
    ASSERT_EQ(files.size(), 3u);
    const trace::trace last = read_segment(files.back());
    ASSERT_TRUE(last.segment);
    EXPECT_EQ(last.segment->number, 8u);
    EXPECT_EQ(last.steps.size(), 4u);
    expect_consecutive(files, 6, 5, text() ? 2 : 3);
    expect_each_and_chain_replay(recording.path());
}

TEST_P(recorder, a_recording_found_at_start_is_moved_into_previous) {
    scratch_directory recording;
    {
        std::ofstream(recording / "segment-00000007.trace") << "an earlier run's\n";
    }
    pool_options o = options(1, 1);
    o.recording = in_directory(recording.path(), 100, 8);
    auto pool = make_pool(o);
    settle();
    end(pool);
    EXPECT_EQ(file_text(recording / "previous" / "segment-00000007.trace"), "an earlier run's\n");
    const auto files = segment_files(recording.path());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files.front().filename(), "segment-00000000.trace");
}

TEST_P(recorder, memory_only_keeps_the_last_two_segments_and_dumps_them_on_request) {
    scratch_directory dump;
    pool_options o = options(1, 1);
    recorder_options r;
    r.memory_only = true;
    r.segment_events = 10;
    r.format = GetParam();
    o.recording = r;
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 20);  // 42 events: segments 0..4, the last with 2
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    const auto files = segment_files(dump.path());
    ASSERT_EQ(files.size(), 2u);
    expect_consecutive(files, 3, 10, text() ? 2 : 3);
    EXPECT_EQ(read_segment(files.back()).steps.size(), 2u);
    // The last segment_events events at least, and the snapshot before them.
    expect_each_and_chain_replay(dump.path());
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->events_written, 42u);
    EXPECT_EQ(status->segments_written, 5u);
    EXPECT_EQ(status->write_errors, 0u);
}

TEST_P(recorder, a_directory_recording_is_dumped_as_copies_of_the_retained_files) {
    scratch_directory recording, dump;
    pool_options o = options(1, 1);
    o.recording = in_directory(recording.path(), 10, 2);
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 20);
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    const auto files = segment_files(dump.path());
    ASSERT_EQ(files.size(), 2u);
    expect_consecutive(files, 3, 10, text() ? 2 : 3);
    EXPECT_EQ(read_segment(files.back()).steps.size(), 2u);  // the current one, flushed
    EXPECT_EQ(pool->dump_recording(recording.path()), boost::system::errc::invalid_argument);
}

// A recording the recorder wrote and its conversions (fairpool-replay --to-text and
// --to-binary, segment by segment into a directory) are one recording: --check prints
// the same verdict for each (but the directory's name), the canonical v3 re-encoding of
// the recorder's files and of their text are byte for byte one, and the text of either
// is the text of the other. The recorder's blocks are its own (64 KiB, or a drain); the
// canonical encoding's are 4,096 steps: the same steps either way.
TEST_P(recorder, a_recording_and_its_conversions_check_alike) {
    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    scratch_directory recording, text_copy, binary_copy, binary_of_text;
    pool_options o = options(2, 1);
    o.recording = in_directory(recording.path(), 60, 100);
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 100);  // 202 events and more: four segments
    end(pool);
    const auto converted = [&](const char* mode, const fs::path& from, const fs::path& to) {
        const auto [status, printed] = run_replay(tool, std::string(mode) + " '" + to.string() + "' '" + from.string() + "'");
        EXPECT_EQ(status, 0) << printed;
    };
    converted("--to-text", recording.path(), text_copy.path());
    converted("--to-binary", recording.path(), binary_copy.path());
    converted("--to-binary", text_copy.path(), binary_of_text.path());
    const auto files = segment_files(recording.path());
    ASSERT_EQ(files.size(), 4u);
    const auto verdict = [&](const fs::path& dir) {
        auto [status, printed] = run_replay_check(tool, dir);
        EXPECT_EQ(status, 0) << printed;
        for (std::size_t at; (at = printed.find(dir.string())) != std::string::npos;)
            printed.replace(at, dir.string().size(), "DIR");
        return printed;
    };
    const std::string recorded = verdict(recording.path());
    EXPECT_NE(recorded.find(": ok, "), std::string::npos) << recorded;
    EXPECT_EQ(verdict(text_copy.path()), recorded);
    EXPECT_EQ(verdict(binary_copy.path()), recorded);
    for (const fs::path& f : files) {
        const std::string name = f.filename().string();
        SCOPED_TRACE(name);
        EXPECT_EQ(file_text(binary_copy / name), file_text(binary_of_text / name));
        EXPECT_EQ(recording_text(f), file_text(text_copy / name));
        EXPECT_EQ(trace::v3::is_binary(file_text(f)), !text());
    }
}

TEST_P(recorder, dumping_a_pool_that_does_not_record_is_an_error) {
    scratch_directory dump;
    auto pool = make_pool(options(1, 1));
    settle();
    EXPECT_EQ(pool->dump_recording(dump.path()), make_error_code(error::not_recording));
    EXPECT_FALSE(pool->recording_status());
    EXPECT_TRUE(segment_files(dump.path()).empty());
}

// The actor's high-water wake off while it lives (flight_recorder::wake_at_high_water):
// a writer whose flush_interval is hours then drains only for a dump and at the end, as
// a writer that stalls would.
class no_high_water_wake {
public:
    no_high_water_wake() { detail::flight_recorder::wake_at_high_water.store(false); }
    no_high_water_wake(const no_high_water_wake&) = delete;
    no_high_water_wake& operator=(const no_high_water_wake&) = delete;
    ~no_high_water_wake() { detail::flight_recorder::wake_at_high_water.store(true); }
};

// The writer never wakes on its own (a flush interval of hours, the actor's high-water
// wake off): the ring fills, the actor drops what does not fit and counts it. A dump
// drains the ring; the next step finds room again and pushes the gap and a fresh
// segment; the end of the pool pushes the second gap.
TEST_P(recorder, a_stalled_writer_gives_a_gap_with_the_exact_count_then_a_fresh_snapshot) {
    scratch_directory recording, dump;
    pool_options o = options(1, 1);
    o.max_waiters = 2;  // a small snapshot: the ring's room beyond it is a few cycles (about 16 bytes each): 1,000 overflow it
    recorder_options r = in_directory(recording.path(), 1'000'000, 8);
    r.ring_bytes = 400;
    r.flush_interval = std::chrono::hours(24);
    const no_high_water_wake stalled;
    o.recording = r;
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 1000);
    const std::uint64_t fed_at_dump = pool->diagnostics().commands_fed;
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    cycles(*pool, 1000);
    const std::uint64_t fed_at_end = pool->diagnostics().commands_fed;
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->gaps, 1u);
    EXPECT_EQ(status->segments_started, 2u);
    end(pool);
    const auto files = segment_files(recording.path());
    ASSERT_EQ(files.size(), 2u);
    const trace::trace first = read_segment(files[0]), second = read_segment(files[1]);
    ASSERT_TRUE(first.gap && second.gap && second.segment);
    // Every event fed before the dump is in segment 0 or its gap; segment 1 starts
    // with the state after them, and its gap (written at the end) holds the rest.
    EXPECT_GT(first.gap->events, 0u);
    EXPECT_EQ(first.steps.size() + first.gap->events, fed_at_dump);
    EXPECT_EQ(second.segment->events_before, fed_at_dump);
    EXPECT_EQ(second.segment->number, 1u);
    EXPECT_FALSE(second.snapshot.empty());
    EXPECT_GT(second.gap->events, 0u);
    EXPECT_EQ(fed_at_dump + second.steps.size() + second.gap->events, fed_at_end + 2);  // + shutdown, retired
    replay_segment(first, files[0].string());
    replay_segment(second, files[1].string());
    if (text()) {
        EXPECT_NE(file_text(files[0]).find("\ngap events=" + std::to_string(first.gap->events) + "\n"), std::string::npos);
    }

    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    for (const fs::path& f : files) {
        const auto [status, printed] = run_replay_check(tool, f);
        EXPECT_EQ(status, 0) << printed;
        EXPECT_NE(printed.find("gap"), std::string::npos) << printed;
    }
    const auto [chained, printed] = run_replay_check(tool, recording.path());
    EXPECT_EQ(chained, 2) << printed;
    EXPECT_NE(printed.find("gap: " + std::to_string(first.gap->events) +
                           " events were lost here; the recording cannot be replayed across it"),
              std::string::npos)
        << printed;
}

TEST_P(recorder, a_writer_that_cannot_write_stops_and_says_why_and_the_pool_runs_on) {
    scratch_directory scratch;
    { std::ofstream(scratch / "a-file") << "not a directory\n"; }
    pool_options o = options(1, 1);
    o.recording = in_directory(scratch / "a-file" / "recording", 5, 3);
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 20);
    scratch_directory dump;
    EXPECT_FALSE(pool->dump_recording(dump.path()));  // nothing retained: nothing to copy
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->write_errors, 1u);
    EXPECT_NE(status->last_error.find("creating " + (scratch / "a-file" / "recording").string()), std::string::npos)
        << status->last_error;
    EXPECT_EQ(status->events_written, 0u);
    EXPECT_EQ(pool->stats().grants_immediate, 20u);
}

// A full disk, as RLIMIT_FSIZE makes one for a child process (a write past the limit
// fails with EFBIG): the write that fails is cut back out of the file, which stays a
// valid trace ending at its last whole step; events_written counts the steps in it;
// dump_recording copies it and succeeds.
TEST_P(recorder, a_write_that_fails_is_cut_back_to_the_last_whole_step) {
    scratch_directory recording, dump, report;
    constexpr rlim_t limit = 16 * 1024;
    const int status = in_child_process([&] {
        std::signal(SIGXFSZ, SIG_IGN);
        const rlimit fsize{limit, limit};
        if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) return 3;
        pool_options o = options(1, 1);
        recorder_options r = in_directory(recording.path(), 1'000'000, 8);
        r.flush_interval = std::chrono::hours(24);  // the dumps drain the ring: each is a write
        o.recording = r;
        int_pool p(o);
        p.run();
        // 40 events a round in text, about 2.5 KiB; 200 in binary, about 1.6 KiB
        const int per_round = GetParam() == recording_format::text ? 20 : 100;
        for (int round = 0; round < 30; ++round) {
            for (int i = 0; i < per_round; ++i) p.cycle();
            if (p.pool.dump_recording(dump.path())) return 4;
        }
        const auto s = p.pool.recording_status();
        std::ofstream(report / "status") << s->events_written << ' ' << s->write_errors << ' ' << s->segments_written
                                         << '\n'
                                         << s->last_error << '\n';
        return 0;
    });
    ASSERT_EQ(status, 0);
    std::istringstream reported(file_text(report / "status"));
    std::uint64_t events_written = 0, write_errors = 0, segments_written = 0;
    std::string last_error;
    reported >> events_written >> write_errors >> segments_written;
    std::getline(reported >> std::ws, last_error);
    const fs::path file = recording / detail::flight_writer::file_name(0);
    EXPECT_EQ(write_errors, 1u);
    EXPECT_EQ(segments_written, 1u);
    EXPECT_EQ(last_error, "writing " + file.string() + ": File too large");
    ASSERT_EQ(segment_files(recording.path()), std::vector<fs::path>{file});
    const std::string text = file_text(file);
    EXPECT_LE(text.size(), limit);
    EXPECT_GT(text.size(), limit - 4 * 1024) << "cut back by one dump's write only";
    if (this->text()) {
        EXPECT_TRUE(text.ends_with("\n"));
    }
    const trace::trace t = read_segment(file);
    EXPECT_EQ(t.steps.size(), events_written);
    EXPECT_FALSE(t.gap);
    replay_segment(t, file.string());
    EXPECT_EQ(file_text(dump / detail::flight_writer::file_name(0)), text) << "the dump is a copy of the valid file";
    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    const auto [replayed, printed] = run_replay_check(tool, recording.path());
    EXPECT_EQ(replayed, 0) << printed;
    EXPECT_EQ(printed.find(": cut"), std::string::npos) << printed;
}

// This process's files limited to `bytes` (RLIMIT_FSIZE's soft limit; a write past it
// fails with EFBIG, SIGXFSZ ignored) while it lives. Only the soft limit moves, so it
// goes back up without privileges. Nothing in the process but the recorder's writer
// writes regular files meanwhile.
class file_size_limit {
public:
    explicit file_size_limit(rlim_t bytes) {
        old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        ::getrlimit(RLIMIT_FSIZE, &old_);
        const rlimit limited{bytes, old_.rlim_max};
        set_ = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
    }
    file_size_limit(const file_size_limit&) = delete;
    file_size_limit& operator=(const file_size_limit&) = delete;
    ~file_size_limit() {
        ::setrlimit(RLIMIT_FSIZE, &old_);
        std::signal(SIGXFSZ, old_handler_);
    }
    [[nodiscard]] bool set() const noexcept { return set_; }

private:
    rlimit old_{};
    void (*old_handler_)(int) = SIG_DFL;
    bool set_ = false;
};

// The writer's cut of a file after a failed write fails with EIO while it lives
// (flight_writer::cut_file, the seam for what cannot be caused on demand).
class failing_cut {
public:
    failing_cut() {
        detail::flight_writer::cut_file.store([](const fs::path&, std::uint64_t) { return EIO; });
    }
    failing_cut(const failing_cut&) = delete;
    failing_cut& operator=(const failing_cut&) = delete;
    ~failing_cut() { detail::flight_writer::cut_file.store(&detail::flight_writer::truncate_file); }
};

// A write that fails (the file size limit, in this process around one dump) and whose
// cut back to the last whole step fails too: the file is not removed (that lost the
// whole segment while events_written and segments_written still counted it) but left as
// it is, cut where the failed write began (a hole: a line starting with a NUL byte,
// CONTRACT section 7.2, "Cut files"), and written no more. The status says so, and its
// counters are what the file holds whole: what fairpool-replay replays, up to the cut.
TEST_P(recorder, a_write_that_fails_and_cannot_be_cut_back_leaves_the_file_cut_and_the_status_says_so) {
    scratch_directory recording, first_dump, dump, last_dump;
    pool_options o = options(1, 1);
    recorder_options r = in_directory(recording.path(), 1'000'000, 8);
    r.flush_interval = std::chrono::hours(24);  // the dumps drain the ring: each is a write
    o.recording = r;
    auto pool = make_pool(o);
    settle();           // start, spawned
    cycles(*pool, 20);  // 40 more
    ASSERT_FALSE(pool->dump_recording(first_dump.path()));
    const fs::path file = recording / detail::flight_writer::file_name(0);
    const std::string whole = file_text(file);
    ASSERT_EQ(read_segment(file).steps.size(), 42u);
    ASSERT_EQ(pool->recording_status()->events_written, 42u);

    constexpr std::size_t torn = 100;  // what the failed write leaves past the last whole step
    {
        const failing_cut cut;
        const file_size_limit limit(whole.size() + torn);
        ASSERT_TRUE(limit.set());
        cycles(*pool, 20);
        // The dump's copy of the file fits the limit exactly.
        EXPECT_FALSE(pool->dump_recording(dump.path()));
    }
    cycles(*pool, 5);  // not written: the writing stopped
    EXPECT_FALSE(pool->dump_recording(last_dump.path()));
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->write_errors, 1u);
    EXPECT_EQ(status->segments_written, 1u);
    EXPECT_EQ(status->events_written, 42u);
    EXPECT_EQ(status->events_lost, 0u);
    EXPECT_EQ(status->last_error, "writing " + file.string() +
                                      ": File too large; cutting it back to its last whole step: Input/output error: "
                                      "left cut where that write began");
    end(pool);

    // On disk: the 42 steps whole, then the torn write, its first byte a hole.
    ASSERT_EQ(segment_files(recording.path()), std::vector<fs::path>{file});
    const std::string text = file_text(file);
    ASSERT_EQ(text.size(), whole.size() + torn);
    EXPECT_EQ(text.substr(0, whole.size()), whole);
    if (this->text()) {  // the text writer's batch: its first byte (written last) a hole
        EXPECT_EQ(text[whole.size()], '\0');
        EXPECT_EQ(text.find('\0'), whole.size());
    } else {  // a binary block is one write: the torn tail is a prefix of it, its kind byte first
        EXPECT_EQ(text[whole.size()], '\1');
    }
    EXPECT_EQ(file_text(dump / detail::flight_writer::file_name(0)), text);
    EXPECT_EQ(file_text(last_dump / detail::flight_writer::file_name(0)), text);
    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    const std::string cut_at = this->text()
                                   ? ":" + std::to_string(std::count(whole.begin(), whole.end(), '\n') + 1) + ": cut: "
                                   : ": byte " + std::to_string(whole.size()) + ": cut: ";
    for (const fs::path& target : {recording.path(), file, dump.path()}) {
        const auto [replayed, printed] = run_replay_check(tool, target);
        EXPECT_EQ(replayed, 0) << printed;
        EXPECT_NE(printed.find(detail::flight_writer::file_name(0) + cut_at), std::string::npos)
            << printed;
        EXPECT_NE(printed.find(": ok, 42 events"), std::string::npos) << printed;
    }
}

// Kills `child` (SIGKILL) right after its recording in `dir` grew for the `times`-th
// time: when a writer that wrote as it formatted (the ofstream before) would be in the
// middle of a drain, and a write of the drain's batch has just begun or ended.
void killed_as_it_grows(pid_t child, const fs::path& dir, int times) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::uintmax_t size = 0;
    while (times > 0 && std::chrono::steady_clock::now() < deadline) {
        const auto files = segment_files(dir);
        std::error_code ec;
        const std::uintmax_t now = files.empty() ? 0 : fs::file_size(files.back(), ec);
        if (!ec && now != size) --times, size = now;
    }
    ::kill(child, SIGKILL);
}

// A busy pool's process killed (SIGKILL) as its writer writes, again and again at other
// moments: every segment file it leaves replays with the recorded effects, on its own
// and as a chain (the last one up to its last whole step).
TEST_P(recorder, a_process_killed_while_its_writer_writes_leaves_a_recording_that_replays) {
    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    int checked = 0;
    for (int run = 0; run < 12; ++run) {
        SCOPED_TRACE("run " + std::to_string(run));
        scratch_directory recording;
        const int status = in_child_process(
            [&] {
                pool_options o = options(2, 2);
                recorder_options r = in_directory(recording.path(), 3'000, 1'000);
                r.flush_interval = std::chrono::milliseconds(2);
                o.recording = r;
                int_pool p(o);
                for (;;) p.cycle();
                return 0;
            },
            [&](pid_t child) {
                killed_as_it_grows(child, recording.path(), 2 + run);
            });
        EXPECT_EQ(status, -1);
        const auto files = segment_files(recording.path());
        // Killed before the first write, or while writing the start of the first segment
        // (its first byte is written last: 0 in the hole): nothing was recorded.
        const auto started = [](const fs::path& f) {
            const std::string text = file_text(f);
            if (trace::v3::is_binary(text)) {  // its header whole
                std::optional<std::size_t> cut;
                return !std::holds_alternative<trace::read_error>(trace::v3::read(text, true, &cut)) || cut != 0u;
            }
            return !text.empty() && text.front() != '\0';
        };
        const auto has_gap = [](const fs::path& f) {
            const std::string text = file_text(f);
            if (!trace::v3::is_binary(text)) return text.find("\ngap events=") != std::string::npos;
            const auto read = trace::v3::read(text, true);
            return std::holds_alternative<trace::trace>(read) && std::get<trace::trace>(read).gap.has_value();
        };
        if (files.empty() || (files.size() == 1 && !started(files[0]))) continue;
        // A gap breaks the recording (the writer may fall behind the busy pool): the
        // segments up to the last gap replay one by one, the ones after it as a chain
        // (the directory when there is no gap), the last one up to its last whole step.
        std::size_t after_gap = 0;
        for (std::size_t i = 0; i < files.size(); ++i)
            if (has_gap(files[i])) after_gap = i + 1;
        for (std::size_t i = 0; i < after_gap; ++i) {
            const auto [replayed, printed] = run_replay_check(tool, files[i]);
            EXPECT_EQ(replayed, 0) << printed;
        }
        // Appended piece by piece: g++ 12 at -O3 warns falsely (-Wrestrict, GCC PR 105329)
        // on "'" + std::string + "'" here.
        std::string chain;
        const auto quoted = [&chain](const std::filesystem::path& p) { chain.append(" '").append(p.string()).append("'"); };
        if (after_gap == 0) quoted(recording.path());
        for (std::size_t i = after_gap; i < files.size() && after_gap > 0; ++i) quoted(files[i]);
        if (after_gap + 1 < files.size() || (after_gap + 1 == files.size() && started(files.back()))) {
            const auto [chained, printed] = run_replay(tool, "--check " + chain);
            EXPECT_EQ(chained, 0) << printed;
        }
        ++checked;
    }
    EXPECT_GT(checked, 6);
}

// A step of more effects than the ring has room for (a deregistration rejecting 100
// waiters) is lost alone: the ring has room for the gap, a segment start and the
// snapshot after it, so the next step ends the gap (CONTRACT 8) without waiting for the
// writer. The actor is fed by hand around a core scheduler; the writer never wakes on
// its own (its high-water wake off), so the ring's room is what the steps left: the
// cycles before the waiters are as many as leave it about 1,500 bytes for the
// deregistration, which needs max_step_bytes(100) = 2,462 to be copied, where the gap,
// the segment start and a snapshot of the state after it (a handful of records) need
// far less.
TEST(flight_recorder, a_step_too_big_for_the_ring_is_the_only_one_lost) {
    core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    c.max_waiters = 200;
    core::scheduler s(c);
    recorder_options r;
    r.memory_only = true;
    r.ring_bytes = 1;
    r.segment_events = 1'000'000;
    r.flush_interval = std::chrono::hours(24);
    const no_high_water_wake stalled;
    const std::uint64_t capacity = detail::flight_recorder::capacity(r, s.configuration());
    std::vector<unsigned char> scratch(1 << 16);
    trace::v3::delta_base base;  // as the actor's: each step's bytes follow the ones before
    std::uint64_t pushed = detail::ring_record::segment_bytes;  // bytes: the segment start and snapshot
    for (const core::snapshot_record& record : trace::snapshot_of(s))
        pushed += static_cast<std::uint64_t>(trace::v3::put_snapshot_record(scratch.data(), record) - scratch.data());
    detail::flight_recorder recorder(r, s);
    recorder.commit();  // as a pool's start does: the writer may write
    core::nanos now = 0;
    std::uint64_t waiter = 0;
    const auto bytes_of = [&](core::scheduler& machine, trace::v3::delta_base& b, const core::event& e) {
        const core::step_result result = machine.step(e);
        return static_cast<std::uint64_t>(trace::v3::put_step(scratch.data(), b, e, result.effects, result.error) -
                                          scratch.data());
    };
    const auto feed = [&](const core::event& e) {
        recorder.before_step(s);
        core::scheduler copy = s;
        const core::step_result result = s.step(e);
        recorder.after_step(e, result);
        pushed += bytes_of(copy, base, e);
        return result.effects.empty() ? std::uint64_t{0} : result.effects[0].lease;
    };
    const auto cycle = [&] {
        const std::uint64_t lease = feed(core::event::acquire(++now, ++waiter, 1));
        feed(core::event::release(++now, 0, lease, core::release_outcome::clean));
    };
    feed(core::event::start(++now));
    feed(core::event::spawned(++now, 0));
    // What the held acquire and the 100 queued ones will take, found on copies: the
    // cycles before them leave 1,500 bytes or a cycle less.
    std::uint64_t ahead = 0;
    {
        core::scheduler trial = s;
        trace::v3::delta_base b = base;
        core::nanos t = now + 2;  // after one more cycle
        std::uint64_t w = waiter + 1;
        ahead += bytes_of(trial, b, core::event::acquire(++t, ++w, 1));
        for (int i = 0; i < 100; ++i) ahead += bytes_of(trial, b, core::event::acquire(++t, ++w, 2));
    }
    constexpr std::uint64_t room_left = 1500;
    ASSERT_GT(capacity, pushed + ahead + room_left);
    std::uint64_t cycles = 0;
    while (capacity - pushed - ahead > room_left) cycle(), ++cycles;
    const std::uint64_t lease = feed(core::event::acquire(++now, ++waiter, 1));
    for (int i = 0; i < 100; ++i) feed(core::event::acquire(++now, ++waiter, 2));  // queued
    ASSERT_EQ(recorder.status().events_lost, 0u);
    ASSERT_LT(capacity - pushed, trace::v3::max_step_bytes(100));
    feed(core::event::deregister(++now, 2));  // 1 + 100 records: lost
    ASSERT_EQ(recorder.status().events_lost, 1u);
    feed(core::event::release(++now, 0, lease, core::release_outcome::clean));
    for (int i = 0; i < 3; ++i) cycle();
    const recording_status status = recorder.status();
    EXPECT_EQ(status.events_lost, 1u);
    EXPECT_EQ(status.gaps, 1u);
    EXPECT_EQ(status.segments_started, 2u);

    scratch_directory dump;
    ASSERT_FALSE(recorder.dump(dump.path()));
    const auto files = segment_files(dump.path());
    ASSERT_EQ(files.size(), 2u);
    const trace::trace first = read_segment(files[0]), second = read_segment(files[1]);
    ASSERT_TRUE(first.gap && second.segment);
    EXPECT_EQ(first.gap->events, 1u);
    EXPECT_EQ(first.steps.size(), 2u + 2 * cycles + 1u + 100u);
    EXPECT_EQ(second.segment->events_before, first.steps.size() + 1);
    EXPECT_EQ(second.steps.size(), 7u);
    EXPECT_FALSE(second.gap);
    replay_segment(first, files[0].string());
    replay_segment(second, files[1].string());
}

// Segment files past 99999999 have more digits: segment_files (and fairpool-replay)
// order them by number, not as strings.
TEST(recording_files, segments_past_99999999_come_in_number_order) {
    scratch_directory dir;
    for (const std::uint64_t n : {100'000'000ULL, 99'999'999ULL, 99'999'998ULL, 1'000'000'000ULL})
        std::ofstream(dir / detail::flight_writer::file_name(n)) << "\n";
    EXPECT_EQ(segment_files(dir.path()),
              (std::vector<fs::path>{dir / "segment-99999998.trace", dir / "segment-99999999.trace",
                                     dir / "segment-100000000.trace", dir / "segment-1000000000.trace"}));
}

TEST_P(recorder, invalid_recorder_options_are_refused_naming_the_field) {
    const auto refusal = [](const recorder_options& r) {
        pool_options o;
        o.max_slots = 1;
        o.recording = r;
        return validate(o).value_or("");
    };
    recorder_options good;
    good.directory = "/tmp/somewhere";
    EXPECT_EQ(refusal(good), "");
    recorder_options r = good;
    r.directory.clear();
    EXPECT_EQ(refusal(r), "recording.directory: must be given (or memory_only set)");
    r.memory_only = true;
    EXPECT_EQ(refusal(r), "");
    r = good, r.segment_events = 0;
    EXPECT_EQ(refusal(r), "recording.segment_events: must be at least 1");
    r = good, r.keep_segments = 0;
    EXPECT_EQ(refusal(r), "recording.keep_segments: must be at least 1");
    r = good, r.ring_bytes = 0;
    EXPECT_EQ(refusal(r), "recording.ring_bytes: must be at least 1");
    r = good, r.ring_bytes = (1U << 30) + 1;
    EXPECT_EQ(refusal(r), "recording.ring_bytes: 1073741825 is above 1073741824");
    r = good, r.flush_interval = std::chrono::milliseconds(0);
    EXPECT_EQ(refusal(r), "recording.flush_interval: must be positive");
    // Longer would overflow the writer's wait (milliseconds::max() made it spin).
    r = good, r.flush_interval = std::chrono::milliseconds::max();
    EXPECT_EQ(refusal(r), "recording.flush_interval: 9223372036854775807 ms is above 86400000 (24 hours)");
    r = good, r.flush_interval = std::chrono::hours(24) + std::chrono::milliseconds(1);
    EXPECT_EQ(refusal(r), "recording.flush_interval: 86400001 ms is above 86400000 (24 hours)");
    r = good, r.flush_interval = std::chrono::hours(24);
    EXPECT_EQ(refusal(r), "");
    r = good, r.segment_events = 0;
    pool_options o = options(1, 1);
    o.recording = r;
    try {
        make_pool(o);
        ADD_FAILURE() << "made a pool with segment_events 0";
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("recording.segment_events"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(formats, recorder, ::testing::Values(recording_format::binary, recording_format::text),
                         [](const ::testing::TestParamInfo<recording_format>& i) {
                             return i.param == recording_format::binary ? "binary" : "text";
                         });

// Waits (polling, for 60 s at most: a deadline, never a measure) until `done()`.
template <class Done>
bool eventually(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// The writer's wake: by the actor when the ring is more than half full, by the clock
// every flush_interval otherwise.
class recorder_wake : public adapter {
protected:
    // `n` acquire → grant → release cycles (each two events, three records), settled.
    void cycles(test_pool& pool, int n) {
        for (int i = 0; i < n; ++i) {
            outcome o;
            pool.async_acquire(record(o));
            settle();
            ASSERT_TRUE(o.lease);
            o.lease.release();
            settle();
        }
    }

    // Drops the pool and runs until its state is gone: its shutdown recorded, the
    // recorder's writer drained and joined.
    void end(std::unique_ptr<test_pool>& pool) {
        const auto lifetime = pool->diagnostics().lifetime;
        pool.reset();
        settle();
        run_due();
        ASSERT_TRUE(lifetime.expired());
    }
};

// A writer whose flush_interval is a day keeps up with a pool that pushes more than a
// ring's worth of bytes, an eighth at a time, through a ring of about 8 KiB: the actor
// wakes it each time the ring passes half full. Paced so that it can: after each
// batch, the test waits until at most capacity/10 events are still to be written,
// which a writer that drains whenever the ring is more than half full always reaches
// (an event here takes 5 bytes at least: half a ring holds capacity/10 of them), and
// which leaves the ring room for the next batch (an event takes 9 bytes at most, a
// batch an eighth of the ring at most). Without the actor's wake nothing wakes this
// writer before the end, and the first wait that needs it never ends.
TEST_F(recorder_wake, a_writer_asleep_for_a_day_is_woken_when_the_ring_is_more_than_half_full) {
    scratch_directory recording;
    pool_options o = options(1, 1);
    o.max_waiters = 2;  // a small snapshot: the ring is about ring_bytes
    recorder_options r;
    r.directory = recording.path();
    r.segment_events = 1'000'000'000;
    r.ring_bytes = 4096;
    r.flush_interval = std::chrono::hours(24);
    o.recording = r;
    const std::uint64_t capacity = detail::flight_recorder::capacity(r, scheduler_config(o).resolved());
    auto pool = make_pool(o);
    settle();
    const int batch = static_cast<int>(capacity / (8 * 20));  // 14 to 20 bytes a cycle: an eighth of the ring at most
    for (int i = 0; i < 160; ++i) {
        cycles(*pool, batch);
        const std::uint64_t fed = pool->diagnostics().commands_fed;
        ASSERT_TRUE(eventually([&] { return pool->recording_status()->events_written + capacity / 10 + 2 >= fed; }))
            << "batch " << i << ": " << pool->recording_status()->events_written << " of " << fed
            << " events written: the writer was not woken";
    }
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_GT(fed / 2 * 14, capacity);  // a cycle takes 14 bytes at least
    EXPECT_EQ(status->events_lost, 0u);
    EXPECT_EQ(status->gaps, 0u);
    EXPECT_EQ(status->segments_started, 1u);
    EXPECT_GT(status->writer_cpu_time.count(), 0);
    end(pool);
    const auto files = segment_files(recording.path());
    ASSERT_EQ(files.size(), 1u);
    const trace::trace t = read_segment(files[0]);
    EXPECT_FALSE(t.gap);
    EXPECT_EQ(t.steps.size(), fed + 2);  // + shutdown, retired
}

// Below the high-water mark the actor never wakes the writer; the clock does, every
// flush_interval (10 ms by default): what a few steps leave in the ring is written
// without a dump or the end.
TEST_F(recorder_wake, below_the_high_water_mark_the_writer_still_wakes_every_flush_interval) {
    pool_options o = options(1, 1);
    recorder_options r;
    r.memory_only = true;
    o.recording = r;
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 10);
    const std::uint64_t fed = pool->diagnostics().commands_fed;
    EXPECT_TRUE(eventually([&] { return pool->recording_status()->events_written == fed; }))
        << pool->recording_status()->events_written << " of " << fed << " events written";
    EXPECT_EQ(pool->recording_status()->events_lost, 0u);
    end(pool);
}

// The actor fed by hand around a core scheduler, the writer asleep for a day: the actor
// posts at most once per half ring of bytes it pushes, and often enough for the writer
// to keep up (each post is followed by one drain, which takes a ring at most). Paced as
// above, by the writer's count of events written. The bytes pushed are counted exactly:
// each step's v3 records, the segment marker and the snapshot's records.
TEST(flight_recorder, the_actor_wakes_the_writer_at_most_once_per_half_ring) {
    core::config c;
    c.max_slots = 1;
    c.min_slots = 1;
    c.max_waiters = 2;
    core::scheduler s(c);
    recorder_options r;
    r.memory_only = true;
    r.ring_bytes = 4096;
    r.segment_events = 1'000'000'000;
    r.flush_interval = std::chrono::hours(24);
    const std::uint64_t capacity = detail::flight_recorder::capacity(r, s.configuration());
    std::vector<unsigned char> scratch(4096);
    trace::v3::delta_base base;  // as the actor's: the bytes of each step follow the ones before
    std::uint64_t records = detail::ring_record::segment_bytes;  // bytes: the first segment's start and snapshot
    for (const core::snapshot_record& record : trace::snapshot_of(s))
        records += static_cast<std::uint64_t>(trace::v3::put_snapshot_record(scratch.data(), record) - scratch.data());
    detail::flight_recorder recorder(r, s);
    recorder.commit();  // as a pool's start does: the writer may write
    core::nanos now = 0;
    std::uint64_t waiter = 0, events = 0;
    const auto feed = [&](const core::event& e) {
        recorder.before_step(s);
        const core::step_result result = s.step(e);
        recorder.after_step(e, result);
        records += static_cast<std::uint64_t>(
            trace::v3::put_step(scratch.data(), base, e, result.effects, result.error) - scratch.data());
        ++events;
        return result.effects.empty() ? std::uint64_t{0} : result.effects[0].lease;
    };
    feed(core::event::start(++now));
    feed(core::event::spawned(++now, 0));
    for (int batch = 0; batch < 200; ++batch) {
        for (std::uint64_t i = 0; i < capacity / (8 * 14); ++i) {
            const std::uint64_t lease = feed(core::event::acquire(++now, ++waiter, 1));
            feed(core::event::release(++now, 0, lease, core::release_outcome::clean));
        }
        ASSERT_TRUE(eventually([&] { return recorder.status().events_written + capacity / 10 + 2 >= events; }))
            << "batch " << batch << ": " << recorder.status().events_written << " of " << events
            << " events written: the writer was not woken";
    }
    const recording_status status = recorder.status();
    EXPECT_EQ(status.events_lost, 0u);
    EXPECT_GT(records, 20 * capacity);
    const std::uint64_t wakes = recorder.high_water_wakes();
    EXPECT_LE(wakes, records / (capacity / 2) + 1);
    EXPECT_GE(wakes + 1, records / capacity);
    EXPECT_GT(recorder.writer_cpu_time().count(), 0);
}

}  // namespace
}  // namespace fairpool::testing
