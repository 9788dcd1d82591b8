// Decoding trace format v3 (docs/CONTRACT.md section 7.3). Every read is bounds-checked
// against the block (or header) it belongs to; every enumerator, flag, zero byte and
// slot number is checked as the text reader checks its spelling; a header's snapshot is
// restored once, as the text reader does, so a file that reads can be replayed.
#include <exception>
#include <string>
#include <utility>

#include "binary_layout.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/crc32c.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/snapshots.hpp"

namespace fairpool::trace::v3 {

namespace {

using layout::get;

constexpr std::uint64_t slot_limit = 65536;  // as in a text trace

std::string hex32(std::uint32_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
    return s;
}

// Bytes being decoded: a bounded range of the file, read field by field; the first
// field that does not fit or does not decode is the failure, at its offset.
class fields {
public:
    fields(std::string_view file, std::size_t at, std::size_t end) noexcept
        : base_(reinterpret_cast<const unsigned char*>(file.data())), at_(at), end_(end) {}

    [[nodiscard]] bool ok() const noexcept { return !failure_; }
    [[nodiscard]] std::size_t at() const noexcept { return at_; }
    [[nodiscard]] std::optional<read_error>& failure() noexcept { return failure_; }

    template <typename U>
    U take(const char* what) {
        if (failure_) return 0;
        if (end_ - at_ < sizeof(U)) {
            fail(at_, std::string(what) + " runs past the end of its " + (in_header_ ? "header" : "block"));
            return 0;
        }
        const U v = get<U>(base_ + at_);
        at_ += sizeof(U);
        return v;
    }
    std::uint64_t u64(const char* what) { return take<std::uint64_t>(what); }
    std::uint32_t u32(const char* what) { return take<std::uint32_t>(what); }
    std::uint8_t u8(const char* what) { return take<std::uint8_t>(what); }

