#pragma once
// Runs the core scheduler and the reference model side by side and checks, after
// every step, that they agree (error, effects, counters, next_deadline) and that the
// invariant checker finds no breach. The oracle of the property tests, of
// `fairpool-replay --invariants`, of `fairpool-sim` and of the fuzzers.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/model/invariant_checker.hpp"
#include "fairpool/model/reference_model.hpp"

namespace fairpool::model {

class lockstep {
public:
    struct outcome {
        core::event_error error = core::event_error::ok;
        const std::vector<core::effect>* effects = nullptr;  // the core's, valid until the next step
        std::optional<std::string> breach;                    // first disagreement or broken invariant
    };

    explicit lockstep(const core::config& c);
    lockstep(const core::config& c, std::uint64_t hash_seed);
    // All three from the same snapshot (docs/CONTRACT.md section 7.2): the core through
    // its restoring constructor (throws core::snapshot_error for a snapshot it refuses,
    // before the model and the checker read it), the model and the checker each
    // through their own.
    lockstep(const core::config& c, std::span<const core::snapshot_record> snapshot);
    lockstep(const core::config& c, std::span<const core::snapshot_record> snapshot, std::uint64_t hash_seed);

    // Steps both machines and compares them.
    outcome step(const core::event& e);

    [[nodiscard]] const core::scheduler& core() const noexcept { return core_; }
    [[nodiscard]] const reference_model& model() const noexcept { return model_; }

    // Plants a fault between the core and the checks: called on the core's effects of
    // each step before they are compared. Only for testing the tooling itself.
    using fault = void (*)(const core::event& e, std::vector<core::effect>& effects);
    void plant(fault f) noexcept { fault_ = f; }

private:
    core::scheduler core_;
    reference_model model_;
    invariant_checker checker_;
    std::vector<core::effect> core_effects_;
    std::vector<core::effect> model_effects_;
    fault fault_ = nullptr;
};

// "grant waiter=1 slot=0 lease=1, spawn slot=1" (or "nothing").
[[nodiscard]] std::string describe(const std::vector<core::effect>& effects);

}  // namespace fairpool::model
