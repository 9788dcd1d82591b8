#include "fairpool/trace/write.hpp"

#include "fairpool/trace/format.hpp"
#include "schema.hpp"

namespace fairpool::trace {

void write_header(std::ostream& out, const core::config& c) {
    out << schema::header << '\n' << format_canonical(c) << '\n';
}

void write_step(std::ostream& out, const core::event& e, std::span<const core::effect> effects,
                core::event_error error) {
    out << format_line(e) << '\n';
    for (const core::effect& f : effects) out << schema::effect_mark << ' ' << format(f) << '\n';
    if (error != core::event_error::ok) out << schema::error_mark << ' ' << core::to_string(error) << '\n';
}

void write(std::ostream& out, const trace& t) {
    write_header(out, t.config);
    std::vector<core::effect> effects;
    for (const step& s : t.steps) {
        effects.clear();
        for (const recorded_effect& r : s.effects) effects.push_back(r.effect);
        write_step(out, s.event, effects, s.error.value_or(core::event_error::ok));
    }
}

}  // namespace fairpool::trace
