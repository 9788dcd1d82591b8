#pragma once
// The flight recorder's writer: turns the records the actor pushed (flight_record.hpp)
// into text trace format v2 (docs/CONTRACT.md section 7.2), one segment a file in the
// recorder's directory, or, memory_only, the last two segments kept in memory. Used by
// one thread at a time (the recorder's writer thread; its destructor after the join).
//
// A failed write (a directory that cannot be made, a full disk) never reaches the
// pool: it is counted, kept as last_error, and nothing more is written to files.
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fairpool/asio/detail/flight_record.hpp"
#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/config.hpp"

namespace fairpool::detail {

class flight_writer {
public:
    flight_writer(recorder_options o, const core::config& resolved);

    void consume(const flight_record& r);
    // The end of a drain: the current file flushed (a crash loses at most one drain).
    void flush();
    // Copies of the retained segment files, or the in-memory segments, into `dir`.
    [[nodiscard]] boost::system::error_code dump(const std::filesystem::path& dir);
    // The recording ends: the current file flushed and closed.
    void finish();

    // The writer's part of recording_status.
    void fill(recording_status& s) const;

    [[nodiscard]] static std::string file_name(std::uint64_t segment);  // segment-00000003.trace

private:
    void begin_segment();
    void write_step();
    void fail(const std::string& what);
    void keep_earlier_recording();
    [[nodiscard]] std::ostream* out() noexcept;

    const recorder_options options_;
    const core::config config_;

    std::optional<segment_start> starting_;  // its snapshot still being read
    std::vector<core::snapshot_record> snapshot_;
    std::optional<step_record> step_;  // its effects still being read
    std::vector<core::effect> effects_;
    bool open_ = false;  // a segment's start was written: steps go to out()

    // Directory mode.
    std::ofstream file_;
    std::deque<std::uint64_t> retained_;  // segment files present, oldest first
    bool directory_ready_ = false;
    // Memory mode: the current segment and the one before it.
    std::ostringstream current_;
    std::optional<std::uint64_t> current_number_;
    std::string previous_;
    std::optional<std::uint64_t> previous_number_;

    std::uint64_t segments_written_ = 0;
    std::uint64_t events_written_ = 0;
    std::uint64_t write_errors_ = 0;
    std::string last_error_;
    bool failed_ = false;
};

}  // namespace fairpool::detail
