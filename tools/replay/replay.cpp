#include "replay.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "ddmin.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/snapshots.hpp"
#include "fairpool/trace/write.hpp"
#include "jain_index.hpp"
#include "quoted.hpp"

namespace fairpool::replay {

namespace {



// The machines of a lockstep run, from the chain's snapshot (or from scratch).
model::lockstep machines_from(const core::config& c, const std::vector<core::snapshot_record>& snapshot) {
    if (snapshot.empty()) return model::lockstep(c, 1);
    return model::lockstep(c, snapshot, 1);
}


// The first breach of a list of events under --invariants: its index and message.
struct breach {
    std::size_t index;
    std::string message;
};

std::optional<breach> first_breach(const core::config& c, const std::vector<core::snapshot_record>& snapshot,
                                   const std::vector<core::event>& events, model::lockstep::fault fault) {
    model::lockstep machines = machines_from(c, snapshot);
    machines.plant(fault);
    for (std::size_t i = 0; i < events.size(); ++i) {
        auto outcome = machines.step(events[i]);
        if (outcome.breach) return breach{i, *outcome.breach};
    }
    return std::nullopt;
}

// Removing events from a trace leaves later ones pointing at leases and slot states
// that no longer exist. Repair keeps a subsequence meaningful: a release that was valid
// in the full trace names the lease its slot holds now, and an event that was valid in
// the full trace but would now be refused is dropped. Events refused in the full trace
// are kept as they are (a stale release stays stale): repairing the full trace gives
// the full trace.
std::vector<core::event> repaired(const core::config& c, const std::vector<core::snapshot_record>& snapshot,
                                  const std::vector<core::event>& events, const std::vector<bool>& valid_in_full_trace) {
    core::scheduler s = trace::starting_scheduler(c, snapshot);
    const std::uint64_t capacity = c.slot_capacity.value_or(c.max_slots);  // slots are numbered by it
    std::vector<std::uint64_t> lease_of_slot(capacity, 0);
    for (const core::snapshot_record& r : snapshot)
        if (const auto* slot = std::get_if<core::snapshot_slot>(&r); slot && slot->state == core::slot_state::leased)
            lease_of_slot[slot->index] = slot->lease;
    std::vector<core::event> kept;
    for (std::size_t i = 0; i < events.size(); ++i) {
        core::event e = events[i];
        if (e.kind == core::event_kind::release && valid_in_full_trace[i] && e.slot < capacity)
            e.lease = lease_of_slot[e.slot];
        core::scheduler trial = s;
        const core::step_result r = trial.step(e);
        if (!r.ok() && valid_in_full_trace[i]) continue;
        for (const core::effect& f : r.effects)
            if (f.kind == core::effect_kind::grant) lease_of_slot[f.slot] = f.lease;
        s = std::move(trial);
        kept.push_back(e);
    }
    return kept;
}

// A breach message without its context (the full effect lists of a disagreement) and
// with its numbers masked: two failures are "the same" when only the waiters, slots,
// leases or times they name differ.
std::string signature(const std::string& full_message) {
    const std::string message = full_message.substr(0, full_message.find(" (core emitted"));
    std::string out;
    for (std::size_t i = 0; i < message.size(); ++i) {
        if (std::isdigit(static_cast<unsigned char>(message[i]))) {
            out += '#';
            while (i + 1 < message.size() && std::isdigit(static_cast<unsigned char>(message[i + 1]))) ++i;
        } else {
            out += message[i];
        }
    }
    return out;
}

// The header, with the snapshot of `s` (the chain's, canonically) in a v2 trace.
void write_header(std::ostream& out, const trace::trace& t, const core::scheduler& s) {
    if (t.version >= 2 || !t.snapshot.empty()) {
        const std::vector<core::snapshot_record> records =
            t.snapshot.empty() ? std::vector<core::snapshot_record>{} : trace::snapshot_of(s);
        trace::write_header_v2(out, t.config, t.segment, records);
    } else {
        trace::write_header(out, t.config);
    }
}

std::vector<core::event> events_of(const trace::trace& t) {
    std::vector<core::event> events;
    for (const trace::step& s : t.steps) events.push_back(s.event);
    return events;
}

// Nearest-rank percentile of sorted values.
core::nanos percentile(const std::vector<core::nanos>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.999999);
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

int print_canonical(const chain& c, const options& o, std::ostream& out) {
    const trace::trace& t = c.merged;
    model::lockstep machines = machines_from(t.config, c.snapshot);
    machines.plant(o.fault);
    write_header(out, t, machines.core());
    for (const trace::step& s : t.steps) {
        const auto outcome = machines.step(s.event);
        trace::write_step(out, s.event, *outcome.effects, outcome.error);
    }
    if (t.gap) trace::write_gap(out, t.gap->events);
    return 0;
}

int check(const chain& c, const options& o, std::ostream& out) {
    const trace::trace& t = c.merged;
    model::lockstep machines = machines_from(t.config, c.snapshot);
    machines.plant(o.fault);
    std::size_t effects_checked = 0;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        const trace::step& s = t.steps[i];
        const auto outcome = machines.step(s.event);
        const std::vector<core::effect>& got = *outcome.effects;
        const std::size_t n = std::max(got.size(), s.effects.size());
        for (std::size_t j = 0; j < n; ++j) {
            if (j < got.size() && j < s.effects.size() && got[j] == s.effects[j].effect) continue;
            if (j >= got.size()) {
                out << c.at(i, s.effects[j].line) << "expected " << quoted_effect(s.effects[j].effect)
                    << " got no further effect\n";
            } else if (j >= s.effects.size()) {
                const std::size_t line = s.effects.empty() ? s.line : s.effects.back().line;
                out << c.at(i, line) << "expected no further effect got " << quoted_effect(got[j]) << "\n";
            } else {
                out << c.at(i, s.effects[j].line) << "expected " << quoted_effect(s.effects[j].effect) << " got "
                    << quoted_effect(got[j]) << "\n";
            }
            return 1;
        }
        effects_checked += n;
        const core::event_error recorded = s.error.value_or(core::event_error::ok);
        if (recorded != outcome.error) {
            out << c.at(i, s.error ? s.error_line : s.line) << "expected " << quoted_error(recorded) << " got "
                << quoted_error(outcome.error) << "\n";
            return 1;
        }
    }
    out << c.name << ": ok, " << t.steps.size() << " events and " << effects_checked << " effects as recorded\n";
    return 0;
}

int check_invariants(const chain& c, const options& o, std::ostream& out) {
    const trace::trace& t = c.merged;
    if (const auto found = first_breach(t.config, c.snapshot, events_of(t), o.fault)) {
        out << c.at(found->index, t.steps[found->index].line) << found->message << "\n";
        return 1;
    }
    out << c.name << ": ok, " << t.steps.size() << " events, core agrees with the model, invariants hold\n";
    return 0;
}

int print_stats(const chain& segments, const options& /*o*/, std::ostream& out) {
    const trace::trace& t = segments.merged;
    core::scheduler s = trace::starting_scheduler(t.config, segments.snapshot);
    std::map<std::uint64_t, std::pair<std::uint64_t, core::nanos>> waiting;  // waiter → (handle, acquired at)
    for (const core::snapshot_record& r : segments.snapshot)  // queued before the snapshot: they wait from their arrival
        if (const auto* w = std::get_if<core::snapshot_waiter>(&r)) waiting[w->id] = {w->handle, w->arrived_at};
    std::map<std::uint64_t, std::uint64_t> grants_per_handle;
    std::map<std::uint64_t, bool> handle_waited;
    std::vector<core::nanos> waits;
    for (const trace::step& step : t.steps) {
        const core::event& e = step.event;
        const core::step_result r = s.step(e);
        if (!r.ok()) continue;
        if (e.kind == core::event_kind::acquire) waiting[e.waiter] = {e.handle, e.now};
        for (const core::effect& f : r.effects) {
            if (f.kind != core::effect_kind::grant && f.kind != core::effect_kind::reject) continue;
            const auto [handle, since] = waiting.at(f.waiter);
            waiting.erase(f.waiter);
            if (f.kind != core::effect_kind::grant) continue;
            waits.push_back(e.now - since);
            ++grants_per_handle[handle];
            const bool granted_in_its_own_acquire = e.kind == core::event_kind::acquire && e.waiter == f.waiter;
            handle_waited[handle] = handle_waited[handle] || !granted_in_its_own_acquire;
        }
    }
    std::sort(waits.begin(), waits.end());
    const core::stats& c = s.counters();
    out << segments.name << ": " << t.steps.size() << " events\n";
    if (!segments.snapshot.empty())
        out << "from a snapshot: the counts below include what came before it (the snapshot carries them); "
               "waits and grants per handle cover the events replayed\n";
    out << "grants: " << c.grants_immediate + c.grants_after_wait << " (" << c.grants_immediate << " immediate, "
        << c.grants_after_wait << " after waiting)\n";
    out << "rejections:";
    for (int r = 0; r < core::reject_reason_count; ++r)
        out << " " << core::to_string(static_cast<core::reject_reason>(r)) << "=" << c.rejections[r];
    out << "\nchecks: started=" << c.checks_started << " passed=" << c.checks_passed << " failed=" << c.checks_failed
        << "\nresets: started=" << c.resets_started << " failed=" << c.resets_failed;
    out << "\nwait (ns, over all grants): p50=" << percentile(waits, 50) << " p99=" << percentile(waits, 99)
        << " max=" << (waits.empty() ? 0 : waits.back()) << "\n";
    out << "grants per handle:";
    for (const auto& [handle, n] : grants_per_handle) out << " " << handle << "=" << n;
    std::vector<double> grants_of_handles_that_waited;
    for (const auto& [handle, n] : grants_per_handle)
        if (handle_waited[handle]) grants_of_handles_that_waited.push_back(static_cast<double>(n));
    out << "\nJain's fairness index over the " << grants_of_handles_that_waited.size() << " handles that waited: ";
    if (grants_of_handles_that_waited.empty()) out << "n/a\n";
    else out << tools::jain_index(grants_of_handles_that_waited) << "\n";
    return 0;
}

int minimize(const chain& c, const options& o, const std::string& output_path, std::ostream& out) {
    const trace::trace& t = c.merged;
    const std::vector<core::event> events = events_of(t);
    const auto original = first_breach(t.config, c.snapshot, events, o.fault);
    if (!original) {
        out << c.name << ": the trace does not fail under --invariants: nothing to minimize\n";
        return 1;
    }
    std::vector<bool> valid(events.size());
    {
        core::scheduler s = trace::starting_scheduler(t.config, c.snapshot);
        for (std::size_t i = 0; i < events.size(); ++i) valid[i] = s.step(events[i]).ok();
    }
    // ddmin works on indices into the full trace; each candidate is repaired, then replayed.
    bool repair = true;
    const auto candidate = [&](const std::vector<std::size_t>& indices) {
        std::vector<core::event> subset;
        std::vector<bool> subset_valid;
        for (const std::size_t i : indices) subset.push_back(events[i]), subset_valid.push_back(valid[i]);
        return repair ? repaired(t.config, c.snapshot, subset, subset_valid) : subset;
    };
    const std::string wanted = signature(original->message);
    std::size_t runs = 0;
    const std::function<bool(const std::vector<std::size_t>&)> fails = [&](const std::vector<std::size_t>& indices) {
        ++runs;
        const auto found = first_breach(t.config, c.snapshot, candidate(indices), o.fault);
        return found && signature(found->message) == wanted;
    };
    std::vector<std::size_t> all(events.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    // ddmin needs a failing start. Repair gives the full trace back as it is, so it
    // fails; should it not, shrink without repair (the trace as it is fails). Its result
    // is checked again before anything is written.
    if (!fails(all)) repair = false;
    const std::vector<core::event> smallest = candidate(ddmin(all, fails));
    const auto found = first_breach(t.config, c.snapshot, smallest, o.fault);
    if (!found || signature(found->message) != wanted) {
        out << c.name << ": no shrunk trace fails as the original does (" << original->message
            << "): nothing written\n";
        return 1;
    }
    // One trace: the chain's config and first snapshot, the events left; no segment (it
    // is no longer a piece of the recording) and no gap.
    chain shrunk;
    shrunk.merged.version = t.version;
    shrunk.merged.config = t.config;
    shrunk.merged.snapshot = t.snapshot;
    shrunk.snapshot = c.snapshot;
    for (const core::event& e : smallest) shrunk.merged.steps.push_back({e, 0, {}, std::nullopt, 0});
    std::ofstream file(output_path);
    if (!file) {
        out << output_path << ": cannot write\n";
        return 2;
    }
    print_canonical(shrunk, o, file);
    out << c.name << ": " << events.size() << " events shrunk to " << smallest.size() << " (" << runs
        << " replays), still failing with: " << found->message << "\n"
        << "written to " << output_path << "\n";
    return 0;
}

int split(const chain& c, const options& o, std::uint64_t events, const std::string& directory, std::ostream& out) {
    const trace::trace& t = c.merged;
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) {
        out << directory << ": cannot create: " << error.message() << "\n";
        return 2;
    }
    model::lockstep machines = machines_from(t.config, c.snapshot);
    machines.plant(o.fault);
    const std::uint64_t first_number = t.segment ? t.segment->number : 0;
    const std::uint64_t events_before = t.segment ? t.segment->events_before : 0;
    std::uint64_t written = 0;
    std::size_t next = 0;
    do {
        char name[32];
        std::snprintf(name, sizeof name, "segment-%08llu.trace",
                      static_cast<unsigned long long>(first_number + written));
        const std::filesystem::path path = std::filesystem::path(directory) / name;
        std::ofstream file(path);
        if (!file) {
            out << path.string() << ": cannot write\n";
            return 2;
        }
        const trace::segment_info segment{first_number + written, events_before + next, 0};
        trace::write_header_v2(file, t.config, segment, trace::snapshot_of(machines.core()));
        for (const std::size_t end = std::min(t.steps.size(), next + events); next < end; ++next) {
            const auto outcome = machines.step(t.steps[next].event);
            trace::write_step(file, t.steps[next].event, *outcome.effects, outcome.error);
        }
        if (next == t.steps.size() && t.gap) trace::write_gap(file, t.gap->events);
        ++written;
    } while (next < t.steps.size());
    out << c.name << ": " << t.steps.size() << " events in " << written << " segments, written to " << directory
        << "\n";
    return 0;
}

}  // namespace fairpool::replay
