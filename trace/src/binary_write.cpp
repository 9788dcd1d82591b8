// Encoding trace format v3 (docs/CONTRACT.md section 7.3).
#include <variant>

#include "binary_layout.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/crc32c.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/snapshots.hpp"

namespace fairpool::trace::v3 {

using layout::put;

namespace {

std::uint8_t flags_of(const core::event& e) noexcept {
    switch (e.kind) {
        case core::event_kind::acquire:
            return static_cast<std::uint8_t>((e.deadline ? layout::has_deadline : 0) |
                                             (e.weight ? layout::has_weight : 0) |
                                             (e.has_max_leases ? layout::has_max_leases : 0));
        case core::event_kind::release: return e.outcome == core::release_outcome::dirty ? layout::other_outcome : 0;
        case core::event_kind::checked: return e.check == core::check_outcome::dead ? layout::other_outcome : 0;
        case core::event_kind::reset_done: return e.reset == core::reset_outcome::failed ? layout::other_outcome : 0;
        default: return 0;
    }
}

unsigned char* put_u8(unsigned char* out, std::uint8_t v) noexcept { return put<std::uint8_t>(out, v); }
unsigned char* put_bool(unsigned char* out, bool v) noexcept { return put_u8(out, v ? 1 : 0); }

template <typename E>
std::uint8_t byte_of(E e) noexcept {
    return static_cast<std::uint8_t>(e);
}

unsigned char* put_tag(unsigned char* out, layout::snapshot_tag t) noexcept { return put_u8(out, byte_of(t)); }

struct record_encoder {
    unsigned char* out;

