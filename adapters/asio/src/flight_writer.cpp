#include "fairpool/asio/detail/flight_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/system/errc.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::detail {

namespace fs = std::filesystem;

namespace {

boost::system::error_code from_std(const std::error_code& ec) {
    return {ec.value(), boost::system::system_category()};
}

// strerror's text without strerror (not thread-safe).
std::string error_text(int code) { return std::error_code(code, std::generic_category()).message(); }

// A drain's text is written when it ends, and sooner once it passes this: the batch of a
// ring of 2^26 records is not formatted whole in memory.
constexpr std::size_t batch_limit = std::size_t{1} << 20;
// Binary: a block is written once its steps pass block_limit bytes (and at each drain's
// end). The buffer holds two blocks' worth: a run of steps (at most block_limit, or one
// step) joins a block short of the limit; a step larger than that makes it grow (a
// shutdown rejecting thousands of waiters), once.
constexpr std::size_t block_room = trace::v3::block_header_bytes + 2 * flight_writer::block_limit;

// Writes all of `text` at `offset`: 0, or the errno of the write that failed.
int write_at(int fd, std::string_view text, std::uint64_t offset) {
    while (!text.empty()) {
        const ssize_t n = ::pwrite(fd, text.data(), text.size(), static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        text.remove_prefix(static_cast<std::size_t>(n));
        offset += static_cast<std::uint64_t>(n);
    }
    return 0;
}

}  // namespace

int flight_writer::truncate_file(const fs::path& path, std::uint64_t size) {
    std::error_code ec;
    fs::resize_file(path, size, ec);
    return ec.value();
}

std::atomic<flight_writer::cut_function> flight_writer::cut_file{&flight_writer::truncate_file};

flight_writer::flight_writer(recorder_options o, const core::config& resolved)
    : options_(std::move(o)), config_(resolved), binary_(options_.format == recording_format::binary) {
    snapshot_.reserve(static_cast<std::size_t>(core::max_snapshot_records(resolved)));
    if (binary_) {
        block_.resize(block_room);
        block_end_ = trace::v3::block_header_bytes;
        snapshot_bytes_.reserve(detail::ring_record::max_snapshot_bytes(resolved));
    } else {
        effects_.reserve(64);
    }
}

flight_writer::~flight_writer() { close_file(); }

std::string flight_writer::file_name(std::uint64_t segment) {
    std::string number = std::to_string(segment);
    if (number.size() < 8) number.insert(0, 8 - number.size(), '0');
    return "segment-" + number + ".trace";
}

std::filesystem::path flight_writer::current_path() const { return options_.directory / file_name(retained_.back()); }

std::ostream* flight_writer::out() noexcept {
    if (!open_) return nullptr;
    if (options_.memory_only) return &current_;
    return failed_ ? nullptr : &batch_out_;
}

void flight_writer::segment(const segment_start& s, std::uint32_t records) {
    if (binary_ && open_ && (options_.memory_only || !failed_)) write_block();  // the segment before ends
    open_ = false;
    starting_ = s;
    base_ = trace::v3::delta_base{};  // the actor's deltas start from zero at each segment
    snapshot_.clear();
    snapshot_bytes_.clear();
    snapshot_records_ = snapshot_left_ = records;
    if (records == 0) begin_segment();
}

void flight_writer::snapshot_record(const unsigned char* p, std::size_t n) {
    if (!starting_ || snapshot_left_ == 0) return;  // cannot happen: records follow their segment's start
    if (binary_) snapshot_bytes_.insert(snapshot_bytes_.end(), p, p + n);
    else snapshot_.push_back(trace::v3::decode_snapshot_record(p));
    if (--snapshot_left_ == 0) begin_segment();
}

void flight_writer::steps(const unsigned char* p, std::size_t n, std::uint32_t steps) {
    if (!open_) return;
    if (binary_) {
        if (!options_.memory_only && failed_) return;
        if (block_end_ + n > block_.size()) {
            write_block();
            if (block_end_ + n > block_.size()) block_.resize(block_end_ + n);  // a huge step: once
        }
        std::memcpy(block_.data() + block_end_, p, n);
        block_end_ += n;
        block_steps_ += steps;
        if (block_end_ - trace::v3::block_header_bytes >= block_limit) write_block();
        return;
    }
    for (const unsigned char* end = p + n; p < end; p += trace::v3::step_bytes(p)) {
        std::ostream* o = out();
        if (o == nullptr) return;
        core::event e;
        core::event_error error = core::event_error::ok;
        trace::v3::decode_step(p, base_, e, error, effects_);
        trace::write_step(*o, e, effects_, error);
        if (options_.memory_only) ++events_written_;
        else ++batch_events_;
        if (batch_.text.size() >= batch_limit) write_batch();
    }
}

void flight_writer::gap(std::uint64_t events) {
    if (!binary_) {
        if (std::ostream* o = out()) trace::write_gap(*o, events);
        return;
    }
    if (!open_ || (!options_.memory_only && failed_)) return;
    write_block();
    unsigned char bytes[trace::v3::gap_block_bytes];
    trace::v3::put_gap(bytes, events);
    emit({reinterpret_cast<const char*>(bytes), sizeof bytes});
}

// The block's steps, sealed (length, count, CRC) and written in one write.
void flight_writer::write_block() {
    using trace::v3::block_header_bytes;
    if (block_steps_ > 0 && (options_.memory_only || !failed_)) {
        trace::v3::seal_block(block_.data(), block_end_ - block_header_bytes, block_steps_);
        if (emit({reinterpret_cast<const char*>(block_.data()), block_end_})) {
            events_written_ += block_steps_;
            if (!options_.memory_only) forget_old_segments();
        }
    }
    block_end_ = block_header_bytes;
    block_steps_ = 0;
}

// Whole bytes of the current segment: appended to it in memory, or written at the end
// of its file in one write (a process killed meanwhile leaves a prefix of them).
bool flight_writer::emit(std::string_view bytes) {
    if (options_.memory_only) {
        memory_bytes_.append(bytes);
        return true;
    }
    if (failed_ || file_ < 0) return false;
    if (const int error = write_at(file_, bytes, file_size_); error != 0) {
        fail_writing(error);
        return false;
    }
    file_size_ += bytes.size();
    return true;
}

void flight_writer::begin_segment() {
    const segment_start s = *starting_;
    starting_.reset();
    const trace::segment_info info{.number = s.number, .events_before = s.events_before};
    if (options_.memory_only && binary_) {
        if (current_number_) std::swap(previous_, memory_bytes_), previous_number_ = current_number_;
        memory_bytes_ = trace::v3::header_bytes(config_, info, snapshot_records_, snapshot_bytes_);
        current_number_ = s.number;
        open_ = true;
        ++segments_written_;
        return;
    }
    if (options_.memory_only) {
        if (current_number_) previous_ = std::move(current_).str(), previous_number_ = current_number_;
        current_.str({});
        current_.clear();
        current_number_ = s.number;
        trace::write_header_v2(current_, config_, info, snapshot_);
        open_ = true;
        ++segments_written_;
        return;
    }
    if (failed_) return;
    if (file_ >= 0) {
        binary_ ? write_block() : write_batch();  // the end of the segment before, into its own file
        if (failed_) return;
        if (::close(std::exchange(file_, -1)) != 0)
            return fail("closing " + current_path().string() + ": " + error_text(errno));
    }
    if (!directory_ready_) {
        std::error_code ec;
        fs::create_directories(options_.directory, ec);
        if (ec) return fail("creating " + options_.directory.string() + ": " + ec.message());
        keep_earlier_recording();
        if (failed_) return;
        directory_ready_ = true;
    }
    const fs::path path = options_.directory / file_name(s.number);
    file_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (file_ < 0) return fail("opening " + path.string() + ": " + error_text(errno));
    file_size_ = 0;
    retained_.push_back(s.number);  // the oldest goes once this one holds its start
    if (binary_) {
        open_ = true;
        if (emit(trace::v3::header_bytes(config_, info, snapshot_records_, snapshot_bytes_)))
            ++segments_written_, forget_old_segments();
        return;
    }
    trace::write_header_v2(batch_out_, config_, info, snapshot_);
    ++batch_segments_;
    open_ = true;
}

// A recording found in the directory at start is the run before this one's (perhaps
// the one that crashed): moved aside into previous/, not overwritten segment by segment.
void flight_writer::keep_earlier_recording() {
    std::error_code ec;
    std::vector<fs::path> earlier;
    for (const auto& entry : fs::directory_iterator(options_.directory, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("segment-") && name.ends_with(".trace")) earlier.push_back(entry.path());
    }
    if (ec) return fail("reading " + options_.directory.string() + ": " + ec.message());
    if (earlier.empty()) return;
    const fs::path previous = options_.directory / "previous";
    fs::remove_all(previous, ec);
    fs::create_directory(previous, ec);
    if (ec) return fail("creating " + previous.string() + ": " + ec.message());
    for (const fs::path& p : earlier) {
        fs::rename(p, previous / p.filename(), ec);
        if (ec) return fail("moving " + p.string() + " into " + previous.string() + ": " + ec.message());
    }
}

void flight_writer::flush() {
    if (binary_) write_block();
    else if (!options_.memory_only && !failed_) write_batch();
}

void flight_writer::finish() {
    flush();
    close_file();
}

// The batch, at the end of the current file. Its first byte is written last: a process
// killed in the middle of a write() leaves any prefix of what it wrote (the kernel stops
// at a page boundary), so a file cut at the end of a line inside a step would look like
// a whole trace whose last step lost effects. Written this way, a cut batch leaves a
// hole where its first byte goes, which reads as a NUL byte starting a line, something
// no whole file holds: fairpool-replay knows the file was cut there.
void flight_writer::write_batch() {
    const std::string_view text = batch_.text;
    if (text.empty() || file_ < 0) return;
    int error = write_at(file_, text.substr(1), file_size_ + 1);
    if (error == 0) error = write_at(file_, text.substr(0, 1), file_size_);
    if (error != 0) return fail_writing(error);
    file_size_ += text.size();
    forget_old_segments();
    events_written_ += std::exchange(batch_events_, 0);
    segments_written_ += std::exchange(batch_segments_, 0);
    batch_.text.clear();
}

// Beyond keep_segments, the oldest files are deleted, but only once the newest holds a
// whole start: a process killed before that still leaves keep_segments files to replay.
void flight_writer::forget_old_segments() {
    while (retained_.size() > options_.keep_segments) {
        std::error_code ec;
        fs::remove(options_.directory / file_name(retained_.front()), ec);
        retained_.pop_front();
    }
}

// A write failed (a full disk): the file is cut back to its last whole step, so that
// what is left, and what dump_recording copies, is a valid trace; a file without a
// whole start (which segments_written never counted) is removed. When the cut fails,
// the file stays as the failed write left it, kept and written no more: the whole steps
// events_written counted, then at most that write's torn text, whose first byte is a
// hole (write_batch writes it last), so fairpool-replay reads the file up to there
// (CONTRACT section 7.2, "Cut files"). Removing it would lose steps the counters say
// were written.
void flight_writer::fail_writing(int error) {
    const fs::path path = current_path();
    fail("writing " + path.string() + ": " + error_text(error));
    if (file_size_ == 0) {
        std::error_code ec;
        fs::remove(path, ec);
        if (ec) last_error_ += "; removing it (it holds no whole start): " + ec.message();
        retained_.pop_back();
        return;
    }
    if (const int cut = cut_file.load(std::memory_order_relaxed)(path, file_size_); cut != 0)
        last_error_ +=
            "; cutting it back to its last whole step: " + error_text(cut) + ": left cut where that write began";
}

void flight_writer::fail(const std::string& what) {
    ++write_errors_;
    last_error_ = what;
    failed_ = true;
    open_ = false;
    close_file();
    block_end_ = trace::v3::block_header_bytes;
    block_steps_ = 0;
    batch_.text.clear();
    batch_events_ = batch_segments_ = 0;
}

void flight_writer::close_file() noexcept {
    if (file_ >= 0) ::close(std::exchange(file_, -1));
}

boost::system::error_code flight_writer::dump(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return from_std(ec);
    if (options_.memory_only) {
        const auto write = [&dir](std::uint64_t number, std::string_view text) -> boost::system::error_code {
            std::ofstream f(dir / file_name(number), std::ios::out | std::ios::trunc | std::ios::binary);
            f.write(text.data(), static_cast<std::streamsize>(text.size()));
            f.close();
            if (!f) return boost::system::errc::make_error_code(boost::system::errc::io_error);
            return {};
        };
        flush();
        if (previous_number_)
            if (auto e = write(*previous_number_, previous_)) return e;
        if (current_number_)
            if (auto e = write(*current_number_, binary_ ? std::string_view(memory_bytes_) : current_.view())) return e;
        return {};
    }
    if (fs::equivalent(dir, options_.directory, ec))
        return boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    flush();
    for (const std::uint64_t n : retained_) {
        fs::copy_file(options_.directory / file_name(n), dir / file_name(n), fs::copy_options::overwrite_existing, ec);
        if (ec) return from_std(ec);
    }
    return {};
}

void flight_writer::fill(recording_status& s) const {
    s.segments_written = segments_written_;
    s.events_written = events_written_;
    s.write_errors = write_errors_;
    s.last_error = last_error_;
}

}  // namespace fairpool::detail
