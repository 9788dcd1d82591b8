#include "fairpool/model/planted_faults.hpp"

#include <vector>

namespace fairpool::model {

namespace {

void reuse_dirty(const core::event&, std::vector<core::effect>& effects) {
    std::erase_if(effects, [](const core::effect& f) {
        return f.kind == core::effect_kind::retire && f.retired == core::retire_reason::dirty;
    });
}

void lose_cancel(const core::event&, std::vector<core::effect>& effects) {
    std::erase_if(effects, [](const core::effect& f) {
        return f.kind == core::effect_kind::reject && f.rejected == core::reject_reason::cancelled;
    });
}

}  // namespace

lockstep::fault planted_fault(const std::string& name) {
    if (name == "reuse-dirty") return reuse_dirty;
    if (name == "lose-cancel") return lose_cancel;
    return nullptr;
}

}  // namespace fairpool::model
