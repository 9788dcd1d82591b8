// Reading trace format v1 (docs/CONTRACT.md, section 7).
//
// The reader works line by line: a line is split at '\n'; one trailing '\r' is dropped;
// '#' starts a comment that runs to the end of the line; what is left is split into
// fields at spaces and tabs; a line with no field is skipped. The first record is the
// header, the second the config, every later one an event (`@NOW EVENT k=v…`), an effect
// (`= EFFECT k=v…`) or an error (`! CODE`).
//
// Every name (event, effect, reason, outcome, error code, policy, idle order) is
// recognised by comparing it with the spelling core::to_string gives, so the spellings
// live in one place (core/src/names.cpp).
//
// Text quoted in a message is shown with bytes outside printable ASCII escaped as \xHH
// and cut after 40 bytes (then followed by "..."), so that messages stay short and safe
// to print whatever the input.
#include "fairpool/trace/read.hpp"

#include <array>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace fairpool::trace {

namespace {

using core::event_kind;
using core::effect_kind;

constexpr std::string_view header_text = "fairpool-trace v1";
constexpr std::string_view header_word = "fairpool-trace";
constexpr std::string_view version_word = "v1";
constexpr std::uint64_t slot_limit = 65536;  // slots are below this in any trace
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

// The enumerator of E whose to_string is `name`, among the first `count` enumerators.
template <typename E>
std::optional<E> parse_name(std::string_view name, int count) {
    for (int i = 0; i < count; ++i) {
        const auto value = static_cast<E>(i);
        if (name == core::to_string(value)) return value;
    }
    return std::nullopt;
}

// "a, b or c": the names of the first `count` enumerators of E.
template <typename E>
std::string name_list(int count) {
    std::string out;
    for (int i = 0; i < count; ++i) {
        if (i > 0) out += i + 1 == count ? " or " : ", ";
        out += core::to_string(static_cast<E>(i));
    }
    return out;
}

constexpr int release_outcome_count = 2;
constexpr int fairness_policy_count = 2;
constexpr int idle_order_count = 2;

// ---- Fields of events and effects --------------------------------------------------

enum class field_id : std::uint8_t { waiter, handle, deadline, weight, slot, lease, outcome, rejected, retired };
constexpr std::size_t field_id_count = 9;

enum class value_type : std::uint8_t { number, slot, outcome, reject_reason, retire_reason };

struct field_spec {
    std::string_view key;
    field_id id;
    value_type type;
    bool required;
};

constexpr field_spec f_waiter{"waiter", field_id::waiter, value_type::number, true};
constexpr field_spec f_handle{"handle", field_id::handle, value_type::number, true};
constexpr field_spec f_deadline{"deadline", field_id::deadline, value_type::number, false};
constexpr field_spec f_weight{"weight", field_id::weight, value_type::number, false};
constexpr field_spec f_slot{"slot", field_id::slot, value_type::slot, true};
constexpr field_spec f_lease{"lease", field_id::lease, value_type::number, true};
constexpr field_spec f_outcome{"outcome", field_id::outcome, value_type::outcome, true};
constexpr field_spec f_rejected{"reason", field_id::rejected, value_type::reject_reason, true};
constexpr field_spec f_retired{"reason", field_id::retired, value_type::retire_reason, true};

// Fields of each event and effect, in the order of the contract's tables.
struct field_list {
    std::array<field_spec, 4> fields{};
    std::size_t size = 0;
};

constexpr field_list event_fields(event_kind k) {
    switch (k) {
        case event_kind::acquire: return {{f_waiter, f_handle, f_deadline, f_weight}, 4};
        case event_kind::cancel: return {{f_waiter}, 1};
        case event_kind::deregister: return {{f_handle}, 1};
        case event_kind::release: return {{f_slot, f_lease, f_outcome}, 3};
        case event_kind::spawned:
        case event_kind::spawn_failed:
        case event_kind::retired:
        case event_kind::died: return {{f_slot}, 1};
        case event_kind::start:
        case event_kind::tick:
        case event_kind::shutdown: break;
    }
    return {};
}

constexpr field_list effect_fields(effect_kind k) {
    switch (k) {
        case effect_kind::grant: return {{f_waiter, f_slot, f_lease}, 3};
        case effect_kind::reject: return {{f_waiter, f_rejected}, 2};
        case effect_kind::spawn: return {{f_slot}, 1};
        case effect_kind::retire: return {{f_slot, f_retired}, 2};
        case effect_kind::leak_suspected: return {{f_slot, f_lease}, 2};
        case effect_kind::closed: break;
    }
    return {};
}

// The values of the fields of one record, as read.
struct field_values {
    std::array<bool, field_id_count> seen{};
    std::array<std::uint64_t, field_id_count> number{};
    core::release_outcome outcome = core::release_outcome::clean;
    core::reject_reason rejected = core::reject_reason::saturated;
    core::retire_reason retired = core::retire_reason::dirty;