    unsigned char* operator()(const core::snapshot_begin& r) const noexcept {
        unsigned char* p = put_tag(out, layout::snapshot_tag::begin);
        for (const std::uint64_t v : {r.now, r.last_lease, r.highest_waiter, r.arrivals, r.spawn_failures_in_a_row,
                                      r.backoff_end, r.idle_seq, r.jitter_state})
            p = put(p, v);
        p = put_bool(p, r.started);
        p = put_bool(p, r.shutting_down);
        return put_bool(p, r.closed);
    }
    unsigned char* operator()(const core::snapshot_sizes& r) const noexcept {
        return put(put(put_tag(out, layout::snapshot_tag::sizes), r.max_slots), r.min_slots);
    }
    unsigned char* operator()(const core::snapshot_slot& r) const noexcept {
        unsigned char* p = put(put_tag(out, layout::snapshot_tag::slot), r.index);
        p = put_u8(p, byte_of(r.state));
        for (const std::uint64_t v : {r.expires_at, r.verified_at, r.idle_since, r.idle_seq, r.granted_at, r.lease, r.uses})
            p = put(p, v);
        p = put_bool(p, r.leak_unreported);
        p = put_bool(p, r.keepalive_check);
        return put(p, r.handle);
    }
    unsigned char* operator()(const core::snapshot_idle& r) const noexcept {
        return put(put_tag(out, layout::snapshot_tag::idle), r.slot);
    }
    unsigned char* operator()(const core::snapshot_handle& r) const noexcept {
        unsigned char* p = put_tag(out, layout::snapshot_tag::handle);
        for (const std::uint64_t v : {r.id, r.weight, r.turn, r.max_leases}) p = put(p, v);
        return p;
    }
    unsigned char* operator()(const core::snapshot_waiter& r) const noexcept {
        unsigned char* p = put_tag(out, layout::snapshot_tag::waiter);
        for (const std::uint64_t v : {r.id, r.handle, r.arrived_at, r.arrival, r.deadline}) p = put(p, v);
        return p;
    }
    unsigned char* operator()(const core::snapshot_counter& r) const noexcept {
        return put(put_u8(put_tag(out, layout::snapshot_tag::counter), byte_of(r.name)), r.value);
    }
    unsigned char* operator()(const core::snapshot_bucket& r) const noexcept {
        return put(put(put_tag(out, layout::snapshot_tag::bucket), r.index), r.count);
    }
    unsigned char* operator()(const core::snapshot_end&) const noexcept {
        return put_tag(out, layout::snapshot_tag::end);
    }
};


}  // namespace

namespace {

unsigned char* put_varint(unsigned char* out, std::uint64_t v) noexcept {
    while (v >= 0x80) {
        *out++ = static_cast<unsigned char>(v | 0x80);
        v >>= 7;
    }
    *out++ = static_cast<unsigned char>(v);
    return out;
}

// `value` as its difference from `base` (wrapping), zigzag-encoded; `base` becomes it.
unsigned char* put_delta(unsigned char* out, std::uint64_t& base, std::uint64_t value) noexcept {
    const std::uint64_t d = value - base;
    base = value;
    return put_varint(out, (d << 1) ^ (0 - (d >> 63)));
}

}  // namespace

unsigned char* put_event(unsigned char* out, delta_base& base, const core::event& e, std::uint32_t effect_count,
                         core::event_error error) noexcept {
    const bool has_error = error != core::event_error::ok;
    *out++ = static_cast<unsigned char>(byte_of(e.kind) | flags_of(e) << 4 | (has_error ? 0x80 : 0));
    if (has_error) *out++ = byte_of(error);
    unsigned char* p = put_varint(out, effect_count);
    p = put_delta(p, base.now, e.now);
    switch (e.kind) {
        case core::event_kind::acquire:
            p = put_delta(p, base.waiter, e.waiter);
            p = put_delta(p, base.handle, e.handle);
            if (e.deadline) {
                std::uint64_t relative = e.now;  // the deadline as its difference from the event's time
                p = put_delta(p, relative, *e.deadline);
            }
            if (e.weight) p = put_varint(p, *e.weight);
            if (e.has_max_leases) p = put_varint(p, e.lease);
            return p;
        case core::event_kind::cancel: return put_delta(p, base.waiter, e.waiter);
        case core::event_kind::deregister: return put_delta(p, base.handle, e.handle);
        case core::event_kind::release: return put_delta(put_varint(p, e.slot), base.lease, e.lease);
        case core::event_kind::resize: return put_varint(put_varint(p, e.max_slots()), e.min_slots());
        case core::event_kind::spawned:
        case core::event_kind::spawn_failed:
        case core::event_kind::retired:
        case core::event_kind::died:
        case core::event_kind::checked:
        case core::event_kind::reset_done: return put_varint(p, e.slot);
        case core::event_kind::start:
        case core::event_kind::tick:
        case core::event_kind::shutdown: return p;
    }
    return p;
}

unsigned char* put_effect(unsigned char* out, delta_base& base, const core::effect& f) noexcept {
    std::uint8_t reason = 0;
    if (f.kind == core::effect_kind::reject) reason = byte_of(f.rejected);
    if (f.kind == core::effect_kind::retire) reason = byte_of(f.retired);
    *out++ = static_cast<unsigned char>(byte_of(f.kind) | reason << 3);
    switch (f.kind) {
        case core::effect_kind::grant:
            return put_delta(put_varint(put_delta(out, base.waiter, f.waiter), f.slot), base.lease, f.lease);
        case core::effect_kind::reject: return put_delta(out, base.waiter, f.waiter);
        case core::effect_kind::leak_suspected: return put_delta(put_varint(out, f.slot), base.lease, f.lease);
        case core::effect_kind::spawn:
        case core::effect_kind::retire:
        case core::effect_kind::check:
        case core::effect_kind::reset: return put_varint(out, f.slot);
        case core::effect_kind::closed: return out;
    }
    return out;
}

unsigned char* put_step(unsigned char* out, delta_base& base, const core::event& e,
                        std::span<const core::effect> effects, core::event_error error) noexcept {
    unsigned char* p = put_event(out, base, e, static_cast<std::uint32_t>(effects.size()), error);
    for (const core::effect& f : effects) p = put_effect(p, base, f);
    return p;
}

unsigned char* seal_block(unsigned char* block, std::size_t payload_bytes, std::uint32_t steps) noexcept {
    unsigned char* p = put_u8(block, byte_of(block_kind::steps));
    p = put_u8(put_u8(put_u8(p, 0), 0), 0);
    p = put(p, static_cast<std::uint32_t>(payload_bytes));
    p = put(p, steps);
    const std::uint32_t crc = crc32c(block + block_header_bytes, payload_bytes, crc32c(block, layout::block_crc_at));
    put(p, crc);
    return block + block_header_bytes + payload_bytes;
}

unsigned char* put_gap(unsigned char* out, std::uint64_t events) noexcept {
    unsigned char* p = put_u8(out, byte_of(block_kind::gap));
    p = put_u8(put_u8(put_u8(p, 0), 0), 0);
    p = put(p, std::uint32_t{8});
    p = put(p, std::uint32_t{0});
    unsigned char* crc_at = p;
    p = put(p + 4, events);
    put(crc_at, crc32c(crc_at + 4, 8, crc32c(out, layout::block_crc_at)));
    return p;
}

unsigned char* put_snapshot_record(unsigned char* out, const core::snapshot_record& r) noexcept {
    return std::visit(record_encoder{out}, r);
}

std::string header_bytes(const core::config& c, const std::optional<segment_info>& segment,
                         std::span<const core::snapshot_record> snapshot) {
    std::vector<unsigned char> encoded(snapshot.size() * max_snapshot_record_bytes);
    unsigned char* p = encoded.data();
    for (const core::snapshot_record& r : snapshot) p = put_snapshot_record(p, r);
    return header_bytes(c, segment, static_cast<std::uint32_t>(snapshot.size()),
                        std::span<const unsigned char>(encoded.data(), static_cast<std::size_t>(p - encoded.data())));
}

std::string header_bytes(const core::config& c, const std::optional<segment_info>& segment, std::uint32_t records,
                         std::span<const unsigned char> encoded) {
    const std::string config_line = format_canonical(c);
    std::string out(layout::config_at + config_line.size() + 1 + 16 + 4 + encoded.size() + 4, '\0');
    auto* begin = reinterpret_cast<unsigned char*>(out.data());
    std::memcpy(begin, magic.data(), magic.size());
    put(begin + layout::version_at, version);
    put(begin + layout::config_size_at, static_cast<std::uint32_t>(config_line.size()));
    std::memcpy(begin + layout::config_at, config_line.data(), config_line.size());
    unsigned char* p = begin + layout::config_at + config_line.size();
    p = put_bool(p, segment.has_value());
    p = put(p, segment ? segment->number : 0);
    p = put(p, segment ? segment->events_before : 0);
    p = put(p, records);
    if (!encoded.empty()) std::memcpy(p, encoded.data(), encoded.size());
    p += encoded.size();
    const auto size = static_cast<std::uint32_t>(p - begin + 4);
    put(begin + layout::header_size_at, size);
    put(p, crc32c(begin, static_cast<std::size_t>(p - begin)));
    out.resize(size);
    return out;
}

std::string encode(const trace& t) {
    std::string out = header_bytes(t.config, t.segment, snapshot_of(t));
    std::vector<core::effect> effects;
    std::vector<unsigned char> block;
    delta_base base;  // zero at the file's start
    for (std::size_t first = 0; first < t.steps.size(); first += canonical_block_steps) {
        const std::size_t last = std::min(t.steps.size(), first + canonical_block_steps);
        std::size_t bound = block_header_bytes;
        for (std::size_t i = first; i < last; ++i) bound += max_step_bytes(t.steps[i].effects.size());
        block.resize(bound);
        unsigned char* p = block.data() + block_header_bytes;
        for (std::size_t i = first; i < last; ++i) {
            const step& s = t.steps[i];
            effects.clear();
            for (const recorded_effect& f : s.effects) effects.push_back(f.effect);
            p = put_step(p, base, s.event, effects, s.error.value_or(core::event_error::ok));
        }
        const auto payload = static_cast<std::size_t>(p - block.data()) - block_header_bytes;
        const unsigned char* end = seal_block(block.data(), payload, static_cast<std::uint32_t>(last - first));
        out.append(reinterpret_cast<const char*>(block.data()), static_cast<std::size_t>(end - block.data()));
    }
    if (t.gap) {
        unsigned char gap[gap_block_bytes];
        put_gap(gap, t.gap->events);
        out.append(reinterpret_cast<const char*>(gap), gap_block_bytes);
    }
    return out;
}

}  // namespace fairpool::trace::v3
