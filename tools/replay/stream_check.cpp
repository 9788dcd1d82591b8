#include "stream_check.hpp"

#include <fstream>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "quoted.hpp"

namespace fairpool::replay {

std::optional<int> stream_check(const std::vector<std::string>& files, const options& o, std::ostream& out,
                                std::ostream& err) {
    // Only v3 files (a peek at the magic of each): anything else is read whole.
    for (const std::string& f : files) {
        if (f == "-") return std::nullopt;
        std::ifstream in(f, std::ios::binary);
        char first[8] = {};
        in.read(first, sizeof first);
        if (!trace::v3::is_binary(std::string_view(first, static_cast<std::size_t>(in.gcount()))) || in.gcount() == 0)
            return std::nullopt;
    }
    std::vector<std::string> notices;
    const auto finish = [&](int status) {
        for (const std::string& n : notices) err << n << "\n";
        return status;
    };
    std::optional<core::scheduler> core;
    std::optional<input> previous;  // its header only
    std::uint64_t previous_steps = 0, events = 0, effects_checked = 0;
    std::vector<core::effect> got;
    std::string first_name, last_name;
    std::size_t segments = 0;
    std::optional<trace::gap_info> gap;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string& file = files[i];
        const bool last = i + 1 == files.size();
        const auto read = contents_of(file);
        if (const auto* e = std::get_if<input_error>(&read)) return err << e->message << "\n", e->status;
        trace::v3::cursor c(std::get<std::string>(read), last);
        auto header = c.read_header();
        if (auto* e = std::get_if<trace::read_error>(&header)) {
            if (c.cut() == 0u && previous) {
                notices.push_back(file + cut_in_start + "; left out of the recording");
                break;
            }
            if (c.cut() == 0u) return err << file << cut_in_start << ": nothing to replay\n", 2;
            return err << e->describe(file) << "\n", 2;
        }
        trace::v3::header& h = std::get<trace::v3::header>(header);
        input next{file, {}};
        next.trace.version = 3;
        next.trace.config = h.config;
        next.trace.config_line = h.config_offset;
        next.trace.segment = h.segment;
        next.trace.snapshot = std::move(h.snapshot);
        if (previous) {
            if (auto e = not_next(*previous, previous_steps, next)) return err << e->message << "\n", e->status;
            if (auto e = continues(*core, *previous, next, true)) return err << e->message << "\n", e->status;
        } else {
            if (files.size() > 1 && !next.trace.segment)
                return err << trace::where(file, 3, next.trace.config_line)
                           << "not a segment (no 'segment' record): several traces replay only as consecutive "
                              "segments\n",
                       2;
            core.emplace(trace::starting_scheduler(next.trace.config, trace::snapshot_of(next.trace)));
            first_name = file;
        }
        std::uint64_t steps = 0;
        while (const trace::v3::decoded_step* s = c.next()) {
            const core::step_result r = core->step(s->event);
            std::span<const core::effect> effects = r.effects;
            if (o.fault != nullptr) {
                got.assign(r.effects.begin(), r.effects.end());
                o.fault(s->event, got);
                effects = got;
            }
            const std::size_t n = std::max(effects.size(), s->effects.size());
            for (std::size_t j = 0; j < n; ++j) {
                if (j < effects.size() && j < s->effects.size() && effects[j] == s->effects[j]) continue;
                out << trace::where(file, 3, s->offset);
                if (j >= effects.size()) out << "expected " << quoted_effect(s->effects[j]) << " got no further effect\n";
                else if (j >= s->effects.size()) out << "expected no further effect got " << quoted_effect(effects[j]) << "\n";
                else out << "expected " << quoted_effect(s->effects[j]) << " got " << quoted_effect(effects[j]) << "\n";
                return finish(1);
            }
            effects_checked += n;
            if (s->error != r.error) {
                out << trace::where(file, 3, s->offset) << "expected " << quoted_error(s->error) << " got "
                    << quoted_error(r.error) << "\n";
                return finish(1);
            }
            ++steps;
        }
        if (c.error()) return err << c.error()->describe(file) << "\n", 2;
        if (c.cut()) notices.push_back(trace::where(file, 3, *c.cut()) + cut_notice);
        next.trace.gap = c.gap();
        gap = c.gap();
        events += steps;
        previous_steps = steps;
        previous = std::move(next);
        last_name = file;
        ++segments;
    }
    const std::string name =
        segments == 1 ? first_name : first_name + " … " + last_name + " (" + std::to_string(segments) + " segments)";
    out << name << ": ok, " << events << " events and " << effects_checked << " effects as recorded\n";
    if (gap)
        err << trace::where(last_name, 3, gap->line) << "gap: " << gap->events
            << " events were lost after this point; nothing after it was recorded\n";
    return finish(0);
}

}  // namespace fairpool::replay
