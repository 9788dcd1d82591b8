// Writing whole records: each line is built in a line_buffer (line_buffer.hpp) and
// written with one call, so a recorder's writer allocates nothing per record.
#include "fairpool/trace/write.hpp"

#include "line_buffer.hpp"
#include "schema.hpp"

namespace fairpool::trace {

namespace {

void put(std::ostream& out, line_buffer& line) {
    line.append('\n');
    const std::string_view text = line.view();
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

void write_config(std::ostream& out, std::string_view header_text, const core::config& c) {
    line_buffer line;
    line.append(header_text);
    line.append('\n');
    append_canonical(line, c);
    put(out, line);
}

}  // namespace

void write_header(std::ostream& out, const core::config& c) { write_config(out, schema::header, c); }

void write_header_v2(std::ostream& out, const core::config& c, const std::optional<segment_info>& segment,
                     std::span<const core::snapshot_record> snapshot) {
    write_config(out, schema::header_v2, c);
    if (segment) {
        line_buffer line;
        line.append(schema::segment_word);
        line.append(" number=");
        line.append(segment->number);
        line.append(" events_before=");
        line.append(segment->events_before);
        put(out, line);
    }
    for (const core::snapshot_record& r : snapshot) write_snapshot_record(out, r);
}

void write_snapshot_record(std::ostream& out, const core::snapshot_record& r) {
    line_buffer line;
    append_snapshot_record(line, r);
    put(out, line);
}

void write_gap(std::ostream& out, std::uint64_t events) {
    line_buffer line;
    line.append(schema::gap_word);
    line.append(" events=");
    line.append(events);
    put(out, line);
}

void write_step(std::ostream& out, const core::event& e, std::span<const core::effect> effects,
                core::event_error error) {
    line_buffer line;
    append_event_line(line, e);
    put(out, line);
    for (const core::effect& f : effects) {
        line_buffer effect_line;
        effect_line.append(schema::effect_mark);
        effect_line.append(' ');
        append_effect(effect_line, f);
        put(out, effect_line);
    }
    if (error != core::event_error::ok) {
        line_buffer error_line;
        error_line.append(schema::error_mark);
        error_line.append(' ');
        error_line.append(std::string_view(core::to_string(error)));
        put(out, error_line);
    }
}

void write(std::ostream& out, const trace& t) {
    if (t.version >= 2 || t.segment || !t.snapshot.empty() || t.gap) {  // v1 cannot carry them
        std::vector<core::snapshot_record> snapshot;
        snapshot.reserve(t.snapshot.size());
        for (const snapshot_line& s : t.snapshot) snapshot.push_back(s.record);
        write_header_v2(out, t.config, t.segment, snapshot);
    } else {
        write_header(out, t.config);
    }
    std::vector<core::effect> effects;
    for (const step& s : t.steps) {
        effects.clear();
        for (const recorded_effect& r : s.effects) effects.push_back(r.effect);
        write_step(out, s.event, effects, s.error.value_or(core::event_error::ok));
    }
    if (t.gap) write_gap(out, t.gap->events);
}

}  // namespace fairpool::trace
