// The flight recorder (pool_options::recording) on one thread, with the manual clock:
// segments and their retention, memory-only recording and dump_recording, a writer
// that stalls (the gap path), a writer that cannot write, and options validation.
// Every recording is read back in process (the core restored from each segment's
// snapshot replays its events with the recorded effects) and, where FAIRPOOL_REPLAY
// names the tool, replayed by `fairpool-replay --check` file by file and as a chain.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "fixture.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

namespace fs = std::filesystem;

class recorder : public adapter {
protected:
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
        const auto lifetime = pool->lifetime();
        pool.reset();
        settle();
        run_due();
        ASSERT_TRUE(lifetime.expired());
    }

    static recorder_options in_directory(const fs::path& dir, std::uint64_t segment_events, std::uint32_t keep) {
        recorder_options r;
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
void expect_consecutive(const std::vector<fs::path>& files, std::uint64_t first, std::uint64_t segment_events) {
    std::uint64_t number = first;
    std::optional<std::uint64_t> events_before;
    for (const fs::path& f : files) {
        SCOPED_TRACE(f.string());
        EXPECT_EQ(f.filename().string(), detail::flight_writer::file_name(number));
        const trace::trace t = read_segment(f);
        EXPECT_EQ(t.version, 2);
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

TEST_F(recorder, segments_roll_every_segment_events_and_only_the_last_keep_segments_stay) {
    scratch_directory recording;
    pool_options o = options(1, 1);
    o.recording = in_directory(recording.path(), 5, 3);
    auto pool = make_pool(o);
    settle();           // start, spawned: 2 events
    cycles(*pool, 20);  // 40 more: segments 0..8, the last with 2
    EXPECT_EQ(pool->commands_fed(), 42u);
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
    expect_consecutive(files, 6, 5);
    expect_each_and_chain_replay(recording.path());
}

TEST_F(recorder, a_recording_found_at_start_is_moved_into_previous) {
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

TEST_F(recorder, memory_only_keeps_the_last_two_segments_and_dumps_them_on_request) {
    scratch_directory dump;
    pool_options o = options(1, 1);
    recorder_options r;
    r.memory_only = true;
    r.segment_events = 10;
    o.recording = r;
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 20);  // 42 events: segments 0..4, the last with 2
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    const auto files = segment_files(dump.path());
    ASSERT_EQ(files.size(), 2u);
    expect_consecutive(files, 3, 10);
    EXPECT_EQ(read_segment(files.back()).steps.size(), 2u);
    // The last segment_events events at least, and the snapshot before them.
    expect_each_and_chain_replay(dump.path());
    const auto status = pool->recording_status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->events_written, 42u);
    EXPECT_EQ(status->segments_written, 5u);
    EXPECT_EQ(status->write_errors, 0u);
}

TEST_F(recorder, a_directory_recording_is_dumped_as_copies_of_the_retained_files) {
    scratch_directory recording, dump;
    pool_options o = options(1, 1);
    o.recording = in_directory(recording.path(), 10, 2);
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 20);
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    const auto files = segment_files(dump.path());
    ASSERT_EQ(files.size(), 2u);
    expect_consecutive(files, 3, 10);
    EXPECT_EQ(read_segment(files.back()).steps.size(), 2u);  // the current one, flushed
    EXPECT_EQ(pool->dump_recording(recording.path()), boost::system::errc::invalid_argument);
}

TEST_F(recorder, dumping_a_pool_that_does_not_record_is_an_error) {
    scratch_directory dump;
    auto pool = make_pool(options(1, 1));
    settle();
    EXPECT_EQ(pool->dump_recording(dump.path()), make_error_code(error::not_recording));
    EXPECT_FALSE(pool->recording_status());
    EXPECT_TRUE(segment_files(dump.path()).empty());
}

// The writer never wakes on its own (a flush interval of hours): the ring fills, the
// actor drops what does not fit and counts it. A dump drains the ring; the next step
// finds room again and pushes the gap and a fresh segment; the end of the pool pushes
// the second gap.
TEST_F(recorder, a_stalled_writer_gives_a_gap_with_the_exact_count_then_a_fresh_snapshot) {
    scratch_directory recording, dump;
    pool_options o = options(1, 1);
    o.scheduler.max_waiters = 2;  // a small snapshot: the ring's room beyond it is 8 + 4 records
    recorder_options r = in_directory(recording.path(), 1'000'000, 8);
    r.ring_records = 8;
    r.flush_interval = std::chrono::hours(24);
    o.recording = r;
    auto pool = make_pool(o);
    settle();
    cycles(*pool, 100);
    const std::uint64_t fed_at_dump = pool->commands_fed();
    ASSERT_FALSE(pool->dump_recording(dump.path()));
    cycles(*pool, 100);
    const std::uint64_t fed_at_end = pool->commands_fed();
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
    EXPECT_NE(file_text(files[0]).find("\ngap events=" + std::to_string(first.gap->events) + "\n"), std::string::npos);

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

TEST_F(recorder, a_writer_that_cannot_write_stops_and_says_why_and_the_pool_runs_on) {
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

TEST_F(recorder, invalid_recorder_options_are_refused_naming_the_field) {
    const auto refusal = [](const recorder_options& r) {
        pool_options o;
        o.scheduler.max_slots = 1;
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
    r = good, r.ring_records = 0;
    EXPECT_EQ(refusal(r), "recording.ring_records: must be at least 1");
    r = good, r.ring_records = (1U << 26) + 1;
    EXPECT_EQ(refusal(r), "recording.ring_records: 67108865 is above 67108864");
    r = good, r.flush_interval = std::chrono::milliseconds(0);
    EXPECT_EQ(refusal(r), "recording.flush_interval: must be positive");
    r = good, r.segment_events = 0;
    pool_options o = options(1, 1);
    o.recording = r;
    try {
        make_pool(o);
        ADD_FAILURE() << "made a pool with segment_events 0";
    } catch (const core::config_error& e) {
        EXPECT_NE(std::string(e.what()).find("recording.segment_events"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fairpool::testing
