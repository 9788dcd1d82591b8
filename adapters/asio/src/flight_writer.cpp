#include "fairpool/asio/detail/flight_writer.hpp"

#include <boost/system/errc.hpp>
#include <cerrno>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::detail {

namespace fs = std::filesystem;

namespace {

boost::system::error_code from_std(const std::error_code& ec) {
    return {ec.value(), boost::system::system_category()};
}

// strerror's text without strerror (not thread-safe).
std::string error_text(int code) { return std::error_code(code, std::generic_category()).message(); }

}  // namespace

flight_writer::flight_writer(recorder_options o, const core::config& resolved)
    : options_(std::move(o)), config_(resolved) {
    snapshot_.reserve(static_cast<std::size_t>(core::max_snapshot_records(resolved)));
    effects_.reserve(64);
}

std::string flight_writer::file_name(std::uint64_t segment) {
    std::string number = std::to_string(segment);
    if (number.size() < 8) number.insert(0, 8 - number.size(), '0');
    return "segment-" + number + ".trace";
}

std::ostream* flight_writer::out() noexcept {
    if (!open_) return nullptr;
    if (options_.memory_only) return &current_;
    return failed_ ? nullptr : &file_;
}

void flight_writer::consume(const flight_record& r) {
    if (const auto* s = std::get_if<step_record>(&r)) {
        step_ = *s;
        effects_.clear();
        if (s->effect_count == 0) write_step();
    } else if (const auto* f = std::get_if<core::effect>(&r)) {
        if (!step_) return;  // cannot happen: effects follow their step
        effects_.push_back(*f);
        if (effects_.size() == step_->effect_count) write_step();
    } else if (const auto* snap = std::get_if<core::snapshot_record>(&r)) {
        if (!starting_) return;
        snapshot_.push_back(*snap);
        if (std::holds_alternative<core::snapshot_end>(*snap)) begin_segment();
    } else if (const auto* seg = std::get_if<segment_start>(&r)) {
        open_ = false;
        step_.reset();
        starting_ = *seg;
        snapshot_.clear();
    } else if (const auto* gap = std::get_if<gap_record>(&r)) {
        if (std::ostream* o = out()) trace::write_gap(*o, gap->events);
        step_.reset();
    }
}

void flight_writer::write_step() {
    if (std::ostream* o = out()) {
        trace::write_step(*o, step_->event, effects_, step_->error);
        ++events_written_;
    }
    step_.reset();
}

void flight_writer::begin_segment() {
    const segment_start s = *starting_;
    starting_.reset();
    const trace::segment_info info{.number = s.number, .events_before = s.events_before};
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
    if (file_.is_open()) {
        file_.close();
        if (!file_) return fail("closing " + (options_.directory / file_name(retained_.back())).string());
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
    errno = 0;
    file_.open(path, std::ios::out | std::ios::trunc);
    if (!file_) return fail("opening " + path.string() + ": " + error_text(errno));
    retained_.push_back(s.number);
    while (retained_.size() > options_.keep_segments) {
        std::error_code ec;
        fs::remove(options_.directory / file_name(retained_.front()), ec);
        retained_.pop_front();
    }
    trace::write_header_v2(file_, config_, info, snapshot_);
    open_ = true;
    ++segments_written_;
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
    if (options_.memory_only || failed_ || !file_.is_open()) return;
    errno = 0;
    file_.flush();
    if (!file_) fail("writing " + (options_.directory / file_name(retained_.back())).string() + ": " +
                     error_text(errno != 0 ? errno : EIO));
}

void flight_writer::finish() {
    flush();
    if (file_.is_open()) file_.close();
}

void flight_writer::fail(const std::string& what) {
    ++write_errors_;
    last_error_ = what;
    failed_ = true;
    open_ = false;
    if (file_.is_open()) file_.close();
}

boost::system::error_code flight_writer::dump(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return from_std(ec);
    if (options_.memory_only) {
        const auto write = [&dir](std::uint64_t number, std::string_view text) -> boost::system::error_code {
            std::ofstream f(dir / file_name(number), std::ios::out | std::ios::trunc);
            f.write(text.data(), static_cast<std::streamsize>(text.size()));
            f.close();
            if (!f) return boost::system::errc::make_error_code(boost::system::errc::io_error);
            return {};
        };
        if (previous_number_)
            if (auto e = write(*previous_number_, previous_)) return e;
        if (current_number_)
            if (auto e = write(*current_number_, current_.view())) return e;
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
