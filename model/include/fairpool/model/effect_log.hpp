#pragma once
// An effect sink that records every effect, in order (for tests).
#include <vector>

#include "fairpool/core/event.hpp"

namespace fairpool::model {

struct effect_log : core::effect_sink {
    std::vector<core::effect> effects;
    void on_effect(const core::effect& e) override { effects.push_back(e); }
};

}  // namespace fairpool::model
