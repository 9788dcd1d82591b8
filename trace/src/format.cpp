// Printing records of trace format v1, driven by the schema (schema.hpp).
#include "fairpool/trace/format.hpp"

#include "schema.hpp"

namespace fairpool::trace {

namespace {

// Appends " key=value" for every field of `fields` that `record` gives, in table order.
template <typename Record>
void append_fields(std::string& out, const Record& record, std::span<const schema::field<Record>> fields) {
    for (const schema::field<Record>& f : fields) {
        const std::optional<std::uint64_t> value = f.get(record);
        if (!value) continue;
        out += ' ';
        out += f.key;
        out += '=';
        if (f.kind == schema::value_kind::u64 || f.kind == schema::value_kind::slot) out += std::to_string(*value);
        else out += schema::name_of(f.kind, *value);
    }
}

// "KIND key=value…": an event or an effect.
template <typename Record>
std::string format_record(const Record& record) {
    std::string out = core::to_string(record.kind);
    append_fields(out, record, schema::fields_of(record.kind));
    return out;
}

}  // namespace

std::string format(const core::event& e) { return format_record(e); }

std::string format_line(const core::event& e) {
    return schema::event_mark + std::to_string(e.now) + " " + format(e);
}

std::string format(const core::effect& f) { return format_record(f); }

std::string format_canonical(const core::config& c) {
    std::string out(schema::config_word);
    append_fields(out, c.resolved(), schema::config_fields());  // resolved: every key has its value in force
    return out;
}

}  // namespace fairpool::trace
