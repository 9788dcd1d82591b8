#include "fairpool/model/lockstep.hpp"

#include <algorithm>
#include <random>

#include "fairpool/trace/format.hpp"

namespace fairpool::model {

namespace {

std::string describe_deadline(std::optional<core::nanos> d) {
    return d ? std::to_string(*d) : std::string("none");
}

// What one emitted and the other did not (as multisets, order aside), e.g.
// "model only: retire slot=0 reason=dirty; core only: nothing".
std::string difference(const std::vector<core::effect>& core, const std::vector<core::effect>& model) {
    std::vector<core::effect> core_only = core;
    std::vector<core::effect> model_only;
    for (const core::effect& f : model) {
        const auto match = std::find(core_only.begin(), core_only.end(), f);
        if (match != core_only.end()) core_only.erase(match); else model_only.push_back(f);
    }
    if (core_only.empty() && model_only.empty()) return "same effects in another order";
    return "model only: " + describe(model_only) + "; core only: " + describe(core_only);
}

// The hash seed keys the core's id tables and changes no output (scheduler.hpp).
std::uint64_t random_hash_seed() {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
}

}  // namespace

std::string describe(const std::vector<core::effect>& effects) {
    if (effects.empty()) return "nothing";
    std::string out;
    for (const core::effect& f : effects) {
        if (!out.empty()) out += ", ";
        out += trace::format(f);
    }
    return out;
}

lockstep::lockstep(const core::config& c) : core_(c), model_(c), checker_(c) {}

lockstep::lockstep(const core::config& c, std::uint64_t hash_seed) : core_(c, hash_seed), model_(c), checker_(c) {}

lockstep::lockstep(const core::config& c, std::span<const core::snapshot_record> snapshot)
    : lockstep(c, snapshot, random_hash_seed()) {}

// Members are built in order: the core first, so a snapshot it refuses reaches neither
// the model nor the checker, which trust it.
lockstep::lockstep(const core::config& c, std::span<const core::snapshot_record> snapshot, std::uint64_t hash_seed)
    : core_(c, snapshot, hash_seed), model_(c, snapshot), checker_(c, snapshot) {}

lockstep::outcome lockstep::step(const core::event& e) {
    outcome result;
    const core::step_result core_step = core_.step(e);
    result.error = core_step.error;
    core_effects_.assign(core_step.effects.begin(), core_step.effects.end());
    if (fault_) fault_(e, core_effects_);
    result.effects = &core_effects_;
    const core::step_result model_step = model_.step(e);
    const core::event_error model_error = model_step.error;
    model_effects_.assign(model_step.effects.begin(), model_step.effects.end());
    if (model_error != result.error) {
        result.breach = std::string("core and model differ: core returned ") + core::to_string(result.error) +
                        ", model " + core::to_string(model_error);
    } else if (core_effects_ != model_effects_) {
        result.breach = "core and model differ: " + difference(core_effects_, model_effects_) + " (core emitted " +
                        describe(core_effects_) + "; model emitted " + describe(model_effects_) + ")";
    } else if (core_.counters() != model_.counters()) {
        result.breach = "core and model differ: counters";
    } else if (core_.next_deadline() != model_.next_deadline()) {
        result.breach = "core and model differ: next_deadline core " + describe_deadline(core_.next_deadline()) +
                        ", model " + describe_deadline(model_.next_deadline());
    }
    auto breach = checker_.check_step(e, result.error, core_effects_, core_.counters());
    if (!result.breach && breach) result.breach = std::move(breach);
    return result;
}

}  // namespace fairpool::model
