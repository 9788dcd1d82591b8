#pragma once
// Known bugs that can be planted between the core and the checks of a lockstep run, to
// see the tooling (fairpool-replay --fault, fairpool-sim --plant-fault) catch and
// shrink them. Never used outside testing the tools themselves.
#include <string>

#include "fairpool/model/lockstep.hpp"

namespace fairpool::model {

// "reuse-dirty": dirty resources are not retired (they would be handed out again).
// "lose-cancel": cancelled waiters get no answer.
// "keep-dead": a resource whose check came back dead is not retired. nullptr for any other name.
[[nodiscard]] lockstep::fault planted_fault(const std::string& name);

}  // namespace fairpool::model
