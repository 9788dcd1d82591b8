#pragma once
// Trace format v3 (docs/CONTRACT.md section 7.3): the vocabulary of v2 in binary, for
// recordings that run for weeks. A file is a header (magic, version, the canonical
// config line as text, the segment record, the snapshot), then blocks, each holding
// whole steps with their length and a CRC-32C, or a gap. Every field is little-endian
// and written one by one, at no alignment: nothing here copies an in-memory struct.
//
// The encoder writes into memory the caller owns and sized with the max_*_bytes
// bounds, so the flight recorder's writer encodes a ring's records without allocating.
// The decoder (binary_read.cpp) reads a whole file in memory, block after block, a step
// at a time, and refuses anything that does not decode, naming the byte offset.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/trace.hpp"

namespace fairpool::trace::v3 {

// "\x89FPTRACE": the first bytes of every v3 file (the high bit: not a text trace).
inline constexpr std::string_view magic{"\x89" "FPTRACE", 8};
inline constexpr std::uint32_t version = 3;

enum class block_kind : std::uint8_t { steps = 1, gap = 2 };
inline constexpr std::size_t block_header_bytes = 16;  // kind, 3 zero bytes, size, steps, crc
inline constexpr std::size_t gap_block_bytes = block_header_bytes + 8;
// Steps a block when the whole trace is known (--to-binary, trace::write_binary): the
// canonical encoding, so that one text trace has exactly one v3 encoding.
inline constexpr std::uint32_t canonical_block_steps = 4096;

// Steps are written compactly (section 7.3): an event's time, and the waiter, handle and
// lease ids, as the difference from the one before in the same file (zigzag LEB128
// varints), every other number as an LEB128 varint. A delta_base holds what those
// differences are taken from: all zero at the start of each file, and it follows every
// step encoded or decoded. So a file is read from its start: its blocks are checked one
// by one, but decoded in order.
struct delta_base {
    core::nanos now = 0;
    std::uint64_t waiter = 0;
    std::uint64_t handle = 0;
    std::uint64_t lease = 0;
    friend bool operator==(const delta_base&, const delta_base&) = default;
};

// The most bytes an event record takes (an acquire with every option), and an effect
// record (a grant).
inline constexpr std::size_t max_event_bytes = 1 + 1 + 5 + 10 + 10 + 10 + 10 + 5 + 10;
inline constexpr std::size_t max_effect_bytes = 1 + 10 + 3 + 10;
[[nodiscard]] constexpr std::size_t max_step_bytes(std::size_t effects) noexcept {
    return max_event_bytes + effects * max_effect_bytes;
}

// Encoding: each writes at `out`, returns the end of what it wrote, and moves `base` on.
// A step is its event record (with the count of effects that follow and its error),
// then that many effect records.
unsigned char* put_event(unsigned char* out, delta_base& base, const core::event& e, std::uint32_t effect_count,
                         core::event_error error) noexcept;
unsigned char* put_effect(unsigned char* out, delta_base& base, const core::effect& f) noexcept;
unsigned char* put_step(unsigned char* out, delta_base& base, const core::event& e,
                        std::span<const core::effect> effects, core::event_error error) noexcept;
// A block whose payload (`payload_bytes` of records, `steps` whole steps) is already at
// block + block_header_bytes: writes its header in front of it, the CRC included, and
// returns the block's end.
unsigned char* seal_block(unsigned char* block, std::size_t payload_bytes, std::uint32_t steps) noexcept;
// A gap block: `events` lost after the last step (the last block of a file).
unsigned char* put_gap(unsigned char* out, std::uint64_t events) noexcept;
// The header: magic, version, size, config line, segment, snapshot, CRC.
[[nodiscard]] std::string header_bytes(const core::config& c, const std::optional<segment_info>& segment,
                                       std::span<const core::snapshot_record> snapshot);
// The same from `records` snapshot records already encoded by put_snapshot_record.
[[nodiscard]] std::string header_bytes(const core::config& c, const std::optional<segment_info>& segment,
                                       std::uint32_t records, std::span<const unsigned char> encoded);
inline constexpr std::size_t max_snapshot_record_bytes = 1 + 4 + 1 + 7 * 8 + 2 + 8;  // a slot's
unsigned char* put_snapshot_record(unsigned char* out, const core::snapshot_record& r) noexcept;

// Records this encoder wrote, read back without checks (the flight recorder's ring,
// which only its actor writes): their sizes (inline: the writer finds each step's), and
// what they hold.
namespace sizes {
// The varints after an event record's head, its optional error byte and its effect
// count, by kind (start acquire cancel deregister release spawned spawn_failed retired
// died tick shutdown checked reset_done resize): the time, then the kind's fields
// (an acquire's options add one each); after an effect record's head, by kind (grant
// reject spawn retire leak_suspected closed check reset).
inline constexpr std::uint8_t event_varints[16] = {1, 3, 2, 2, 3, 2, 2, 2, 2, 1, 1, 2, 2, 3, 1, 1};
inline constexpr std::uint8_t acquire_options[8] = {0, 1, 1, 2, 1, 2, 2, 3};  // by flags
inline constexpr std::uint8_t effect_varints[8] = {3, 1, 1, 1, 2, 0, 1, 1};
inline constexpr std::uint8_t has_error = 0x80;  // in an event record's head
// The end of `n` varints from `p`.
[[nodiscard]] inline const unsigned char* skip(const unsigned char* p, unsigned n) noexcept {
    for (; n > 0; --n)
        while (*p++ & 0x80U) {
        }
    return p;
}
}  // namespace sizes
// The event record and its effects: their bytes.
[[nodiscard]] inline std::size_t step_bytes(const unsigned char* event) noexcept {
    const unsigned head = event[0];
    const unsigned kind = head & 15U;
    const unsigned char* p = event + 1 + ((head & sizes::has_error) ? 1 : 0);
    std::uint32_t effects = 0;
    for (int shift = 0;; shift += 7) {  // the effect count
        effects |= std::uint32_t{*p & 0x7FU} << shift;
        if ((*p++ & 0x80U) == 0) break;
    }
    p = sizes::skip(p, sizes::event_varints[kind] + (kind == 1 ? sizes::acquire_options[(head >> 4) & 7U] : 0U));
    for (; effects > 0; --effects) p = sizes::skip(p + 1, sizes::effect_varints[*p & 7U]);
    return static_cast<std::size_t>(p - event);
}
[[nodiscard]] std::size_t snapshot_record_bytes(const unsigned char* record) noexcept;
// The step at `step` (step_bytes long): its event, error and effects (into `effects`),
// `base` moved on past it.
void decode_step(const unsigned char* step, delta_base& base, core::event& e, core::event_error& error,
                 std::vector<core::effect>& effects);
[[nodiscard]] core::snapshot_record decode_snapshot_record(const unsigned char* record);

// The whole trace in v3, canonically (canonical_block_steps steps a block).
[[nodiscard]] std::string encode(const trace& t);

// ---- Decoding ---------------------------------------------------------------------

[[nodiscard]] bool is_binary(std::string_view bytes) noexcept;  // starts with the magic (or a prefix of it)

struct header {
    core::config config;
    std::optional<segment_info> segment;  // line: the segment field's byte offset
    std::vector<snapshot_line> snapshot;  // line: each record's byte offset
    std::size_t config_offset = 0;
    std::size_t size = 0;  // bytes
};

struct decoded_step {
    core::event event;
    core::event_error error = core::event_error::ok;
    std::span<const core::effect> effects;  // valid until the next step
    std::size_t offset = 0;                 // of its event record
};

// Reads one v3 file held in memory (which must outlive it): read_header() first, then
// next() until it returns nullptr; then error() says why if the file did not end well,
// gap() holds its gap block, cut() where a torn tail was cut. `last_input`: the file
// may end in a torn tail (section 7.3: the last file of a recording whose process died
// while writing), which is cut at the last whole block instead of refused.
class cursor {
public:
    cursor(std::string_view bytes, bool last_input) noexcept : bytes_(bytes), last_input_(last_input) {}