    [[nodiscard]] bool has(field_id id) const { return seen[static_cast<std::size_t>(id)]; }
    [[nodiscard]] std::uint64_t get(field_id id) const { return number[static_cast<std::size_t>(id)]; }
};

// ---- Config keys -------------------------------------------------------------------

struct config_key {
    std::string_view key;
    std::uint64_t core::config::*plain = nullptr;
    std::optional<std::uint64_t> core::config::*optional = nullptr;
    // Neither pointer: `policy` or `idle_order`, handled by name.
};

using core::config;
constexpr std::array<config_key, 14> config_keys = {{
    {"max_slots", &config::max_slots, nullptr},
    {"min_slots", &config::min_slots, nullptr},
    {"max_waiters", &config::max_waiters, nullptr},
    {"max_waiters_per_handle", nullptr, &config::max_waiters_per_handle},
    {"policy", nullptr, nullptr},
    {"idle_order", nullptr, nullptr},
    {"acquire_timeout", &config::acquire_timeout, nullptr},
    {"idle_timeout", &config::idle_timeout, nullptr},
    {"max_lifetime", &config::max_lifetime, nullptr},
    {"max_uses", &config::max_uses, nullptr},
    {"spawn_backoff_initial", &config::spawn_backoff_initial, nullptr},
    {"spawn_backoff_max", &config::spawn_backoff_max, nullptr},
    {"max_concurrent_spawns", nullptr, &config::max_concurrent_spawns},
    {"leak_threshold", &config::leak_threshold, nullptr},
}};

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
        if (records_ == 0) fail("expected header '" + std::string(header_text) + "', found end of file");
        if (records_ == 1) fail("expected 'config' record, found end of file");
        return std::move(trace_);
    }

