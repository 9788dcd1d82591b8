#pragma once
// The flight recorder's writer: turns the records the actor copied into the ring
// (flight_record.hpp) into segment files, one segment a file in the recorder's directory, or, memory_only,
// the last two segments kept in memory. Used by one thread at a time (the recorder's
// writer thread; its destructor after the join).
//
// Binary (trace format v3, docs/CONTRACT.md section 7.3; the default): the ring already
// holds each step as v3 records, so the writer copies its bytes into a block buffer
// allocated once (no formatting, no allocation per record or block) and writes each
// block, whole steps only, with its length and CRC-32C, in one write when it passes
// block_limit and at the end of each drain. A
// process killed while the writer writes leaves a prefix of its last write, a torn
// tail that fairpool-replay cuts at the last whole block.
//
// Text (trace format v2, section 7.2; recorder_options::format = text): each step is
// decoded from the ring and its text formatted into a batch, written at the drain's end (and whenever the batch passes a
// megabyte) at the end of the file, its first byte last (write_batch says why). A
// process killed while the writer writes leaves at most its last batch cut, starting
// with a NUL byte, which fairpool-replay drops (section 7.2, "Cut files").
//
// A failed write (a directory that cannot be made, a full disk) never reaches the
// pool: it is counted, kept as last_error, and nothing more is written to files. The
// file being written is cut back to its last whole step (removed if it has none), so
// every file left is a valid trace; if that cut fails, the file is kept cut where the
// failed write began, as a killed process leaves it (fail_writing).
#include <boost/system/error_code.hpp>
#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "fairpool/asio/detail/flight_record.hpp"
#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/config.hpp"
#include "fairpool/trace/binary.hpp"

namespace fairpool::detail {

// An ostream's buffer that appends to a string, which keeps its capacity when cleared:
// the batch is formatted into the same memory drain after drain.
class string_sink : public std::streambuf {
public:
    std::string text;

protected:
    int_type overflow(int_type c) override {
        if (!traits_type::eq_int_type(c, traits_type::eof())) text.push_back(traits_type::to_char_type(c));
        return traits_type::not_eof(c);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        text.append(s, static_cast<std::size_t>(n));
        return n;
    }
};

class flight_writer {
public:
    flight_writer(recorder_options o, const core::config& resolved);
    flight_writer(const flight_writer&) = delete;
    flight_writer& operator=(const flight_writer&) = delete;
    ~flight_writer();

    // The ring's records, in the order the actor copied them: a segment's start (then
    // `records` snapshot records), its steps, a gap. Each is contiguous at `p`, `n` bytes.
    void segment(const segment_start& s, std::uint32_t records);
    void snapshot_record(const unsigned char* p, std::size_t n);
    void steps(const unsigned char* p, std::size_t n, std::uint32_t steps);  // `steps` whole steps
    // The bytes of steps a block is written at (and at each drain's end).
    static constexpr std::size_t block_limit = std::size_t{64} << 10;
    void gap(std::uint64_t events);
    // The end of a drain: the batch written to the current file (a crash loses at most
    // one drain).
    void flush();
    // Copies of the retained segment files, or the in-memory segments, into `dir`. After
    // a failed write too, and successfully: the files kept then are the recording up to
    // the failure, each a valid trace, which is what the caller of a dump is after (the
    // failure itself is in recording_status).
    [[nodiscard]] boost::system::error_code dump(const std::filesystem::path& dir);
    // The recording ends: the current file flushed and closed.
    void finish();

    // The writer's part of recording_status.
    void fill(recording_status& s) const;

    [[nodiscard]] static std::string file_name(std::uint64_t segment);  // segment-00000003.trace

    // Cuts the file at `path` back to `size` bytes after a failed write: 0, or the errno
    // of the failure. truncate_file (truncate(2)), unless a test put one that fails in
    // its place: a truncate that fails cannot be caused on demand. Read only after a
    // failed write.
    using cut_function = int (*)(const std::filesystem::path& path, std::uint64_t size);
    static int truncate_file(const std::filesystem::path& path, std::uint64_t size);
    static std::atomic<cut_function> cut_file;

private:
    void begin_segment();
    void write_batch();
    void write_block();  // binary: the block's steps written out
    bool emit(std::string_view bytes);  // whole bytes: to the file, or to the segment in memory
    void forget_old_segments();
    void fail_writing(int error);
    void fail(const std::string& what);
    void close_file() noexcept;
    void keep_earlier_recording();
    [[nodiscard]] std::filesystem::path current_path() const;
    [[nodiscard]] std::ostream* out() noexcept;

    const recorder_options options_;
    const core::config config_;

    std::optional<segment_start> starting_;  // its snapshot still being read
    std::vector<core::snapshot_record> snapshot_;  // text: decoded
    std::vector<unsigned char> snapshot_bytes_;    // binary: as the ring holds them (v3)
    std::vector<core::effect> effects_;  // text: of the step being formatted
    trace::v3::delta_base base_;         // text: the segment's steps decoded so far

    // Directory mode.
    std::uint64_t file_size_ = 0;  // its bytes written whole: up to its last whole step
    // Formatted, not written yet: whole steps only between records (a step is added to
    // it once its last effect is read), and a segment's start or a gap.
    string_sink batch_;
    std::ostream batch_out_{&batch_};
    std::uint64_t batch_events_ = 0;    // steps in batch_
    std::uint64_t batch_segments_ = 0;  // segment starts in batch_
    // Binary: the block being filled: its header's room, then whole steps.
    std::vector<unsigned char> block_;
    std::size_t block_end_ = 0;      // bytes used
    std::string memory_bytes_;             // memory_only, binary: the current segment
    std::deque<std::uint64_t> retained_;  // segment files present, oldest first
    // Memory mode: the current segment and the one before it.
    std::ostringstream current_;
    std::optional<std::uint64_t> current_number_;
    std::string previous_;
    std::optional<std::uint64_t> previous_number_;

    std::uint64_t segments_written_ = 0;  // in directory mode: their start reached the file
    std::uint64_t events_written_ = 0;    // in directory mode: steps that reached the file
    std::uint64_t write_errors_ = 0;
    std::string last_error_;

    // The small members together (no padding between the large ones).
    std::uint32_t snapshot_left_ = 0;     // records of the starting segment's snapshot still to come
    std::uint32_t snapshot_records_ = 0;  // in that snapshot
    std::uint32_t block_steps_ = 0;       // binary: steps in block_
    int file_ = -1;                       // directory mode: the current segment file's descriptor
    const bool binary_;                   // options_.format == binary
    bool open_ = false;                   // a segment's start was written: steps go to out()
    bool directory_ready_ = false;        // directory mode: made, an earlier recording moved aside
    bool failed_ = false;
};

}  // namespace fairpool::detail
