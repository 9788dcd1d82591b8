// Reading trace formats v1 and v2 (docs/CONTRACT.md, sections 7 and 7.2).
//
// The reader works line by line: a line is split at '\n'; one trailing '\r' is dropped;
// '#' starts a comment that runs to the end of the line; what is left is split into
// fields at spaces and tabs; a line with no field is skipped. The first record is the
// header, the second the config, every later one an event (`@NOW EVENT k=v…`), an effect
// (`= EFFECT k=v…`) or an error (`! CODE`). A v2 trace may also hold, right after the
// config, a `segment` record and a snapshot (`snapshot` … `snapshot_end`, contiguous,
// before the first event), and end with a `gap` record. A snapshot that reads is then
// checked by restoring a scheduler from it, so a trace that reads can be replayed.
//
// What each record may hold (keys, their order, which are required, how each value is
// spelled) is the schema's (schema.hpp), which the writer follows too. Every name
// (event, effect, reason, outcome, error code, policy, idle order) is recognised by
// comparing it with the spelling core::to_string gives, so the spellings live in one
// place (core/src/names.cpp).
//
// Text quoted in a message is shown with bytes outside printable ASCII escaped as \xHH
// and cut after 40 bytes (then followed by "..."), so that messages stay short and safe
// to print whatever the input.
#include "fairpool/trace/read.hpp"

#include <bitset>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "schema.hpp"

namespace fairpool::trace {

namespace {

using core::event_kind;
using core::effect_kind;
using schema::value_kind;

constexpr std::size_t quote_limit = 40;      // bytes of input shown in a message

// ---- Text helpers ------------------------------------------------------------------

// 'text', escaped and shortened (see the comment at the top of this file).
std::string quote(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "'";
    const std::size_t shown = text.size() < quote_limit ? text.size() : quote_limit;
    for (std::size_t i = 0; i < shown; ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte >= 0x20 && byte < 0x7f) {
            out += static_cast<char>(byte);
        } else {
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 0xf];
        }
    }
    if (shown < text.size()) out += "...";
    out += '\'';
    return out;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// The fields of one line: trailing CR and comment removed, split at spaces and tabs.
std::vector<std::string_view> split(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> fields;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_blank(line[i])) ++i;
        const std::size_t begin = i;
        while (i < line.size() && !is_blank(line[i])) ++i;
        if (i > begin) fields.push_back(line.substr(begin, i - begin));
    }
    return fields;
}

// The fields joined by single spaces: how a whole record is shown in a message.
std::string joined(const std::vector<std::string_view>& fields) {
    std::string out;
    for (std::string_view f : fields) {
        if (!out.empty()) out += ' ';
        out += f;
    }
    return out;
}

// ---- Numbers -----------------------------------------------------------------------

enum class number_status : std::uint8_t { ok, bad, too_large };

// Plain ASCII decimal u64: one or more digits (leading zeros allowed), nothing else.
number_status parse_u64(std::string_view text, std::uint64_t& value) {
    if (text.empty()) return number_status::bad;
    std::uint64_t v = 0;
    bool overflow = false;
    for (char c : text) {
        if (c < '0' || c > '9') return number_status::bad;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (v > (UINT64_MAX - digit) / 10) overflow = true;  // keep scanning: a later non-digit is "bad"
        else v = v * 10 + digit;
    }
    if (overflow) return number_status::too_large;
    value = v;
    return number_status::ok;
}

// ---- Names -------------------------------------------------------------------------

// The index of the first of `count` names equal to `text`; name(i) is the i-th name.
template <typename Name>
std::optional<std::uint64_t> find_name(std::string_view text, int count, Name name) {
    for (int i = 0; i < count; ++i)
        if (text == name(i)) return static_cast<std::uint64_t>(i);
    return std::nullopt;
}

// The enumerator of E whose to_string is `name`, among the first `count` enumerators.
template <typename E>
std::optional<E> parse_name(std::string_view name, int count) {
    const auto index = find_name(name, count, [](int i) { return core::to_string(static_cast<E>(i)); });
    if (!index) return std::nullopt;
    return static_cast<E>(*index);
}

