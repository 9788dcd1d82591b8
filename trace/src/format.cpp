// Printing records of the trace format, driven by the schema (schema.hpp). Every
// record is appended to a line_buffer, so that the writer allocates nothing per
// record; the functions returning a std::string copy that buffer.
#include "fairpool/trace/format.hpp"

#include "line_buffer.hpp"
#include "schema.hpp"

namespace fairpool::trace {

namespace {

// Appends " key=value" for every field of `fields` that `record` gives, in table order.
template <typename Record>
void append_fields(line_buffer& out, const Record& record, std::span<const schema::field<Record>> fields) {
    for (const schema::field<Record>& f : fields) {
        const std::optional<std::uint64_t> value = f.get(record);
        if (!value) continue;
        out.append(' ');
        out.append(f.key);
        out.append('=');
        switch (f.kind) {
            case schema::value_kind::u64:
            case schema::value_kind::slot:
            case schema::value_kind::u32: out.append(*value); break;
            default: out.append(std::string_view(schema::name_of(f.kind, *value))); break;
        }
    }
}

// "KIND key=value…": an event or an effect.
template <typename Record>
void append_record(line_buffer& out, const Record& record) {
    out.append(std::string_view(core::to_string(record.kind)));
    append_fields(out, record, schema::fields_of(record.kind));
}

template <typename Append, typename Record>
std::string to_text(Append append, const Record& record) {
    line_buffer line;
    append(line, record);
    return std::string(line.view());
}

}  // namespace

void append_event_line(line_buffer& out, const core::event& e) {
    out.append(schema::event_mark);
    out.append(e.now);
    out.append(' ');
    append_record(out, e);
}

void append_effect(line_buffer& out, const core::effect& f) { append_record(out, f); }

void append_snapshot_record(line_buffer& out, const core::snapshot_record& r) {
    out.append(schema::snapshot_word(r.index()));
    std::visit(
        [&out]<typename Record>(const Record& record) {
            append_fields(out, record, schema::fields_of(std::type_identity<Record>{}));
        },
        r);
}

void append_canonical(line_buffer& out, const core::config& c) {
    out.append(schema::config_word);
    append_fields(out, c.resolved(), schema::config_fields());  // resolved: every key has its value in force
}

std::string format(const core::event& e) {
    return to_text([](line_buffer& out, const core::event& r) { append_record(out, r); }, e);
}

std::string format_line(const core::event& e) { return to_text(append_event_line, e); }

std::string format(const core::effect& f) { return to_text(append_effect, f); }

std::string format(const core::snapshot_record& r) { return to_text(append_snapshot_record, r); }

std::string format_canonical(const core::config& c) { return to_text(append_canonical, c); }

}  // namespace fairpool::trace