private:
    [[noreturn]] void fail(std::string message) const { throw failure{line_, std::move(message)}; }

    void header(const std::vector<std::string_view>& fields) {
        if (fields.size() != 2 || fields[0] != header_word || fields[1] != version_word)
            fail("expected header '" + std::string(header_text) + "', found " + quote(joined(fields)));
        header_line_ = line_;
    }

    void config_record(const std::vector<std::string_view>& fields) {
        if (fields[0] != "config") fail("expected 'config' record, found " + quote(joined(fields)));
        config_line_ = line_;
        std::array<bool, config_keys.size()> seen{};
        for (std::size_t i = 1; i < fields.size(); ++i) {
            const auto [key, value] = key_value(fields[i]);
            std::size_t index = 0;
            while (index < config_keys.size() && config_keys[index].key != key) ++index;
            if (index == config_keys.size()) fail("unknown config key " + quote(key));
            if (seen[index]) fail("repeated key " + quote(key));
            seen[index] = true;
            const config_key& k = config_keys[index];
            if (k.plain) {
                trace_.config.*k.plain = number(value, key);
            } else if (k.optional) {
                trace_.config.*k.optional = number(value, key);
            } else if (key == "policy") {
                trace_.config.policy =
                    name_value<core::fairness_policy>(value, key, fairness_policy_count);
            } else {
                trace_.config.idle_order = name_value<core::idle_order>(value, key, idle_order_count);
            }
        }
        if (auto why = core::validate(trace_.config)) fail("invalid config: " + *why);
    }

    void body(const std::vector<std::string_view>& fields) {
        const std::string_view first = fields[0];
        if (first.front() == '@') return event_record(fields);
        if (first == "=") return effect_record(fields);
        if (first == "!") return error_record(fields);
        if (first == "config") fail("repeated config record (first on line " + std::to_string(config_line_) + ")");
        if (first == header_word)
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
        const std::string what = std::string("event ") + core::to_string(e.kind);
        const field_values v = read_fields(fields, event_fields(e.kind), what);
        e.waiter = v.get(field_id::waiter);
        e.handle = v.get(field_id::handle);
        if (v.has(field_id::deadline)) e.deadline = v.get(field_id::deadline);
        if (v.has(field_id::weight)) e.weight = v.get(field_id::weight);
        e.slot = static_cast<std::uint32_t>(v.get(field_id::slot));
        e.lease = v.get(field_id::lease);
        e.outcome = v.outcome;
        step s;
        s.event = e;
        s.line = line_;
        trace_.steps.push_back(std::move(s));
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
        const std::string what = std::string("effect ") + core::to_string(f.kind);
        const field_values v = read_fields(fields, effect_fields(f.kind), what);
        f.waiter = v.get(field_id::waiter);
        f.slot = static_cast<std::uint32_t>(v.get(field_id::slot));
        f.lease = v.get(field_id::lease);
        f.rejected = v.rejected;
        f.retired = v.retired;
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

    template <typename E>
    E name_value(std::string_view text, std::string_view key, int count) const {
        const auto value = parse_name<E>(text, count);
        if (!value) fail("bad value " + quote(text) + " for " + quote(key) + ", expected " + name_list<E>(count));
        return *value;
    }

    // Reads fields[2…] as the key=value fields of `list`; `what` is "event release" etc.
    field_values read_fields(const std::vector<std::string_view>& fields, const field_list& list,
                             const std::string& what) const {
        field_values v;
        for (std::size_t i = 2; i < fields.size(); ++i) {
            const auto [key, value] = key_value(fields[i]);
            const field_spec* spec = nullptr;
            for (std::size_t j = 0; j < list.size; ++j)
                if (list.fields[j].key == key) spec = &list.fields[j];
            if (!spec) fail("unknown key " + quote(key) + " for " + what);
            const auto index = static_cast<std::size_t>(spec->id);
            if (v.seen[index]) fail("repeated key " + quote(key));
            v.seen[index] = true;
            switch (spec->type) {
                case value_type::number: v.number[index] = number(value, key); break;
                case value_type::slot:
                    v.number[index] = number(value, key);
                    if (v.number[index] >= slot_limit)
                        fail("slot " + std::to_string(v.number[index]) + " out of range 0..65535");
                    break;
                case value_type::outcome:
                    v.outcome = name_value<core::release_outcome>(value, key, release_outcome_count);
                    break;
                case value_type::reject_reason:
                    v.rejected = name_value<core::reject_reason>(value, key, core::reject_reason_count);
                    break;
                case value_type::retire_reason:
                    v.retired = name_value<core::retire_reason>(value, key, core::retire_reason_count);
                    break;
            }
        }
        for (std::size_t j = 0; j < list.size; ++j)
            if (list.fields[j].required && !v.has(list.fields[j].id))
                fail("missing field " + quote(list.fields[j].key) + " for " + what);
        return v;
    }

    trace trace_;
    std::size_t line_ = 0;
    std::size_t records_ = 0;
    std::size_t header_line_ = 0;
    std::size_t config_line_ = 0;
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

}  // namespace

read_result read(std::istream& in) {
    std::size_t lines = 0;
    try {
        exception_mask_guard guard(in);
        reader r;
        std::string text;
        while (std::getline(in, text)) r.line(text, ++lines);
        if (in.bad()) return read_error{lines + 1, "read error"};
        return r.finish(lines);
    } catch (failure& f) {
        return read_error{f.line, std::move(f.message)};
    } catch (...) {  // out of memory
        return read_error{lines == 0 ? 1 : lines, "out of memory"};
    }
}

read_result read(const std::string& text) {
    std::size_t lines = 0;
    try {
        reader r;
        std::string_view rest = text;
        while (!rest.empty()) {
            const std::size_t end = rest.find('\n');
            r.line(rest.substr(0, end), ++lines);
            rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        }
        return r.finish(lines);
    } catch (failure& f) {
        return read_error{f.line, std::move(f.message)};
    } catch (...) {  // out of memory
        return read_error{lines == 0 ? 1 : lines, "out of memory"};
    }
}

}  // namespace fairpool::trace