// "a, b or c": the names of the enumerators of `kind`.
std::string name_list(schema::value_kind kind) {
    const int count = schema::name_count(kind);
    std::string out;
    for (int i = 0; i < count; ++i) {
        if (i > 0) out += i + 1 == count ? " or " : ", ";
        out += schema::name_of(kind, static_cast<std::uint64_t>(i));
    }
    return out;
}

// What a record is called in messages: "event release", "effect grant", the config, or
// a v2 record ("'slot' record").
struct record_name {
    const char* category = nullptr;  // "event" or "effect"; nullptr for the config line and v2 records
    std::string_view name;           // core::to_string of its kind, or a v2 record's word; empty for the config

    [[nodiscard]] bool is_config() const { return !category && name.empty(); }
    [[nodiscard]] std::string text() const {
        if (category) return std::string(category) + " " + std::string(name);
        if (name.empty()) return std::string(schema::config_word);
        return quote(name) + " record";
    }
};

// The words of the records only a v2 trace may hold.
bool is_v2_word(std::string_view word) {
    if (word == schema::segment_word || word == schema::gap_word) return true;
    for (std::size_t i = 0; i < schema::snapshot_kinds; ++i)
        if (word == schema::snapshot_word(i)) return true;
    return false;
}

// A snapshot record of the alternative `I`, default-constructed.
template <std::size_t I = 0>
std::optional<core::snapshot_record> snapshot_record_of(std::string_view word) {
    if constexpr (I == schema::snapshot_kinds) {
        return std::nullopt;
    } else {
        if (word == schema::snapshot_word(I)) return core::snapshot_record(std::in_place_index<I>);
        return snapshot_record_of<I + 1>(word);
    }
}

constexpr std::size_t snapshot_begin_index = core::snapshot_index_of<core::snapshot_begin>();
constexpr std::size_t snapshot_end_index = core::snapshot_index_of<core::snapshot_end>();

// ---- The reader --------------------------------------------------------------------

// Thrown inside the reader only; read() turns it into a read_error.
struct failure {
    std::size_t line;
    std::string message;
};

class reader {
public:
    // Reads one line (without its '\n'), numbered `number` (1-based).
    void line(std::string_view text, std::size_t number) {
        line_ = number;
        const std::vector<std::string_view> fields = split(text);
        if (fields.empty()) return;
        switch (records_++) {
            case 0: return header(fields);
            case 1: return config_record(fields);
            default: return body(fields);
        }
    }

    // After the last line; `lines` is how many lines there were.
    trace finish(std::size_t lines) {
        line_ = lines + 1;
        if (records_ == 0) fail(expected_header() + ", found end of file");
        if (records_ == 1) fail("expected 'config' record, found end of file");
        if (in_snapshot_) fail(missing_snapshot_end() + ", found end of file");
        if (!trace_.snapshot.empty()) check_snapshot();
        return std::move(trace_);
    }

private:
    [[noreturn]] void fail(std::string message) const { throw failure{line_, std::move(message)}; }

    static std::string expected_header() {
        return "expected header '" + std::string(schema::header) + "' or '" + std::string(schema::header_v2) + "'";
    }

    void header(const std::vector<std::string_view>& fields) {
        const bool v1 = fields.size() == 2 && fields[0] == schema::header_word && fields[1] == schema::version_word;
        const bool v2 = fields.size() == 2 && fields[0] == schema::header_word && fields[1] == schema::version_word_v2;
        if (!v1 && !v2) fail(expected_header() + ", found " + quote(joined(fields)));
        trace_.version = v2 ? 2 : 1;
        header_line_ = line_;
    }

    void config_record(const std::vector<std::string_view>& fields) {
        if (fields[0] != schema::config_word) fail("expected 'config' record, found " + quote(joined(fields)));
        config_line_ = line_;
        trace_.config_line = line_;
        read_fields(trace_.config, schema::config_fields(), fields, 1, record_name{});
        if (auto why = core::validate(trace_.config)) fail("invalid config: " + *why);
    }

