#pragma once
// The reference model: the scheduler contract (docs/CONTRACT.md, sections 1-6 and 9)
// written as plainly as possible, with standard containers and linear scans. It is the
// oracle that the core is checked against; it is not fast and allocates freely.
#include <cstdint>
#include <optional>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/stats.hpp"

namespace fairpool::model {

class reference_model {
public:
    // Throws core::config_error (message names the field) on an invalid config.
    explicit reference_model(const core::config& config);

    // Validates the event (an invalid one changes nothing and returns its error),
    // then runs the steps of section 5, calling sink.on_effect for each effect in order.
    core::event_error step(const core::event& e, core::effect_sink& sink);

    // Earliest time at which a tick would emit an effect, or nullopt.
    [[nodiscard]] std::optional<core::nanos> next_deadline() const;

    [[nodiscard]] const core::stats& counters() const;
    [[nodiscard]] core::slot_state slot(std::uint32_t index) const;
    [[nodiscard]] const core::config& configuration() const;

private:
    // Plain members with standard containers; the model is a copyable value.
};

}  // namespace fairpool::model
