// libFuzzer harness: arbitrary bytes into the trace reader. Whatever it makes of them
// must be a trace or a read_error (never a crash); a trace must print canonically and
// read back to the same events (and the same segment, snapshot and gap of a v2 trace);
// and replaying it, from its snapshot if it has one, must hold under --invariants (the
// core agrees with the reference model, the invariants hold). Any breach aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/write.hpp"

namespace {

// Keeps each input fast: the tables are sized from the config at construction.
bool affordable(const fairpool::core::config& c) {
    return c.slot_capacity.value_or(c.max_slots) <= 1024 && c.max_waiters <= 4096;
}

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz_trace: %s\n", why.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fairpool;
    const auto parsed = trace::read(std::string(reinterpret_cast<const char*>(data), size));
    const auto* t = std::get_if<trace::trace>(&parsed);
    if (t == nullptr) {
        const auto& error = std::get<trace::read_error>(parsed);
        if (error.line == 0 || error.message.empty()) fail("a read error without line or message");
        return 0;
    }
    std::ostringstream canonical;
    trace::write(canonical, *t);
    const auto again = trace::read(canonical.str());
    const auto* t2 = std::get_if<trace::trace>(&again);
    if (t2 == nullptr) fail("the canonical form does not read back:\n" + canonical.str());
    if (t2->steps.size() != t->steps.size()) fail("the canonical form lost events");
    for (std::size_t i = 0; i < t->steps.size(); ++i)
        if (!(t2->steps[i].event == t->steps[i].event)) fail("the canonical form changed an event");
    if (t2->version != t->version || t2->snapshot.size() != t->snapshot.size() || t2->gap.has_value() != t->gap.has_value() ||
        (t->gap && t2->gap->events != t->gap->events) || t2->segment.has_value() != t->segment.has_value() ||
        (t->segment && (t2->segment->number != t->segment->number ||
                        t2->segment->events_before != t->segment->events_before)))
        fail("the canonical form changed the v2 records:\n" + canonical.str());
    std::vector<core::snapshot_record> snapshot;
    for (std::size_t i = 0; i < t->snapshot.size(); ++i) {
        if (!(t2->snapshot[i].record == t->snapshot[i].record)) fail("the canonical form changed a snapshot record");
        snapshot.push_back(t->snapshot[i].record);
    }
    if (!affordable(t->config) || t->steps.size() > 20000) return 0;
    // A snapshot that reads has been restored once by the reader: restoring it again
    // (core, model and checker) must not throw.
    model::lockstep machines = snapshot.empty() ? model::lockstep(t->config, 1)
                                                : model::lockstep(t->config, snapshot, 1);
    for (const trace::step& s : t->steps)
        if (auto outcome = machines.step(s.event); outcome.breach)
            fail("line " + std::to_string(s.line) + ": " + *outcome.breach);
    return 0;
}