    void body(const std::vector<std::string_view>& fields) {
        const std::string_view first = fields[0];
        if (trace_.gap) fail("record after the gap on line " + std::to_string(trace_.gap->line) +
                             " (a gap is the last record)");
        if (is_v2_word(first) && trace_.version < 2)
            fail(quote(first) + " record needs " + std::string(schema::header_v2));
        if (in_snapshot_ && first != schema::snapshot_word(snapshot_begin_index)) {
            if (auto record = snapshot_record_of(first)) return snapshot_record(std::move(*record), fields);
            fail(missing_snapshot_end() + " before " + quote(joined(fields)));
        }
        if (first == schema::segment_word) return segment_record(fields);
        if (first == schema::gap_word) return gap_record(fields);
        if (auto record = snapshot_record_of(first)) return snapshot_record(std::move(*record), fields);
        if (first.front() == schema::event_mark) return event_record(fields);
        if (first == schema::effect_mark) return effect_record(fields);
        if (first == schema::error_mark) return error_record(fields);
        if (first == schema::config_word)
            fail("repeated config record (first on line " + std::to_string(config_line_) + ")");
        if (first == schema::header_word)
            fail("repeated header (first on line " + std::to_string(header_line_) + ")");
        fail("unknown record " + quote(first) + ", expected '@NOW EVENT', '= EFFECT' or '! CODE'");
    }

    void event_record(const std::vector<std::string_view>& fields) {
        const std::string_view now = fields[0].substr(1);
        core::event e;
        switch (parse_u64(now, e.now)) {
            case number_status::ok: break;
            case number_status::bad: fail("bad time " + quote(now) + " after '@'");
            case number_status::too_large:
                fail("time " + quote(now) + " too large (max " + std::to_string(UINT64_MAX) + ")");
        }
        if (fields.size() < 2) fail("missing event after " + quote(fields[0]));
        const auto kind = parse_name<event_kind>(fields[1], core::event_kind_count);
        if (!kind) fail("unknown event " + quote(fields[1]));
        e.kind = *kind;
        read_fields(e, schema::fields_of(e.kind), fields, 2, record_name{"event", core::to_string(e.kind)});
        first_event_line_ = first_event_line_ ? first_event_line_ : line_;
        step s;
        s.event = e;
        s.line = line_;
        trace_.steps.push_back(std::move(s));
    }

    // ---- v2 records (section 7.2) ----

    std::string missing_snapshot_end() const {
        return "missing 'snapshot_end' (the snapshot begins on line " + std::to_string(snapshot_begin_line_) + ")";
    }

    // Something that must come right after the config line (and the segment record).
    void before_the_body(std::string_view what) const {
        if (first_event_line_)
            fail(std::string(what) + " after the first event (line " + std::to_string(first_event_line_) +
                 "); it must come right after the config record");
    }

    void segment_record(const std::vector<std::string_view>& fields) {
        if (trace_.segment)
            fail("repeated segment record (first on line " + std::to_string(trace_.segment->line) + ")");
        before_the_body("segment record");
        if (snapshot_begin_line_)
            fail("segment record after the snapshot (line " + std::to_string(snapshot_begin_line_) +
                 "); it must come right after the config record");
        segment_info segment;
        read_fields(segment, schema::segment_fields(), fields, 1, record_name{nullptr, schema::segment_word});
        segment.line = line_;
        trace_.segment = segment;
    }

    void snapshot_record(core::snapshot_record record, const std::vector<std::string_view>& fields) {
        const std::string_view word = fields[0];
        if (record.index() == snapshot_begin_index) {
            if (snapshot_begin_line_)
                fail("repeated snapshot record (first on line " + std::to_string(snapshot_begin_line_) + ")");
            before_the_body("snapshot");
            snapshot_begin_line_ = line_;
            in_snapshot_ = true;
        } else if (!in_snapshot_) {
            if (snapshot_begin_line_)
                fail(quote(word) + " record after the end of the snapshot on line " +
                     std::to_string(trace_.snapshot.back().line));
            fail(quote(word) + " record outside a snapshot (a snapshot begins with a 'snapshot' record)");
        }
        std::visit(
            [&]<typename Record>(Record& r) {
                read_fields(r, schema::fields_of(std::type_identity<Record>{}), fields, 1,
                            record_name{nullptr, word});
            },
            record);
        if (record.index() == snapshot_end_index) in_snapshot_ = false;
        trace_.snapshot.push_back(snapshot_line{record, line_});
    }

