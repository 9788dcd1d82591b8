#pragma once
// The schema of the trace format (docs/CONTRACT.md, sections 7 and 7.2), written once:
// the record words, the fields of every event and effect in the order of the
// contract's tables, the config keys in table order, and the fields of the v2 records
// (segment, the snapshot records, gap) in the order of section 7.2. The reader (read.cpp) and the writer
// (format.cpp) are both driven by it. Names of events, effects and enumerators are the
// spellings core::to_string gives (core/src/names.cpp, core/src/config.cpp).
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::trace::schema {

inline constexpr std::string_view header = fairpool::trace::header;  // "fairpool-trace v1"
inline constexpr std::string_view header_word = header.substr(0, header.find(' '));  // "fairpool-trace"
inline constexpr std::string_view version_word = header.substr(header.find(' ') + 1);  // "v1"
inline constexpr std::string_view header_v2 = fairpool::trace::header_v2;  // "fairpool-trace v2"
inline constexpr std::string_view version_word_v2 = header_v2.substr(header_v2.find(' ') + 1);  // "v2"
inline constexpr std::string_view config_word = "config";
inline constexpr char event_mark = '@';              // "@NOW EVENT key=value…"
inline constexpr std::string_view effect_mark = "=";  // "= EFFECT key=value…"
inline constexpr std::string_view error_mark = "!";   // "! CODE"
inline constexpr std::string_view segment_word = "segment";  // v2: "segment number=N events_before=E"
inline constexpr std::string_view gap_word = "gap";          // v2: "gap events=N"

// How a field's value is spelled. A number is plain decimal; a slot is a number below
// slot_limit; the others are enumerators, written by name.
enum class value_kind : std::uint8_t {
    u64, slot, outcome, check_outcome, reset_outcome, reject_reason, retire_reason, policy, idle_order, boolean,
    u32, slot_state, counter,  // v2: a bucket index; a slot's state; a counter's name
};

inline constexpr std::uint64_t slot_limit = 65536;  // slots are below this in any trace

// One key=value field of a record. Values travel as u64: a number as itself, an
// enumerator as its index.
template <typename Record>
struct field {
    std::string_view key;
    value_kind kind;
    bool required;  // a reader refuses the record without it; a writer always writes it
    // The value; empty when an optional field is not given.
    std::optional<std::uint64_t> (*get)(const Record&);
    void (*set)(Record&, std::uint64_t);
};

// Fields of each event and effect, in the order of the contract's tables.
[[nodiscard]] std::span<const field<core::event>> fields_of(core::event_kind k) noexcept;
[[nodiscard]] std::span<const field<core::effect>> fields_of(core::effect_kind k) noexcept;
// The config keys of section 2, in table order; none is required.
[[nodiscard]] std::span<const field<core::config>> config_fields() noexcept;
inline constexpr std::size_t max_fields = 22;  // the longest list: the config's

// v2 (section 7.2). The word of each snapshot record, by its index in
// core::snapshot_record ("snapshot", "slot", …, "snapshot_end").
[[nodiscard]] std::string_view snapshot_word(std::size_t variant_index) noexcept;
inline constexpr std::size_t snapshot_kinds = std::variant_size_v<core::snapshot_record>;
// The fields of each snapshot record, in the order of section 7.2.
[[nodiscard]] std::span<const field<core::snapshot_begin>> fields_of(std::type_identity<core::snapshot_begin>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_slot>> fields_of(std::type_identity<core::snapshot_slot>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_idle>> fields_of(std::type_identity<core::snapshot_idle>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_handle>> fields_of(std::type_identity<core::snapshot_handle>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_waiter>> fields_of(std::type_identity<core::snapshot_waiter>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_counter>> fields_of(std::type_identity<core::snapshot_counter>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_bucket>> fields_of(std::type_identity<core::snapshot_bucket>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_end>> fields_of(std::type_identity<core::snapshot_end>) noexcept;
[[nodiscard]] std::span<const field<core::snapshot_sizes>> fields_of(std::type_identity<core::snapshot_sizes>) noexcept;
[[nodiscard]] std::span<const field<segment_info>> segment_fields() noexcept;
[[nodiscard]] std::span<const field<gap_info>> gap_fields() noexcept;

// Enumerator `index` of a kind written by name (not u64 or slot), as core::to_string spells it.
[[nodiscard]] const char* name_of(value_kind kind, std::uint64_t index) noexcept;
// How many enumerators a kind written by name has.
[[nodiscard]] int name_count(value_kind kind) noexcept;

}  // namespace fairpool::trace::schema