    [[nodiscard]] std::variant<header, read_error> read_header();
    [[nodiscard]] const decoded_step* next();

    [[nodiscard]] const std::optional<read_error>& error() const noexcept { return error_; }
    [[nodiscard]] const std::optional<gap_info>& gap() const noexcept { return gap_; }
    [[nodiscard]] std::optional<std::size_t> cut() const noexcept { return cut_; }
    [[nodiscard]] std::uint64_t steps_read() const noexcept { return steps_read_; }

private:
    bool enter_block();
    const decoded_step* fail(std::size_t offset, std::string message);

    std::string_view bytes_;
    bool last_input_;
    std::size_t at_ = 0;          // the next byte to read
    std::size_t block_end_ = 0;   // of the current block's payload
    std::uint32_t block_steps_left_ = 0;
    bool in_block_ = false;
    bool done_ = false;
    std::uint64_t steps_read_ = 0;
    delta_base base_;
    decoded_step step_;
    std::vector<core::effect> effects_;
    std::optional<read_error> error_;
    std::optional<gap_info> gap_;
    std::optional<std::size_t> cut_;
};

// A whole v3 file as a trace (version 3; every `line` a byte offset), or the first
// problem. `cut`: set to the offset of a torn tail that was cut (last_input only).
[[nodiscard]] read_result read(std::string_view bytes, bool last_input, std::optional<std::size_t>* cut = nullptr);

}  // namespace fairpool::trace::v3