    // An enumerator below `count`.
    std::uint8_t below(std::uint8_t count, const char* what) {
        const std::size_t at = at_;
        const std::uint8_t v = u8(what);
        if (ok() && v >= count) fail(at, std::string(what) + " " + std::to_string(v) + " is not one of 0.." + std::to_string(count - 1));
        return v;
    }
    bool boolean(const char* what) { return below(2, what) == 1; }
    // A slot: a varint (in a step) or a u32 (in a snapshot record), below 65536.
    std::uint32_t slot(const char* what) {
        const std::size_t at = at_;
        const std::uint64_t v = in_header_ ? u32(what) : varint(what);
        if (ok() && v >= slot_limit) fail(at, std::string(what) + " " + std::to_string(v) + " is not below 65536");
        return static_cast<std::uint32_t>(v);
    }
    // An LEB128 varint: at most 10 bytes, the last one no more than 1, and minimal (no
    // last byte 0 after the first), so that a number has one encoding.
    std::uint64_t varint(const char* what) {
        const std::size_t at = at_;
        std::uint64_t v = 0;
        for (int i = 0; i < 10; ++i) {
            const std::uint8_t b = u8(what);
            if (!ok()) return 0;
            if (i == 9 && b > 1) return fail(at, std::string(what) + " overflows 64 bits"), 0;
            v |= std::uint64_t{b & 0x7FU} << (7 * i);
            if ((b & 0x80U) == 0) {
                if (b == 0 && i > 0) return fail(at, std::string(what) + " is not written in its fewest bytes"), 0;
                return v;
            }
        }
        return v;  // not reached: the tenth byte ends it or fails
    }
    // A zigzag varint: the value's difference from `base` (wrapping); `base` becomes it.
    std::uint64_t delta(std::uint64_t& base, const char* what) {
        const std::uint64_t z = varint(what);
        const std::uint64_t d = (z >> 1) ^ (0 - (z & 1));
        base += d;
        return base;
    }
    void zero(const char* what) {
        const std::size_t at = at_;
        if (u8(what) != 0 && ok()) fail(at, std::string(what) + " is not zero");
    }
    void fail(std::size_t at, std::string message) {
        if (!failure_) failure_ = read_error{at, std::move(message), true};
    }
    void in_header() noexcept { in_header_ = true; }

private:
    const unsigned char* base_;
    std::size_t at_;
    std::size_t end_;
    bool in_header_ = false;
    std::optional<read_error> failure_;
};

std::optional<core::snapshot_record> snapshot_record_of(fields& in) {
    using tag = layout::snapshot_tag;
    const std::size_t at = in.at();
    const auto t = static_cast<tag>(in.u8("snapshot record tag"));
    if (!in.ok()) return std::nullopt;
    switch (t) {
        case tag::begin: {
            core::snapshot_begin r;
            for (std::uint64_t* v : {&r.now, &r.last_lease, &r.highest_waiter, &r.arrivals, &r.spawn_failures_in_a_row,
                                     &r.backoff_end, &r.idle_seq, &r.jitter_state})
                *v = in.u64("a snapshot field");
            r.started = in.boolean("snapshot started");
            r.shutting_down = in.boolean("snapshot shutting_down");
            r.closed = in.boolean("snapshot closed");
            return r;
        }
        case tag::sizes: {
            core::snapshot_sizes r;
            r.max_slots = in.u64("sizes max_slots");
            r.min_slots = in.u64("sizes min_slots");
            return r;
        }
        case tag::slot: {
            core::snapshot_slot r;
            r.index = in.slot("slot index");
            r.state = static_cast<core::slot_state>(in.below(core::slot_state_count, "slot state"));
            for (std::uint64_t* v : {&r.expires_at, &r.verified_at, &r.idle_since, &r.idle_seq, &r.granted_at, &r.lease, &r.uses})
                *v = in.u64("a slot field");
            r.leak_unreported = in.boolean("slot leak_unreported");
            r.keepalive_check = in.boolean("slot keepalive_check");
            r.handle = in.u64("slot handle");
            return r;
        }
        case tag::idle: return core::snapshot_idle{.slot = in.slot("idle slot")};
        case tag::handle: {
            core::snapshot_handle r;
            for (std::uint64_t* v : {&r.id, &r.weight, &r.turn, &r.max_leases}) *v = in.u64("a handle field");
            return r;
        }
        case tag::waiter: {
            core::snapshot_waiter r;
            for (std::uint64_t* v : {&r.id, &r.handle, &r.arrived_at, &r.arrival, &r.deadline}) *v = in.u64("a waiter field");
            return r;
        }
        case tag::counter: {
            core::snapshot_counter r;
            r.name = static_cast<core::counter>(in.below(core::counter_count, "counter name"));
            r.value = in.u64("counter value");
            return r;
        }
        case tag::bucket: {
            core::snapshot_bucket r;
            r.index = in.u32("bucket index");
            r.count = in.u64("bucket count");
            return r;
        }
        case tag::end: return core::snapshot_end{};
    }
    in.fail(at, "snapshot record tag " + std::to_string(static_cast<int>(t)) + " is not one of 1..9");
    return std::nullopt;
}

// The event record at the front of `in` (docs/CONTRACT.md section 7.3), into `e`.
void event_of(fields& in, delta_base& base, core::event& e, core::event_error& error, std::uint32_t& effects) {
    e = core::event{};
    const std::size_t head_at = in.at();
    const std::uint8_t head = in.u8("event head");
    if (!in.ok()) return;
    if ((head & 15U) >= core::event_kind_count)
        return in.fail(head_at, "event kind " + std::to_string(head & 15U) + " is not one of 0..13");
    e.kind = static_cast<core::event_kind>(head & 15U);
    const auto flags = static_cast<std::uint8_t>((head >> 4) & 7U);
    error = core::event_error::ok;
    if (head & 0x80U) {
        const std::size_t error_at = in.at();
        error = static_cast<core::event_error>(in.below(core::event_error_count, "event error"));
        if (in.ok() && error == core::event_error::ok)
            return in.fail(error_at, "event error 0: no error is written as no error byte");
    }
    const std::size_t count_at = in.at();
    const std::uint64_t count = in.varint("effect count");
    if (in.ok() && count > UINT32_MAX) return in.fail(count_at, "effect count " + std::to_string(count) + " is above 2^32-1");
    effects = static_cast<std::uint32_t>(count);
    e.now = in.delta(base.now, "event time");
    if (!in.ok()) return;
    std::uint8_t allowed = 0;
    switch (e.kind) {
        case core::event_kind::acquire: {
            allowed = layout::has_deadline | layout::has_weight | layout::has_max_leases;
            e.waiter = in.delta(base.waiter, "acquire waiter");
            e.handle = in.delta(base.handle, "acquire handle");
            if (flags & layout::has_deadline) {
                std::uint64_t relative = e.now;
                e.deadline = in.delta(relative, "acquire deadline");
            }
            if (flags & layout::has_weight) {
                const std::size_t at = in.at();
                const std::uint64_t w = in.varint("acquire weight");
                if (in.ok() && w > UINT32_MAX) return in.fail(at, "acquire weight " + std::to_string(w) + " is above 2^32-1");
                e.weight = static_cast<std::uint32_t>(w);
            }
            if (flags & layout::has_max_leases) e.set_max_leases(in.varint("acquire max_leases"));
            break;
        }
        case core::event_kind::cancel: e.waiter = in.delta(base.waiter, "cancel waiter"); break;
        case core::event_kind::deregister: e.handle = in.delta(base.handle, "deregister handle"); break;
        case core::event_kind::release:
            allowed = layout::other_outcome;
            e.slot = in.slot("release slot");
            e.lease = in.delta(base.lease, "release lease");
            if (flags & layout::other_outcome) e.outcome = core::release_outcome::dirty;
            break;
        case core::event_kind::resize:
            e.waiter = in.varint("resize max_slots");
            e.handle = in.varint("resize min_slots");
            break;
        case core::event_kind::checked:
        case core::event_kind::reset_done:
            allowed = layout::other_outcome;
            e.slot = in.slot("event slot");
            if (e.kind == core::event_kind::checked && (flags & layout::other_outcome)) e.check = core::check_outcome::dead;
            if (e.kind == core::event_kind::reset_done && (flags & layout::other_outcome))
                e.reset = core::reset_outcome::failed;
            break;
        case core::event_kind::spawned:
        case core::event_kind::spawn_failed:
        case core::event_kind::retired:
        case core::event_kind::died: e.slot = in.slot("event slot"); break;
        case core::event_kind::start:
        case core::event_kind::tick:
        case core::event_kind::shutdown: break;
    }
    if (in.ok() && (flags & ~allowed) != 0)
        in.fail(head_at, "event flags " + std::to_string(flags) + " are not valid for " + core::to_string(e.kind));
}

void effect_of(fields& in, delta_base& base, core::effect& f) {
    f = core::effect{};
    const std::size_t head_at = in.at();
    const std::uint8_t head = in.u8("effect head");
    if (!in.ok()) return;
    if (head & 0xC0U) return in.fail(head_at, "effect head bits 6 and 7 are not zero");
    f.kind = static_cast<core::effect_kind>(head & 7U);
    const auto reason = static_cast<std::uint8_t>(head >> 3);
    int reasons = 0;
    switch (f.kind) {
        case core::effect_kind::grant:
            f.waiter = in.delta(base.waiter, "grant waiter");
            f.slot = in.slot("grant slot");
            f.lease = in.delta(base.lease, "grant lease");
            break;
        case core::effect_kind::reject:
            reasons = core::reject_reason_count;
            f.rejected = static_cast<core::reject_reason>(reason);
            f.waiter = in.delta(base.waiter, "reject waiter");
            break;
        case core::effect_kind::retire:
            reasons = core::retire_reason_count;
            f.retired = static_cast<core::retire_reason>(reason);
            f.slot = in.slot("retire slot");
            break;
        case core::effect_kind::leak_suspected:
            f.slot = in.slot("leak_suspected slot");
            f.lease = in.delta(base.lease, "leak_suspected lease");
            break;
        case core::effect_kind::spawn:
        case core::effect_kind::check:
        case core::effect_kind::reset: f.slot = in.slot("effect slot"); break;
        case core::effect_kind::closed: break;
    }
    if (in.ok() && reason >= (reasons == 0 ? 1 : reasons))
        in.fail(head_at, "effect reason " + std::to_string(reason) + " is not valid for " + core::to_string(f.kind));
}

}  // namespace

bool is_binary(std::string_view bytes) noexcept {
    if (bytes.empty()) return false;
    const std::size_t n = bytes.size() < magic.size() ? bytes.size() : magic.size();
    return bytes.substr(0, n) == magic.substr(0, n);
}

std::variant<header, read_error> cursor::read_header() {
    const auto cut_in_start = [this](std::string what) -> read_error {
        cut_ = 0;
        return read_error{bytes_.size(), std::move(what), true};
    };
    if (bytes_.size() < layout::config_at || bytes_.substr(0, magic.size()) != magic) {
        if (bytes_.substr(0, magic.size()) != magic.substr(0, std::min(bytes_.size(), magic.size())))
            return read_error{0, "not a v3 trace (no magic)", true};
        if (last_input_) return cut_in_start("cut in its header");
        return read_error{bytes_.size(), "the header ends after " + std::to_string(bytes_.size()) + " bytes", true};
    }
    const auto* base = reinterpret_cast<const unsigned char*>(bytes_.data());
    if (const auto v = get<std::uint32_t>(base + layout::version_at); v != version)
        return read_error{layout::version_at, "version " + std::to_string(v) + ": this reader knows 3 (v1 and v2 are text)", true};
    const auto size = get<std::uint32_t>(base + layout::header_size_at);
    if (size < layout::config_at + 1 + 16 + 4 + 4)
        return read_error{layout::header_size_at, "header size " + std::to_string(size) + " is too small", true};
    if (size > bytes_.size()) {
        if (last_input_) return cut_in_start("cut in its header");
        return read_error{bytes_.size(), "the header of " + std::to_string(size) + " bytes runs past the end of the file (" +
                                             std::to_string(bytes_.size()) + " bytes)", true};
    }
    const auto stored = get<std::uint32_t>(base + size - 4);
    if (const std::uint32_t crc = crc32c(base, size - 4); crc != stored)
        return read_error{size - 4, "header checksum " + hex32(stored) + " does not match its bytes (" + hex32(crc) + ")", true};

    header h;
    h.size = size;
    fields in(bytes_, layout::config_size_at, size - 4);
    in.in_header();
    const std::uint32_t config_size = in.u32("config size");
    if (!in.ok() || config_size > size - 4 - layout::config_at)
        return read_error{layout::config_size_at, "config size " + std::to_string(config_size) + " runs past the header", true};
    const std::string_view config_line = bytes_.substr(layout::config_at, config_size);
    h.config_offset = layout::config_at;
    if (config_line.find_first_of(std::string_view("\n\r#\0", 4)) != std::string_view::npos)
        return read_error{layout::config_at, "the config line holds a line end, '#' or NUL", true};
    {
        auto parsed = fairpool::trace::read(std::string("fairpool-trace v1\n") + std::string(config_line) + "\n");
        if (auto* e = std::get_if<read_error>(&parsed)) return read_error{layout::config_at, e->message, true};
        h.config = std::get<trace>(parsed).config;
    }
    fields rest(bytes_, layout::config_at + config_size, size - 4);
    rest.in_header();
    const std::size_t segment_at = rest.at();
    const bool has_segment = rest.boolean("segment flag");
    const std::uint64_t number = rest.u64("segment number"), before = rest.u64("segment events_before");
    if (rest.ok() && has_segment) h.segment = segment_info{number, before, segment_at};
    if (rest.ok() && !has_segment && (number != 0 || before != 0))
        rest.fail(segment_at, "no segment, but its fields are not zero");
    const std::size_t count_at = rest.at();
    const std::uint32_t count = rest.u32("snapshot record count");
    if (rest.ok() && count > (size - rest.at()))  // a record is at least one byte
        rest.fail(count_at, "snapshot record count " + std::to_string(count) + " runs past the header");
    for (std::uint32_t i = 0; rest.ok() && i < count; ++i) {
        const std::size_t at = rest.at();
        if (auto r = snapshot_record_of(rest); r && rest.ok()) h.snapshot.push_back(snapshot_line{*r, at});
    }
    if (rest.ok() && rest.at() != size - 4)
        rest.fail(rest.at(), std::to_string(size - 4 - rest.at()) + " bytes after the snapshot, before the header checksum");
    if (rest.failure()) return std::move(*rest.failure());
    if (!h.snapshot.empty()) {
        if (const auto refused = refusal_of(h.config, h.snapshot)) {
            const std::size_t at = refused->record < h.snapshot.size() ? h.snapshot[refused->record].line : size - 4;
            return read_error{at, "snapshot: " + refused->message, true};
        }
    }
    at_ = size;
    base_ = delta_base{};
    return h;
}

const decoded_step* cursor::fail(std::size_t offset, std::string message) {
    error_ = read_error{offset, std::move(message), true};
    done_ = true;
    return nullptr;
}

// The next block's header, checked with its checksum; false at the end of the file
// (a gap block, the end, a torn tail or an error).
bool cursor::enter_block() {
    const auto torn = [this] {
        cut_ = at_;
        done_ = true;
        return false;
    };
    const std::size_t left = bytes_.size() - at_;
    if (left == 0) return done_ = true, false;
    const auto* base = reinterpret_cast<const unsigned char*>(bytes_.data());
    if (gap_) return fail(at_, "data after the gap block (a gap is the last block of a file)"), false;
    if (left < block_header_bytes) {
        if (last_input_) return torn();
        return fail(at_, "block header cut short: " + std::to_string(left) + " bytes left in the file"), false;
    }
    const std::uint8_t kind = base[at_];
    if (kind == 0 && last_input_) return torn();  // a hole a crash of the machine left
    if (kind != static_cast<std::uint8_t>(block_kind::steps) && kind != static_cast<std::uint8_t>(block_kind::gap))
        return fail(at_, "block kind " + std::to_string(kind) + " is not 1 (steps) or 2 (gap)"), false;
    if (base[at_ + 1] != 0 || base[at_ + 2] != 0 || base[at_ + 3] != 0)
        return fail(at_ + 1, "block header bytes 1..3 are not zero"), false;
    const auto size = get<std::uint32_t>(base + at_ + layout::block_size_at);
    const auto steps = get<std::uint32_t>(base + at_ + layout::block_steps_at);
    if (size > left - block_header_bytes) {
        if (last_input_) return torn();
        return fail(at_ + layout::block_size_at, "block of " + std::to_string(size) + " bytes runs past the end of the file (" +
                                                     std::to_string(left - block_header_bytes) + " left): truncated"),
               false;
    }
    const auto stored = get<std::uint32_t>(base + at_ + layout::block_crc_at);
    const std::uint32_t crc = crc32c(base + at_ + block_header_bytes, size, crc32c(base + at_, layout::block_crc_at));
    if (crc != stored)
        return fail(at_ + layout::block_crc_at,
                    "block checksum " + hex32(stored) + " does not match its bytes (" + hex32(crc) + ")"),
               false;
    const std::size_t payload = at_ + block_header_bytes;
    if (kind == static_cast<std::uint8_t>(block_kind::gap)) {
        if (size != 8 || steps != 0) return fail(at_, "a gap block holds 8 bytes and no step"), false;
        const auto events = get<std::uint64_t>(base + payload);
        if (events == 0) return fail(payload, "gap of 0 events (a gap loses at least one event)"), false;
        gap_ = gap_info{events, at_};
        at_ = payload + 8;
        if (at_ != bytes_.size()) return fail(at_, "data after the gap block (a gap is the last block of a file)"), false;
        return done_ = true, false;
    }
    if (steps == 0) return fail(at_ + layout::block_steps_at, "a steps block holds no step"), false;
    at_ = payload;
    block_end_ = payload + size;
    block_steps_left_ = steps;
    in_block_ = true;
    return true;
}

const decoded_step* cursor::next() {
    if (done_) return nullptr;
    if (!in_block_ && !enter_block()) return nullptr;
    fields in(bytes_, at_, block_end_);
    step_.offset = at_;
    std::uint32_t count = 0;
    event_of(in, base_, step_.event, step_.error, count);
    if (in.ok() && count > block_end_ - in.at())  // an effect is at least one byte
        in.fail(step_.offset, "effect count " + std::to_string(count) + " runs past the end of its block");
    effects_.resize(in.ok() ? count : 0);
    for (std::uint32_t i = 0; in.ok() && i < count; ++i) effect_of(in, base_, effects_[i]);
    if (in.failure()) return fail(in.failure()->line, std::move(in.failure()->message));
    at_ = in.at();
    step_.effects = effects_;
    ++steps_read_;
    if (--block_steps_left_ == 0) {
        in_block_ = false;
        if (at_ != block_end_)
            return fail(at_, std::to_string(block_end_ - at_) + " bytes after the block's last step");
    } else if (at_ == block_end_) {
        return fail(at_, "the block ends " + std::to_string(block_steps_left_) + " steps short of the count in its header");
    }
    return &step_;
}

// ---- Records of this encoder, read back (the flight recorder's ring) ----------------

namespace {

// A view of trusted bytes as `fields` wants them: its bounds are the record's own size.
fields trusted(const unsigned char* p, std::size_t n) noexcept {
    return fields(std::string_view(reinterpret_cast<const char*>(p), n), 0, n);
}
fields trusted_record(const unsigned char* p, std::size_t n) noexcept {  // a snapshot record's fixed fields
    fields in = trusted(p, n);
    in.in_header();
    return in;
}

}  // namespace

std::size_t snapshot_record_bytes(const unsigned char* record) noexcept {
    using tag = layout::snapshot_tag;
    switch (static_cast<tag>(record[0])) {
        case tag::begin: return 1 + 8 * 8 + 3;
        case tag::sizes: return 1 + 16;
        case tag::slot: return max_snapshot_record_bytes;
        case tag::idle: return 1 + 4;
        case tag::handle: return 1 + 4 * 8;
        case tag::waiter: return 1 + 5 * 8;
        case tag::counter: return 1 + 1 + 8;
        case tag::bucket: return 1 + 4 + 8;
        case tag::end: return 1;
    }
    return 1;
}

void decode_step(const unsigned char* step, delta_base& base, core::event& e, core::event_error& error,
                 std::vector<core::effect>& effects) {
    fields in = trusted(step, step_bytes(step));
    std::uint32_t count = 0;
    event_of(in, base, e, error, count);
    effects.resize(count);
    for (core::effect& f : effects) effect_of(in, base, f);
}

core::snapshot_record decode_snapshot_record(const unsigned char* record) {
    fields in = trusted_record(record, snapshot_record_bytes(record));
    return snapshot_record_of(in).value_or(core::snapshot_end{});
}

read_result read(std::string_view bytes, bool last_input, std::optional<std::size_t>* cut) {
    try {
        cursor c(bytes, last_input);
        auto h = c.read_header();
        if (cut) *cut = c.cut();
        if (auto* e = std::get_if<read_error>(&h)) return std::move(*e);
        header& head = std::get<header>(h);
        trace t;
        t.version = 3;
        t.config = head.config;
        t.config_line = head.config_offset;
        t.segment = head.segment;
        t.snapshot = std::move(head.snapshot);
        while (const decoded_step* s = c.next()) {
            step& out = t.steps.emplace_back();
            out.event = s->event;
            out.line = s->offset;
            out.effects.reserve(s->effects.size());
            for (const core::effect& f : s->effects) out.effects.push_back(recorded_effect{f, s->offset});
            if (s->error != core::event_error::ok) out.error = s->error, out.error_line = s->offset;
        }
        if (c.error()) return *c.error();
        t.gap = c.gap();
        if (cut) *cut = c.cut();
        return t;
    } catch (const std::bad_alloc&) {
        return read_error{0, "out of memory", true};
    }
}

}  // namespace fairpool::trace::v3
