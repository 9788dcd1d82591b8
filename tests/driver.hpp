#pragma once
// Test driver: feeds events to a scheduler (or to the reference model) and returns
// the effects of each step as trace-format strings, so that tests read like traces.
#include <string>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/trace/format.hpp"

namespace fairpool::testing {

using effects = std::vector<std::string>;

class string_sink final : public core::effect_sink {
public:
    effects lines;
    void on_effect(const core::effect& f) override { lines.push_back(trace::format(f)); }
};

template <class Machine>
class driver {
public:
    explicit driver(const core::config& c) : machine_(c) {}

    // Runs one event; returns its effects. The error it returned is in error().
    effects operator()(const core::event& e) {
        string_sink sink;
        error_ = machine_.step(e, sink);
        return sink.lines;
    }

    [[nodiscard]] core::event_error error() const { return error_; }
    [[nodiscard]] Machine& machine() { return machine_; }
    [[nodiscard]] const Machine& machine() const { return machine_; }

private:
    Machine machine_;
    core::event_error error_ = core::event_error::ok;
};

}  // namespace fairpool::testing
