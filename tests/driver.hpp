#pragma once
// Test driver: feeds events to a scheduler (or to the reference model) and returns
// the effects of each step as trace-format strings, so that tests read like traces.
//
// A test says what it expects of every step. `d(e)` expects the event to be accepted:
// a refused event fails the test (naming the event and its error), so
// `EXPECT_EQ(d(e), effects{})` can never pass on a refusal. `d.refused(e, code)`
// expects exactly that refusal (and no effects). `d.outcome(e)` is for tables of
// mixed steps: the effects, then "! code" if the event was refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/trace/format.hpp"

namespace fairpool::testing {

using effects = std::vector<std::string>;

inline effects formatted(const core::step_result& r) {
    effects lines;
    for (const core::effect& f : r.effects) lines.push_back(trace::format(f));
    return lines;
}

template <class Machine>
class driver {
public:
    explicit driver(const core::config& c) : machine_(c) {}

    // Runs one event that must be accepted; returns its effects.
    effects operator()(const core::event& e) {
        const core::step_result r = machine_.step(e);
        if (!r.ok()) ADD_FAILURE() << "refused: " << trace::format_line(e) << " ! " << core::to_string(r.error);
        return formatted(r);
    }

    // Runs one event that must be refused with `expected` (and so emit nothing).
    void refused(const core::event& e, core::event_error expected) {
        const core::step_result r = machine_.step(e);
        EXPECT_EQ(std::string(core::to_string(r.error)), std::string(core::to_string(expected)))
            << trace::format_line(e);
        EXPECT_TRUE(r.effects.empty()) << trace::format_line(e);
    }

    // Runs one event, accepted or not: its effects, then "! CODE" if it was refused.
    effects outcome(const core::event& e) {
        const core::step_result r = machine_.step(e);
        effects lines = formatted(r);
        if (!r.ok()) lines.push_back(std::string("! ") + core::to_string(r.error));
        return lines;
    }

    [[nodiscard]] Machine& machine() { return machine_; }
    [[nodiscard]] const Machine& machine() const { return machine_; }

private:
    Machine machine_;
};

}  // namespace fairpool::testing
