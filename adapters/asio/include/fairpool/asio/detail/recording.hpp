#pragma once
// The opt-in recording sink: the configuration, then every event the actor fed the
// core with its effects, in trace format v1 (docs/CONTRACT.md section 7), in the order
// the actor fed them. Written on the actor (the one user code a drain runs: the write
// to the user's stream); replays with `fairpool-replay --check`.
#include <ostream>
#include <span>

#include "fairpool/core/config.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::detail {

class recording {
public:
    recording(std::ostream* out, const core::config& c) : out_(out) {
        if (out_ != nullptr) trace::write_header(*out_, c);
    }

    void step(const core::event& e, const core::step_result& r) const {
        if (out_ != nullptr) trace::write_step(*out_, e, r.effects, r.error);
    }

private:
    std::ostream* out_;
};

}  // namespace fairpool::detail
