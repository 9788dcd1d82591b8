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

// A resource found dead by its check is not retired (it would be handed out again).
void keep_dead(const core::event& e, std::vector<core::effect>& effects) {
    if (e.kind != core::event_kind::checked || e.check != core::check_outcome::dead) return;
    std::erase_if(effects, [&](const core::effect& f) {
        return f.kind == core::effect_kind::retire && f.retired == core::retire_reason::died && f.slot == e.slot;
    });
}

}  // namespace

lockstep::fault planted_fault(const std::string& name) {
    if (name == "reuse-dirty") return reuse_dirty;
    if (name == "lose-cancel") return lose_cancel;
    if (name == "keep-dead") return keep_dead;
    return nullptr;
}

}  // namespace fairpool::model
