// The tables of the trace format (see schema.hpp).
#include "schema.hpp"

#include <array>
#include <type_traits>

namespace fairpool::trace::schema {

namespace {

using core::config;
using core::effect;
using core::event;

// ---- Fields bound to members ---------------------------------------------------------

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

template <typename Member>
struct member_pointer;
template <typename Record, typename T>
struct member_pointer<T Record::*> {
    using record = Record;
    using type = T;
};

// The kind follows from the member's type.
template <typename T>
constexpr value_kind kind_of() {
    if constexpr (std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::optional<std::uint64_t>>)
        return value_kind::u64;
    else if constexpr (std::is_same_v<T, std::uint32_t>) return value_kind::slot;
    else if constexpr (std::is_same_v<T, core::release_outcome>) return value_kind::outcome;
    else if constexpr (std::is_same_v<T, core::check_outcome>) return value_kind::check_outcome;
    else if constexpr (std::is_same_v<T, core::reset_outcome>) return value_kind::reset_outcome;
    else if constexpr (std::is_same_v<T, bool>) return value_kind::boolean;
    else if constexpr (std::is_same_v<T, core::reject_reason>) return value_kind::reject_reason;
    else if constexpr (std::is_same_v<T, core::retire_reason>) return value_kind::retire_reason;
    else if constexpr (std::is_same_v<T, core::fairness_policy>) return value_kind::policy;
    else if constexpr (std::is_same_v<T, core::slot_state>) return value_kind::slot_state;
    else if constexpr (std::is_same_v<T, core::counter>) return value_kind::counter;
    else {
        static_assert(std::is_same_v<T, core::idle_order>, "a member type with no value kind");
        return value_kind::idle_order;
    }
}

template <auto Member>
using record_of = typename member_pointer<decltype(Member)>::record;
template <auto Member>
using type_of = typename member_pointer<decltype(Member)>::type;

template <auto Member>
std::optional<std::uint64_t> get(const record_of<Member>& r) {
    if constexpr (is_optional<type_of<Member>>::value) return r.*Member;
    else return static_cast<std::uint64_t>(r.*Member);
}

template <auto Member>
void set(record_of<Member>& r, std::uint64_t value) {
    if constexpr (is_optional<type_of<Member>>::value) r.*Member = value;
    else r.*Member = static_cast<type_of<Member>>(value);
}

enum class presence : std::uint8_t { required, optional };

// The field `key`, stored in `Member`. A std::optional member is an optional field (a
// writer leaves it out when it is empty); a plain member is required of events and
// effects, and optional only in the config line, where every key may be left out.
template <auto Member, presence P = presence::required>
constexpr field<record_of<Member>> field_of(std::string_view key) {
    static_assert(P == presence::optional || !is_optional<type_of<Member>>::value,
                  "a std::optional member is an optional field");
    return {key, kind_of<type_of<Member>>(), P == presence::required, &get<Member>, &set<Member>};
}

// A std::uint32_t that is not a slot: any value up to 2^32-1.
template <auto Member>
constexpr field<record_of<Member>> u32_field_of(std::string_view key) {
    static_assert(std::is_same_v<type_of<Member>, std::uint32_t>);
    return {key, value_kind::u32, true, &get<Member>, &set<Member>};
}

// ---- Events ----------------------------------------------------------------------------

constexpr auto event_waiter = field_of<&event::waiter>("waiter");
constexpr auto event_handle = field_of<&event::handle>("handle");
constexpr auto event_deadline = field_of<&event::deadline, presence::optional>("deadline");
// A weight past 32 bits saturates (event::saturated_weight): still bad_weight, never
// truncated into range.
constexpr field<event> event_weight{"weight", value_kind::u64, false,
                                    [](const event& e) -> std::optional<std::uint64_t> { return e.weight; },
                                    [](event& e, std::uint64_t v) { e.set_weight(v); }};
constexpr field<event> event_max_leases{"max_leases", value_kind::u64, false,
                                        [](const event& e) { return e.max_leases(); },
                                        [](event& e, std::uint64_t v) { e.set_max_leases(v); }};
constexpr auto event_slot = field_of<&event::slot>("slot");
constexpr auto event_lease = field_of<&event::lease>("lease");
constexpr auto event_outcome = field_of<&event::outcome>("outcome");
constexpr auto event_check = field_of<&event::check>("outcome");
constexpr auto event_reset = field_of<&event::reset>("outcome");

constexpr std::array acquire_fields = {event_waiter, event_handle, event_deadline, event_weight, event_max_leases};
// A resize's sizes live in the waiter and handle words (event::max_slots, min_slots).
constexpr std::array resize_fields = {field_of<&event::waiter>("max_slots"), field_of<&event::handle>("min_slots")};
constexpr std::array cancel_fields = {event_waiter};
constexpr std::array deregister_fields = {event_handle};
constexpr std::array release_fields = {event_slot, event_lease, event_outcome};
constexpr std::array slot_event_fields = {event_slot};  // spawned, spawn_failed, retired, died
constexpr std::array checked_fields = {event_slot, event_check};
constexpr std::array reset_done_fields = {event_slot, event_reset};

// ---- Effects ---------------------------------------------------------------------------

constexpr auto effect_waiter = field_of<&effect::waiter>("waiter");
constexpr auto effect_slot = field_of<&effect::slot>("slot");
constexpr auto effect_lease = field_of<&effect::lease>("lease");
constexpr auto effect_rejected = field_of<&effect::rejected>("reason");
constexpr auto effect_retired = field_of<&effect::retired>("reason");

constexpr std::array grant_fields = {effect_waiter, effect_slot, effect_lease};
constexpr std::array reject_fields = {effect_waiter, effect_rejected};
constexpr std::array slot_effect_fields = {effect_slot};  // spawn, check, reset
constexpr std::array retire_fields = {effect_slot, effect_retired};
constexpr std::array leak_suspected_fields = {effect_slot, effect_lease};

// ---- Config ----------------------------------------------------------------------------

// A config line may leave out any key.
template <auto Member>
constexpr field<config> config_key(std::string_view key) {
    return field_of<Member, presence::optional>(key);
}

constexpr std::array config_keys = {
    config_key<&config::max_slots>("max_slots"),
    config_key<&config::min_slots>("min_slots"),
    config_key<&config::max_waiters>("max_waiters"),
    config_key<&config::max_waiters_per_handle>("max_waiters_per_handle"),
    config_key<&config::policy>("policy"),
    config_key<&config::idle_order>("idle_order"),
    config_key<&config::acquire_timeout>("acquire_timeout"),
    config_key<&config::idle_timeout>("idle_timeout"),
    config_key<&config::max_lifetime>("max_lifetime"),
    config_key<&config::max_uses>("max_uses"),
    config_key<&config::spawn_backoff_initial>("spawn_backoff_initial"),
    config_key<&config::spawn_backoff_max>("spawn_backoff_max"),
    config_key<&config::max_concurrent_spawns>("max_concurrent_spawns"),
    config_key<&config::leak_threshold>("leak_threshold"),
    config_key<&config::check_after_idle>("check_after_idle"),
    config_key<&config::keepalive_interval>("keepalive_interval"),
    config_key<&config::max_concurrent_checks>("max_concurrent_checks"),
    config_key<&config::reset_on_release>("reset_on_release"),
    config_key<&config::max_lifetime_jitter>("max_lifetime_jitter"),
    config_key<&config::jitter_seed>("jitter_seed"),
    // Written only when not their defaults, so that the canonical config line of a
    // trace without caps or resizes reads as it did before they existed.
    field<config>{"max_leases_per_handle", value_kind::u64, false,
                  [](const config& c) -> std::optional<std::uint64_t> {
                      if (c.max_leases_per_handle == 0) return std::nullopt;
                      return c.max_leases_per_handle;
                  },
                  [](config& c, std::uint64_t v) { c.max_leases_per_handle = v; }},
    field<config>{"slot_capacity", value_kind::u64, false,
                  [](const config& c) -> std::optional<std::uint64_t> {
                      if (!c.slot_capacity || *c.slot_capacity == c.max_slots) return std::nullopt;
                      return c.slot_capacity;
                  },
                  [](config& c, std::uint64_t v) { c.slot_capacity = v; }},
};
static_assert(config_keys.size() == max_fields);

// ---- v2: segment, snapshot records, gap (section 7.2) --------------------------------

constexpr std::array segment_keys = {
    field_of<&segment_info::number>("number"),
    field_of<&segment_info::events_before>("events_before"),
};
constexpr std::array gap_keys = {field_of<&gap_info::events>("events")};

using core::snapshot_begin;
using core::snapshot_bucket;
using core::snapshot_counter;
using core::snapshot_handle;
using core::snapshot_idle;
using core::snapshot_sizes;
using core::snapshot_slot;
using core::snapshot_waiter;

constexpr std::array begin_fields = {
    field_of<&snapshot_begin::now>("now"),
    field_of<&snapshot_begin::started>("started"),
    field_of<&snapshot_begin::shutting_down>("shutting_down"),
    field_of<&snapshot_begin::closed>("closed"),
    field_of<&snapshot_begin::last_lease>("last_lease"),
    field_of<&snapshot_begin::highest_waiter>("highest_waiter"),
    field_of<&snapshot_begin::arrivals>("arrivals"),
    field_of<&snapshot_begin::spawn_failures_in_a_row>("spawn_failures_in_a_row"),
    field_of<&snapshot_begin::backoff_end>("backoff_end"),
    field_of<&snapshot_begin::idle_seq>("idle_seq"),
    field_of<&snapshot_begin::jitter_state>("jitter_state"),
};

constexpr std::array slot_fields = {
    field_of<&snapshot_slot::index>("index"),
    field_of<&snapshot_slot::state>("state"),
    field_of<&snapshot_slot::expires_at>("expires_at"),
    field_of<&snapshot_slot::verified_at>("verified_at"),
    field_of<&snapshot_slot::idle_since>("idle_since"),
    field_of<&snapshot_slot::idle_seq>("idle_seq"),
    field_of<&snapshot_slot::granted_at>("granted_at"),
    field_of<&snapshot_slot::lease>("lease"),
    field_of<&snapshot_slot::uses>("uses"),
    field_of<&snapshot_slot::leak_unreported>("leak_unreported"),
    field_of<&snapshot_slot::keepalive_check>("keepalive_check"),
    // The lease's handle, written when not 0 (snapshots before caps have no such field).
    field<snapshot_slot>{"handle", value_kind::u64, false,
                         [](const snapshot_slot& r) -> std::optional<std::uint64_t> {
                             if (r.handle == 0) return std::nullopt;
                             return r.handle;
                         },
                         [](snapshot_slot& r, std::uint64_t v) { r.handle = v; }},
};

constexpr std::array sizes_fields = {
    field_of<&snapshot_sizes::max_slots>("max_slots"),
    field_of<&snapshot_sizes::min_slots>("min_slots"),
};

constexpr std::array idle_fields = {field_of<&snapshot_idle::slot>("slot")};

constexpr std::array handle_fields = {
    field_of<&snapshot_handle::id>("id"),
    field_of<&snapshot_handle::weight>("weight"),
    field_of<&snapshot_handle::turn>("turn"),
    // Written when the handle has a cap.
    field<snapshot_handle>{"max_leases", value_kind::u64, false,
                           [](const snapshot_handle& r) -> std::optional<std::uint64_t> {
                               if (r.max_leases == 0) return std::nullopt;
                               return r.max_leases;
                           },
                           [](snapshot_handle& r, std::uint64_t v) { r.max_leases = v; }},
};

// `deadline` is written only when the waiter has one (never = none).
std::optional<std::uint64_t> waiter_deadline(const snapshot_waiter& w) {
    if (w.deadline == core::never) return std::nullopt;
    return w.deadline;
}
void set_waiter_deadline(snapshot_waiter& w, std::uint64_t value) { w.deadline = value; }

constexpr std::array waiter_fields = {
    field_of<&snapshot_waiter::id>("id"),
    field_of<&snapshot_waiter::handle>("handle"),
    field_of<&snapshot_waiter::arrived_at>("arrived_at"),
    field_of<&snapshot_waiter::arrival>("arrival"),
    field<snapshot_waiter>{"deadline", value_kind::u64, false, &waiter_deadline, &set_waiter_deadline},
};

constexpr std::array counter_fields = {
    field_of<&snapshot_counter::name>("name"),
    field_of<&snapshot_counter::value>("value"),
};

constexpr std::array bucket_fields = {
    u32_field_of<&snapshot_bucket::index>("index"),
    field_of<&snapshot_bucket::count>("count"),
};

// By index in core::snapshot_record.
constexpr std::array<std::string_view, snapshot_kinds> snapshot_words = {
    "snapshot", "slot", "idle", "handle", "waiter", "counter", "wait_bucket", "snapshot_end", "sizes",
};

// ---- Names -----------------------------------------------------------------------------

// core has no count for these.
constexpr int release_outcome_count = 2;
constexpr int check_outcome_count = 2;
constexpr int reset_outcome_count = 2;
constexpr int boolean_count = 2;
constexpr int fairness_policy_count = 2;
constexpr int idle_order_count = 2;

}  // namespace

std::span<const field<event>> fields_of(core::event_kind k) noexcept {
    using core::event_kind;
    switch (k) {
        case event_kind::acquire: return acquire_fields;
        case event_kind::cancel: return cancel_fields;
        case event_kind::deregister: return deregister_fields;
        case event_kind::release: return release_fields;
        case event_kind::spawned:
        case event_kind::spawn_failed:
        case event_kind::retired:
        case event_kind::died: return slot_event_fields;
        case event_kind::checked: return checked_fields;
        case event_kind::reset_done: return reset_done_fields;
        case event_kind::resize: return resize_fields;
        case event_kind::start:
        case event_kind::tick:
        case event_kind::shutdown: break;
    }
    return {};
}

std::span<const field<effect>> fields_of(core::effect_kind k) noexcept {
    using core::effect_kind;
    switch (k) {
        case effect_kind::grant: return grant_fields;
        case effect_kind::reject: return reject_fields;
        case effect_kind::spawn:
        case effect_kind::check:
        case effect_kind::reset: return slot_effect_fields;
        case effect_kind::retire: return retire_fields;
        case effect_kind::leak_suspected: return leak_suspected_fields;
        case effect_kind::closed: break;
    }
    return {};
}

std::span<const field<config>> config_fields() noexcept { return config_keys; }

std::string_view snapshot_word(std::size_t variant_index) noexcept {
    return variant_index < snapshot_words.size() ? snapshot_words[variant_index] : "?";
}
std::span<const field<core::snapshot_begin>> fields_of(std::type_identity<core::snapshot_begin>) noexcept {
    return begin_fields;
}
std::span<const field<core::snapshot_slot>> fields_of(std::type_identity<core::snapshot_slot>) noexcept {
    return slot_fields;
}
std::span<const field<core::snapshot_idle>> fields_of(std::type_identity<core::snapshot_idle>) noexcept {
    return idle_fields;
}
std::span<const field<core::snapshot_handle>> fields_of(std::type_identity<core::snapshot_handle>) noexcept {
    return handle_fields;
}
std::span<const field<core::snapshot_waiter>> fields_of(std::type_identity<core::snapshot_waiter>) noexcept {
    return waiter_fields;
}
std::span<const field<core::snapshot_counter>> fields_of(std::type_identity<core::snapshot_counter>) noexcept {
    return counter_fields;
}
std::span<const field<core::snapshot_bucket>> fields_of(std::type_identity<core::snapshot_bucket>) noexcept {
    return bucket_fields;
}
std::span<const field<core::snapshot_end>> fields_of(std::type_identity<core::snapshot_end>) noexcept { return {}; }
std::span<const field<core::snapshot_sizes>> fields_of(std::type_identity<core::snapshot_sizes>) noexcept {
    return sizes_fields;
}
std::span<const field<segment_info>> segment_fields() noexcept { return segment_keys; }
std::span<const field<gap_info>> gap_fields() noexcept { return gap_keys; }

const char* name_of(value_kind kind, std::uint64_t index) noexcept {
    switch (kind) {
        case value_kind::outcome: return core::to_string(static_cast<core::release_outcome>(index));
        case value_kind::check_outcome: return core::to_string(static_cast<core::check_outcome>(index));
        case value_kind::reset_outcome: return core::to_string(static_cast<core::reset_outcome>(index));
        case value_kind::boolean: return index == 0 ? "false" : index == 1 ? "true" : "?";
        case value_kind::reject_reason: return core::to_string(static_cast<core::reject_reason>(index));
        case value_kind::retire_reason: return core::to_string(static_cast<core::retire_reason>(index));
        case value_kind::policy: return core::to_string(static_cast<core::fairness_policy>(index));
        case value_kind::idle_order: return core::to_string(static_cast<core::idle_order>(index));
        case value_kind::slot_state: return core::to_string(static_cast<core::slot_state>(index));
        case value_kind::counter: return core::to_string(static_cast<core::counter>(index));
        case value_kind::u64:
        case value_kind::slot:
        case value_kind::u32: break;
    }
    return "?";
}

int name_count(value_kind kind) noexcept {
    switch (kind) {
        case value_kind::outcome: return release_outcome_count;
        case value_kind::check_outcome: return check_outcome_count;
        case value_kind::reset_outcome: return reset_outcome_count;
        case value_kind::boolean: return boolean_count;
        case value_kind::reject_reason: return core::reject_reason_count;
        case value_kind::retire_reason: return core::retire_reason_count;
        case value_kind::policy: return fairness_policy_count;
        case value_kind::idle_order: return idle_order_count;
        case value_kind::slot_state: return core::slot_state_count;
        case value_kind::counter: return core::counter_count;
        case value_kind::u64:
        case value_kind::slot:
        case value_kind::u32: break;
    }
    return 0;
}

}  // namespace fairpool::trace::schema