    void gap_record(const std::vector<std::string_view>& fields) {
        gap_info gap;
        read_fields(gap, schema::gap_fields(), fields, 1, record_name{nullptr, schema::gap_word});
        if (gap.events == 0) fail("gap of 0 events (a gap loses at least one event)");
        gap.line = line_;
        trace_.gap = gap;
    }

    // A snapshot no scheduler with this config could be in is a read error, like an
    // invalid config: restoring one is the check (the core owns the rules).
    void check_snapshot() {
        if (const auto refused = refusal_of(trace_.config, trace_.snapshot)) {
            line_ = refused->record < trace_.snapshot.size() ? trace_.snapshot[refused->record].line
                                                             : trace_.snapshot.back().line + 1;
            fail("snapshot: " + refused->message);
        }
    }

    void effect_record(const std::vector<std::string_view>& fields) {
        if (trace_.steps.empty()) fail("effect before any event");
        step& s = trace_.steps.back();
        if (s.error)
            fail("effect after the error of the event on line " + std::to_string(s.line));
        if (fields.size() < 2) fail("missing effect after '='");
        const auto kind = parse_name<effect_kind>(fields[1], core::effect_kind_count);
        if (!kind) fail("unknown effect " + quote(fields[1]));
        core::effect f = core::effect::of(*kind);
        read_fields(f, schema::fields_of(f.kind), fields, 2, record_name{"effect", core::to_string(f.kind)});
        s.effects.push_back(recorded_effect{f, line_});
    }

    void error_record(const std::vector<std::string_view>& fields) {
        if (trace_.steps.empty()) fail("error before any event");
        step& s = trace_.steps.back();
        if (s.error)
            fail("second error for the event on line " + std::to_string(s.line) + " (first on line " +
                 std::to_string(s.error_line) + ")");
        if (fields.size() < 2) fail("missing error code after '!'");
        if (fields.size() > 2) fail("unexpected field " + quote(fields[2]) + " after error code");
        if (fields[1] == core::to_string(core::event_error::ok))
            fail("error code 'ok' is not allowed (an event without error has no '!' record)");
        const auto code = parse_name<core::event_error>(fields[1], core::event_error_count);
        if (!code) fail("unknown error code " + quote(fields[1]));
        s.error = *code;
        s.error_line = line_;
    }

    // "key=value" → {key, value}; the key must be non-empty.
    std::pair<std::string_view, std::string_view> key_value(std::string_view field) const {
        const std::size_t eq = field.find('=');
        if (eq == std::string_view::npos || eq == 0) fail("expected key=value, found " + quote(field));
        return {field.substr(0, eq), field.substr(eq + 1)};
    }

    std::uint64_t number(std::string_view text, std::string_view key) const {
        std::uint64_t value = 0;
        switch (parse_u64(text, value)) {
            case number_status::ok: break;
            case number_status::bad: fail("bad number " + quote(text) + " for " + quote(key));
            case number_status::too_large:
                fail("number " + quote(text) + " too large for " + quote(key) + " (max " +
                     std::to_string(UINT64_MAX) + ")");
        }
        return value;
    }

    // The value of a field of `kind`, as a u64 (an enumerator's index for a name).
    std::uint64_t value(value_kind kind, std::string_view text, std::string_view key) const {
        switch (kind) {
            case value_kind::u64: return number(text, key);
            case value_kind::slot: {
                const std::uint64_t slot = number(text, key);
                if (slot >= schema::slot_limit) fail("slot " + std::to_string(slot) + " out of range 0..65535");
                return slot;
            }
            case value_kind::u32: {
                const std::uint64_t n = number(text, key);
                if (n > UINT32_MAX)
                    fail("number " + std::to_string(n) + " too large for " + quote(key) + " (max " +
                         std::to_string(UINT32_MAX) + ")");
                return n;
            }
            case value_kind::slot_state:
            case value_kind::counter:
            case value_kind::outcome:
            case value_kind::check_outcome:
            case value_kind::reset_outcome:
            case value_kind::boolean:
            case value_kind::reject_reason:
            case value_kind::retire_reason:
            case value_kind::policy:
            case value_kind::idle_order: break;
        }
        const auto name = [kind](int i) { return schema::name_of(kind, static_cast<std::uint64_t>(i)); };
        const auto index = find_name(text, schema::name_count(kind), name);
        if (!index) fail("bad value " + quote(text) + " for " + quote(key) + ", expected " + name_list(kind));
        return *index;
    }

    // Reads fields[first…], in any order, as key=value fields of `schema_fields` into
    // `record`; refuses a key not among them, a repeated key, a bad value and, after the
    // last field, a missing required one.
    template <typename Record>
    void read_fields(Record& record, std::span<const schema::field<Record>> schema_fields,
                     const std::vector<std::string_view>& fields, std::size_t first, record_name what) const {
        std::bitset<schema::max_fields> seen;
        for (std::size_t i = first; i < fields.size(); ++i) {
            const auto [key, text] = key_value(fields[i]);
            std::size_t j = 0;
            while (j < schema_fields.size() && schema_fields[j].key != key) ++j;
            if (j == schema_fields.size()) {
                if (what.is_config()) fail("unknown config key " + quote(key));
                fail("unknown key " + quote(key) + " for " + what.text());
            }
            if (seen[j]) fail("repeated key " + quote(key));
            seen[j] = true;
            schema_fields[j].set(record, value(schema_fields[j].kind, text, key));
        }
        for (std::size_t j = 0; j < schema_fields.size(); ++j)
            if (schema_fields[j].required && !seen[j])
                fail("missing field " + quote(schema_fields[j].key) + " for " + what.text());
    }

    trace trace_;
    std::size_t line_ = 0;
    std::size_t records_ = 0;
    std::size_t header_line_ = 0;
    std::size_t config_line_ = 0;
    std::size_t first_event_line_ = 0;     // 0: no event yet
    std::size_t snapshot_begin_line_ = 0;  // 0: no snapshot
    bool in_snapshot_ = false;             // between `snapshot` and `snapshot_end`
};

// Restores a stream's exception mask, which read() clears so that no stream
// exception can escape.
class exception_mask_guard {
public:
    explicit exception_mask_guard(std::istream& in) : in_(in), mask_(in.exceptions()) {
        in_.exceptions(std::ios::goodbit);
    }
    ~exception_mask_guard() {
        try {
            in_.exceptions(mask_);  // sets the mask, then throws if the state matches it
        } catch (...) {
        }
    }
    exception_mask_guard(const exception_mask_guard&) = delete;
    exception_mask_guard& operator=(const exception_mask_guard&) = delete;

private:
    std::istream& in_;
    std::ios::iostate mask_;
};

// Runs a reader over the lines of an input and turns what stops it into a read_error.
// for_each_line(feed) calls feed(line) for every line, without its '\n', and returns
// false if the input could not be read to its end.
template <typename ForEachLine>
read_result read_lines(ForEachLine for_each_line) {
    std::size_t lines = 0;
    try {
        reader r;
        const auto feed = [&r, &lines](std::string_view line) { r.line(line, ++lines); };
        if (!for_each_line(feed)) return read_error{lines + 1, "read error"};
        return r.finish(lines);
    } catch (failure& f) {
        return read_error{f.line, std::move(f.message)};
    } catch (...) {  // out of memory
        return read_error{lines == 0 ? 1 : lines, "out of memory"};
    }
}

}  // namespace

read_result read(std::istream& in) {
    // Read whole, then as a string: a v3 file is told by its first bytes, as read(string) tells it.
    std::string bytes;
    {
        exception_mask_guard guard(in);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (in.bad()) return read_error{1, "read error"};
    }
    return read(bytes);
}

read_result read(const std::string& text) {
    if (v3::is_binary(text)) return v3::read(text, false);
    return read_lines([&text](const auto& feed) {
        std::string_view rest = text;
        while (!rest.empty()) {
            const std::size_t end = rest.find('\n');
            feed(rest.substr(0, end));
            rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        }
        return true;
    });
}

}  // namespace fairpool::trace
