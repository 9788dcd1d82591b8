// Trace format v3, binary (docs/CONTRACT.md section 7.3; fairpool/trace/binary.hpp):
// CRC-32C against its published vectors (by instruction and by table); every golden
// trace through v3 and back gives the same canonical v2 text, and the canonical v3
// encoding is a fixed point; every record is the bytes section 7.3 names, its numbers
// LEB128 varints and its times and ids zigzag deltas from the step before, from zero at
// each file's start (negative deltas too); random steps round trip, through a file and
// through step_bytes and decode_step from any base (RapidCheck); and every kind of
// damage is refused with its exact message at its exact byte offset: every flipped
// bit and byte of a file, every truncation (with and without a torn tail allowed), bad
// checksums, other versions, and hand-built records that do not decode.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/scheduler.hpp"
#include "fairpool/core/snapshot.hpp"
#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/crc32c.hpp"
#include "fairpool/trace/format.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::trace::v3 {
// For gtest's messages.
void PrintTo(const delta_base& b, std::ostream* out) {
    *out << "{now " << b.now << ", waiter " << b.waiter << ", handle " << b.handle << ", lease " << b.lease << "}";
}
}  // namespace fairpool::trace::v3

namespace fairpool::trace {
namespace {

namespace fs = std::filesystem;
using core::effect;
using core::event;
using core::event_error;

// ---- Helpers ---------------------------------------------------------------------------

std::string file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path golden_dir() { return FAIRPOOL_GOLDEN_DIR; }

std::vector<fs::path> golden_traces() {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(golden_dir()))
        if (entry.is_regular_file() && entry.path().extension() == ".trace") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

trace parsed(const read_result& r, const std::string& what) {
    if (const auto* e = std::get_if<read_error>(&r)) {
        ADD_FAILURE() << what << ": unexpected read error " << e->describe("<input>");
        return {};
    }
    return std::get<trace>(r);
}

// The canonical v2 text of `t` (whatever version it was read as).
std::string v2_text(trace t) {
    t.version = 2;
    std::ostringstream out;
    write(out, t);
    return out.str();
}

// "OFFSET: message" for an error; for a trace "steps=N gap=G cut=C".
std::string summary(const read_result& r, const std::optional<std::size_t>& cut) {
    if (const auto* e = std::get_if<read_error>(&r)) {
        std::string s = std::to_string(e->line) + ": " + e->message;
        if (!e->binary) s += " (not marked binary)";
        if (cut) s += " cut=" + std::to_string(*cut);
        return s;
    }
    const trace& t = std::get<trace>(r);
    return "steps=" + std::to_string(t.steps.size()) + " gap=" + (t.gap ? std::to_string(t.gap->events) : "none") +
           " cut=" + (cut ? std::to_string(*cut) : "none");
}

std::string read_summary(std::string_view bytes, bool last_input) {
    std::optional<std::size_t> cut;
    const read_result r = v3::read(bytes, last_input, &cut);
    return summary(r, cut);
}

std::string ok_summary(std::size_t steps, std::optional<std::uint64_t> gap, std::optional<std::size_t> cut) {
    return "steps=" + std::to_string(steps) + " gap=" + (gap ? std::to_string(*gap) : "none") +
           " cut=" + (cut ? std::to_string(*cut) : "none");
}

std::string hex32(std::uint32_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
    return s;
}

std::uint32_t get32(std::string_view s, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
    return v;
}
void set32(std::string& s, std::size_t at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t crc_of(std::string_view s, std::size_t at, std::size_t n, std::uint32_t crc = 0) {
    return crc32c(s.data() + at, n, crc);
}

// Little-endian bytes, field by field, for records built by hand.
struct bytes {
    std::string b;
    bytes& u8(std::uint8_t v) { return b += static_cast<char>(v), *this; }
    bytes& u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
        return *this;
    }
    bytes& u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
        return *this;
    }
    bytes& raw(std::string_view s) { return b += s, *this; }
    // An unsigned LEB128 varint, in its fewest bytes.
    bytes& var(std::uint64_t v) {
        for (; v >= 0x80; v >>= 7) u8(static_cast<std::uint8_t>(v | 0x80));
        return u8(static_cast<std::uint8_t>(v));
    }
    // A zigzag varint of the (wrapping) difference d.
    bytes& zz(std::int64_t d) {
        const auto u = static_cast<std::uint64_t>(d);
        return var((u << 1) ^ (0 - (u >> 63)));
    }
    // An event record's head byte (kind | flags << 4 | 0x80 with an error), its error
    // byte, its effect count and its time (as a delta from the one before: 5 from a
    // file's start).
    bytes& event(std::uint8_t kind, std::uint64_t effects = 0, std::uint8_t flags = 0,
                 std::optional<std::uint8_t> error = std::nullopt, std::int64_t now = 5) {
        u8(static_cast<std::uint8_t>(kind | flags << 4 | (error ? 0x80 : 0)));
        if (error) u8(*error);
        return var(effects).zz(now);
    }
    bytes& tick() { return event(9); }  // 3 bytes: 09 00 0a
    // An effect record's head byte.
    bytes& effect(std::uint8_t kind, std::uint8_t reason = 0) { return u8(static_cast<std::uint8_t>(kind | reason << 3)); }
};

// A block, its CRC computed here (so a record that does not decode is what's reported).
std::string block(std::uint8_t kind, std::string_view payload, std::uint32_t steps,
                  std::array<std::uint8_t, 3> pad = {0, 0, 0}) {
    bytes h;
    h.u8(kind).u8(pad[0]).u8(pad[1]).u8(pad[2]).u32(static_cast<std::uint32_t>(payload.size())).u32(steps);
    const std::uint32_t crc = crc32c(payload.data(), payload.size(), crc32c(h.b.data(), 12));
    h.u32(crc).raw(payload);
    return h.b;
}
std::string steps_block(std::string_view payload, std::uint32_t steps = 1) { return block(1, payload, steps); }
std::string gap_block(std::uint64_t events) { return block(2, bytes{}.u64(events).b, 0); }

// A header built by hand: magic, version, size, the config line, `rest` (segment,
// snapshot count and records), the CRC.
std::string header_by_hand(std::string_view config_line, std::string_view rest, std::uint32_t version = 3) {
    bytes h;
    h.raw(v3::magic).u32(version).u32(0).u32(static_cast<std::uint32_t>(config_line.size())).raw(config_line).raw(rest);
    set32(h.b, 12, static_cast<std::uint32_t>(h.b.size() + 4));
    const std::uint32_t crc = crc32c(h.b.data(), h.b.size());
    return h.u32(crc).b;
}
// No segment, no snapshot.
std::string no_segment_no_snapshot() { return bytes{}.u8(0).u64(0).u64(0).u32(0).b; }

const std::string default_config_line = format_canonical(core::config{});
std::string plain_header() { return v3::header_bytes(core::config{}, std::nullopt, {}); }

// The blocks of a well-formed file, walked by their headers.
struct block_info {
    std::size_t offset = 0;
    std::uint8_t kind = 0;
    std::uint32_t size = 0;
    std::uint32_t steps = 0;
    [[nodiscard]] std::size_t end() const { return offset + v3::block_header_bytes + size; }
};
struct file_layout {
    std::size_t header = 0;
    std::vector<block_info> blocks;
};
file_layout layout_of(std::string_view file) {
    file_layout l;
    l.header = get32(file, 12);
    for (std::size_t at = l.header; at < file.size();) {
        block_info b{at, static_cast<std::uint8_t>(file[at]), get32(file, at + 4), get32(file, at + 8)};
        l.blocks.push_back(b);
        at = b.end();
    }
    return l;
}

// A block of these steps, encoded with the encoder's own pieces: the deltas from
// `base` (a file's blocks share one base, zero at its start), moved on past them.
std::string block_of(std::span<const step> steps, v3::delta_base& base) {
    std::size_t bound = v3::block_header_bytes;
    for (const step& s : steps) bound += v3::max_step_bytes(s.effects.size());
    std::vector<unsigned char> buf(bound);
    unsigned char* p = buf.data() + v3::block_header_bytes;
    std::vector<effect> effects;
    for (const step& s : steps) {
        effects.clear();
        for (const recorded_effect& f : s.effects) effects.push_back(f.effect);
        p = v3::put_step(p, base, s.event, effects, s.error.value_or(event_error::ok));
    }
    const auto payload = static_cast<std::size_t>(p - buf.data()) - v3::block_header_bytes;
    const unsigned char* end = v3::seal_block(buf.data(), payload, static_cast<std::uint32_t>(steps.size()));
    return {reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(end - buf.data())};
}

// The steps in blocks of these sizes, encoded as one file's blocks are: one base
// across them, zero at the first.
std::string blocks_of(std::span<const step> steps, std::initializer_list<std::size_t> sizes) {
    v3::delta_base base;
    std::string out;
    std::size_t first = 0;
    for (const std::size_t n : sizes) {
        out += block_of(steps.subspan(first, n), base);
        first += n;
    }
    return out;
}

// One step's records as put_step writes them from `base` (moved on past them).
std::string step_of(v3::delta_base& base, const event& e, std::vector<effect> effects = {},
                    event_error error = event_error::ok) {
    std::vector<unsigned char> buf(v3::max_step_bytes(effects.size()));
    const unsigned char* end = v3::put_step(buf.data(), base, e, effects, error);
    return {reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(end - buf.data())};
}

std::vector<core::snapshot_record> records_of(const trace& t) {
    std::vector<core::snapshot_record> out;
    for (const snapshot_line& l : t.snapshot) out.push_back(l.record);
    return out;
}

// ---- CRC-32C -----------------------------------------------------------------------------

using crc_function = std::uint32_t (*)(const void*, std::size_t, std::uint32_t) noexcept;
const std::array<std::pair<const char*, crc_function>, 2> crc_functions = {{
    {"crc32c", &crc32c},
    {"crc32c_by_table", &crc32c_by_table},
}};

std::vector<unsigned char> filled(std::size_t n, auto value_of) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(value_of(i));
    return v;
}

TEST(crc32c, published_vectors) {
    const std::string digits = "123456789";
    const auto zeros = filled(32, [](std::size_t) { return 0; });
    const auto ones = filled(32, [](std::size_t) { return 0xff; });
    const auto ascending = filled(32, [](std::size_t i) { return i; });
    const auto descending = filled(32, [](std::size_t i) { return 31 - i; });
    for (const auto& [name, f] : crc_functions) {
        SCOPED_TRACE(name);
        EXPECT_EQ(f(digits.data(), digits.size(), 0), 0xE3069283U);
        EXPECT_EQ(f(zeros.data(), zeros.size(), 0), 0x8A9136AAU);
        EXPECT_EQ(f(ones.data(), ones.size(), 0), 0x62A8AB43U);
        EXPECT_EQ(f(ascending.data(), ascending.size(), 0), 0x46DD794EU);
        EXPECT_EQ(f(descending.data(), descending.size(), 0), 0x113FDB5CU);
        EXPECT_EQ(f(digits.data(), 0, 0), 0U);  // nothing: the initial value, finished
    }
}

// crc(a + b) == crc(b, crc(a)), for both ways of computing it, at split points on and
// off the instruction's 8-byte words; and at every length and alignment the
// instruction and the table agree.
TEST(crc32c, chaining_at_odd_split_points_gives_the_crc_of_the_whole) {
    const auto data = filled(203, [](std::size_t i) { return (i * 131 + 7) ^ (i >> 3); });
    for (const auto& [name, f] : crc_functions) {
        SCOPED_TRACE(name);
        const std::uint32_t whole = f(data.data(), data.size(), 0);
        EXPECT_EQ(whole, crc32c(data.data(), data.size()));
        for (const std::size_t split : {1, 3, 5, 7, 9, 13, 15, 17, 63, 101, 202}) {
            SCOPED_TRACE(split);
            EXPECT_EQ(f(data.data() + split, data.size() - split, f(data.data(), split, 0)), whole);
        }
        // three pieces
        EXPECT_EQ(f(data.data() + 20, data.size() - 20, f(data.data() + 7, 13, f(data.data(), 7, 0))), whole);
        const std::string digits = "123456789";
        EXPECT_EQ(f(digits.data() + 4, 5, f(digits.data(), 4, 0)), 0xE3069283U);
    }
}

TEST(crc32c, instruction_and_table_agree_at_every_length_and_alignment) {
    const auto data = filled(80, [](std::size_t i) { return i * 37 + 11; });
    for (std::size_t offset = 0; offset < 8; ++offset)
        for (std::size_t n = 0; offset + n <= data.size(); ++n)
            ASSERT_EQ(crc32c(data.data() + offset, n), crc32c_by_table(data.data() + offset, n))
                << "offset " << offset << ", " << n << " bytes";
}

// ---- Round trips -------------------------------------------------------------------------

TEST(trace_v3, every_golden_trace_round_trips_through_v3_to_its_canonical_v2_text) {
    const auto files = golden_traces();
    ASSERT_GE(files.size(), 40u) << "too few golden traces in " << golden_dir();
    for (const fs::path& file : files) {
        SCOPED_TRACE(file.filename().string());
        const trace original = parsed(read(file_bytes(file)), "the golden trace");
        const std::string canonical = v2_text(original);
        const std::string encoded = v3::encode(original);
        ASSERT_TRUE(v3::is_binary(encoded));

        const read_result back = read(encoded);  // trace::read dispatches on the magic
        const trace decoded = parsed(back, "its v3 encoding");
        EXPECT_EQ(decoded.version, 3);
        EXPECT_EQ(v2_text(decoded), canonical);

        // canonical v3 -> text -> v3: the same bytes
        const trace from_canonical = parsed(read(canonical), "its canonical text");
        EXPECT_EQ(v3::encode(from_canonical), encoded);
        EXPECT_EQ(v3::encode(decoded), encoded);

        // As a stream, and as the last input of a recording: the same trace.
        std::istringstream in(encoded);
        EXPECT_EQ(v2_text(parsed(read(in), "the stream")), canonical);
        std::optional<std::size_t> cut;
        EXPECT_EQ(v2_text(parsed(v3::read(encoded, true, &cut), "as the last input")), canonical);
        EXPECT_FALSE(cut);

        // Every position is a byte offset: each step's at its event record (whose head
        // byte holds its kind in bits 0-3, bit 7 set when an error byte follows),
        // increasing, inside the file; its effects and error there too.
        std::size_t previous = 0;
        for (const step& s : decoded.steps) {
            ASSERT_LT(s.line, encoded.size());
            EXPECT_GT(s.line, previous);
            previous = s.line;
            const auto head = static_cast<unsigned char>(encoded[s.line]);
            EXPECT_EQ(head & 15U, static_cast<unsigned>(s.event.kind));
            EXPECT_EQ((head & 0x80U) != 0, s.error.has_value());
            for (const recorded_effect& f : s.effects) EXPECT_EQ(f.line, s.line);
            if (s.error) {
                EXPECT_EQ(s.error_line, s.line);
            }
        }
        EXPECT_EQ(decoded.config_line, 20u);
    }
}

TEST(trace_v3, the_contract_snapshot_example_decodes_with_its_segment_snapshot_and_gap_at_their_offsets) {
    const trace original = parsed(read(file_bytes(golden_dir() / "contract_snapshot_example.trace")), "golden");
    const std::string encoded = v3::encode(original);
    const file_layout l = layout_of(encoded);
    ASSERT_EQ(l.blocks.size(), 2u);
    EXPECT_EQ(l.blocks[0].kind, 1);
    EXPECT_EQ(l.blocks[0].steps, 1u);
    EXPECT_EQ(l.blocks[1].kind, 2);
    EXPECT_EQ(l.blocks[1].size, 8u);
    EXPECT_EQ(l.blocks[1].end(), encoded.size());

    const trace t = parsed(v3::read(encoded, false), "v3");
    const std::size_t config_size = get32(encoded, 16);
    EXPECT_EQ(encoded.substr(20, config_size), format_canonical(original.config));
    ASSERT_TRUE(t.segment);
    EXPECT_EQ(t.segment->number, 3u);
    EXPECT_EQ(t.segment->events_before, 300000u);
    EXPECT_EQ(t.segment->line, 20 + config_size);
    ASSERT_EQ(t.snapshot.size(), original.snapshot.size());
    EXPECT_EQ(t.snapshot.front().line, 20 + config_size + 17 + 4);
    for (std::size_t i = 0; i < t.snapshot.size(); ++i) {
        EXPECT_TRUE(t.snapshot[i].record == original.snapshot[i].record) << i;
        if (i > 0) {
            EXPECT_GT(t.snapshot[i].line, t.snapshot[i - 1].line);
        }
        EXPECT_LT(t.snapshot[i].line, l.header - 4);
    }
    ASSERT_EQ(t.steps.size(), 1u);
    EXPECT_EQ(t.steps[0].line, l.header + 16);
    ASSERT_TRUE(t.gap);
    EXPECT_EQ(t.gap->events, 1742u);
    EXPECT_EQ(t.gap->line, l.blocks[1].offset);
}

TEST(trace_v3, a_long_trace_is_split_into_blocks_of_4096_steps) {
    trace t;
    t.version = 2;
    for (std::uint64_t i = 0; i < 10000; ++i) {
        step s;
        const auto slot = static_cast<std::uint32_t>(i % 65536);
        s.event = i % 3 == 0 ? event::acquire(i, i, i % 7, i + 100) : event::release(i, slot, i);
        if (i % 5 == 0) s.effects.push_back({effect::grant(i, slot, i), 0});
        if (i % 11 == 0) s.error = event_error::stale_lease;
        t.steps.push_back(s);
    }
    t.gap = gap_info{3, 0};
    const std::string encoded = v3::encode(t);
    const file_layout l = layout_of(encoded);
    ASSERT_EQ(l.blocks.size(), 4u);
    EXPECT_EQ(l.blocks[0].steps, 4096u);
    EXPECT_EQ(l.blocks[1].steps, 4096u);
    EXPECT_EQ(l.blocks[2].steps, 10000u - 2 * 4096);
    EXPECT_EQ(l.blocks[3].kind, 2);
    const trace back = parsed(v3::read(encoded, false), "v3");
    EXPECT_EQ(v2_text(back), v2_text(t));
    EXPECT_EQ(back.steps[4096].line, l.blocks[1].offset + 16);
}

TEST(trace_v3, an_empty_trace_is_its_header_alone) {
    trace t;
    const std::string encoded = v3::encode(t);
    EXPECT_EQ(encoded, plain_header());
    EXPECT_EQ(read_summary(encoded, false), ok_summary(0, {}, {}));
    EXPECT_EQ(read_summary(encoded, true), ok_summary(0, {}, {}));
}

// Blocks of any number of steps (as the flight recorder writes them) read as the same
// trace as the canonical encoding; re-encoding gives the canonical bytes.
TEST(trace_v3, blocks_of_any_size_read_as_the_same_trace) {
    const trace original = parsed(read(file_bytes(golden_dir() / "contract_example.trace")), "golden");
    ASSERT_EQ(original.steps.size(), 8u);
    const std::span<const step> steps(original.steps);
    const std::string head = v3::header_bytes(original.config, std::nullopt, {});
    const std::string file = head + blocks_of(steps, {1, 3, 4});
    const trace back = parsed(v3::read(file, false), "blocks of 1, 3 and 4 steps");
    EXPECT_EQ(v2_text(back), v2_text(original));
    EXPECT_EQ(v3::encode(back), v3::encode(original));
    EXPECT_NE(v3::encode(back), file);
    // The bytes of the steps are the same however they are cut into blocks: the deltas
    // run on from one block to the next (a file is decoded from its start).
    const auto payloads = [](std::string_view f) {
        std::string out;
        for (const block_info& b : layout_of(f).blocks) out += f.substr(b.offset + 16, b.size);
        return out;
    };
    EXPECT_EQ(payloads(file), payloads(v3::encode(original)));
    // So blocks each encoded from a zero base are another trace: its times run from the
    // start of every block again.
    std::string restarted = head;
    for (const auto& [first, n] : {std::pair<std::size_t, std::size_t>{0, 1}, {1, 3}, {4, 4}}) {
        v3::delta_base zero;
        restarted += block_of(steps.subspan(first, n), zero);
    }
    const trace other = parsed(v3::read(restarted, false), "blocks from a zero base each");
    ASSERT_EQ(other.steps.size(), 8u);
    // (the tick @1000 opens the third block: its 1000 is taken from the @30 before it)
    EXPECT_EQ(original.steps[4].event.now, 1000u);
    EXPECT_EQ(other.steps[4].event.now, 1030u);
    EXPECT_NE(v2_text(other), v2_text(original));
}

// The flight recorder sizes its buffers with max_step_bytes: the biggest records fit,
// exactly. A delta of -2^63 is the longest zigzag varint (2^64-1: 10 bytes), so each of
// an acquire's times and ids is 2^63 away from the one before.
TEST(trace_v3, the_largest_records_fit_their_bounds) {
    constexpr std::uint64_t half = std::uint64_t{1} << 63;
    std::array<unsigned char, v3::max_event_bytes + 8> buf{};
    // now, waiter and handle 2^63 from zero; the deadline 2^63-1 after now (2^64-2:
    // 10 bytes too); weight 2^32-1 (5 bytes), max_leases 2^64-1 (10); an error byte;
    // an effect count of 2^32-1 (5 bytes).
    const event biggest = event::acquire(half, half, half, UINT64_MAX, UINT32_MAX, UINT64_MAX);
    v3::delta_base base;
    EXPECT_EQ(v3::put_event(buf.data(), base, biggest, UINT32_MAX, event_error::not_resetting) - buf.data(),
              static_cast<std::ptrdiff_t>(v3::max_event_bytes));
    EXPECT_EQ(base, (v3::delta_base{half, half, half, 0}));
    // A grant: its waiter 2^63 back, its lease 2^63 on, slot 65535 (3 bytes).
    EXPECT_EQ(v3::put_effect(buf.data(), base, effect::grant(0, 65535, half)) - buf.data(),
              static_cast<std::ptrdiff_t>(v3::max_effect_bytes));
    EXPECT_EQ(base, (v3::delta_base{half, 0, half, half}));
    EXPECT_EQ(v3::put_gap(buf.data(), 7) - buf.data(), static_cast<std::ptrdiff_t>(v3::gap_block_bytes));

    // The same event with no effects: step_bytes finds its end and it decodes.
    v3::delta_base encoder;
    const std::string record = step_of(encoder, biggest, {}, event_error::not_resetting);
    EXPECT_EQ(record.size(), v3::max_event_bytes - 4);  // an effect count of 0: one byte
    EXPECT_EQ(v3::step_bytes(reinterpret_cast<const unsigned char*>(record.data())), record.size());
    v3::delta_base decoder;
    event e;
    event_error error = event_error::ok;
    std::vector<effect> effects{effect::closed()};
    v3::decode_step(reinterpret_cast<const unsigned char*>(record.data()), decoder, e, error, effects);
    EXPECT_TRUE(e == biggest);
    EXPECT_EQ(error, event_error::not_resetting);
    EXPECT_TRUE(effects.empty());
    EXPECT_EQ(decoder, encoder);
}

// Section 7.3 field by field: what the encoder writes for every kind of event and
// effect, from a file's start, each delta from the step before (times going back and
// ids going down as well as up), is these bytes, and they read back as those steps.
TEST(trace_v3, the_encoder_writes_every_record_field_by_field) {
    using core::event_kind;
    using core::reject_reason;
    using core::retire_reason;
    struct case_ {
        event e;
        std::vector<effect> effects;
        event_error error;
        std::string expected;
        v3::delta_base after;
    };
    const std::vector<case_> cases = {
        {event::start(0), {}, event_error::ok, bytes{}.u8(0x00).var(0).zz(0).b, {0, 0, 0, 0}},
        // An acquire with every option (flags 7), granted: head 0x71; the deadline from
        // its own time (980), not from the time before.
        {event::acquire(20, 1, 7, 1000, 3, 4),
         {effect::grant(1, 0, 1)},
         event_error::ok,
         bytes{}.u8(0x71).var(1).zz(20).zz(1).zz(7).zz(980).var(3).var(4).effect(0).zz(0).var(0).zz(1).b,
         {20, 1, 7, 1}},
        // Options one at a time: deadline (1), weight (2), max_leases (4); a deadline
        // before the event's time is a negative delta; max_leases 0 is written.
        {event::acquire(30, 2, 8, 25), {}, event_error::ok, bytes{}.u8(0x11).var(0).zz(10).zz(1).zz(1).zz(-5).b, {30, 2, 8, 1}},
        {event::acquire(30, 3, 8, std::nullopt, 65535), {}, event_error::ok,
         bytes{}.u8(0x21).var(0).zz(0).zz(1).zz(0).var(65535).b, {30, 3, 8, 1}},
        {event::acquire(30, 4, 8, std::nullopt, std::nullopt, 0), {}, event_error::ok,
         bytes{}.u8(0x41).var(0).zz(0).zz(1).zz(0).var(0).b, {30, 4, 8, 1}},
        {event::acquire(30, 5, 8), {}, event_error::ok, bytes{}.u8(0x01).var(0).zz(0).zz(1).zz(0).b, {30, 5, 8, 1}},
        // Time going back (30 -> 15) and a waiter id going down (5 -> 0): a cancel, its
        // reject (reason cancelled = 2, head 0x11) with the waiter it cancelled.
        {event::cancel(15, 0),
         {effect::reject(0, reject_reason::cancelled)},
         event_error::ok,
         bytes{}.u8(0x02).var(1).zz(-15).zz(-5).effect(1, 2).zz(0).b,
         {15, 0, 8, 1}},
        // An error byte (head bit 7) and a handle going down.
        {event::deregister(15, 3), {}, event_error::duplicate_waiter, bytes{}.u8(0x83).u8(7).var(0).zz(0).zz(-5).b,
         {15, 0, 3, 1}},
        // A dirty release (flag 1) of slot 300 (a two-byte varint), lease 1 -> 0; a retire
        // (reason dirty = 0) and a leak_suspected whose lease follows the release's.
        {event::release(100, 300, 0, core::release_outcome::dirty),
         {effect::retire(300, retire_reason::dirty), effect::leak_suspected(2, 9)},
         event_error::ok,
         bytes{}.u8(0x14).var(2).zz(85).var(300).zz(-1).effect(3, 0).var(300).effect(4).var(2).zz(9).b,
         {100, 0, 3, 9}},
        {event::release(100, 65535, 9), {}, event_error::stale_lease, bytes{}.u8(0x84).u8(8).var(0).zz(0).var(65535).zz(0).b,
         {100, 0, 3, 9}},
        // A resize: plain varints, no delta (the waiter and handle bases stay).
        {event::resize(101, 65536, 0), {}, event_error::ok, bytes{}.u8(0x0d).var(0).zz(1).var(65536).var(0).b, {101, 0, 3, 9}},
        {event::spawned(101, 0), {effect::check(0)}, event_error::ok, bytes{}.u8(0x05).var(1).zz(0).var(0).effect(6).var(0).b,
         {101, 0, 3, 9}},
        {event::spawn_failed(102, 1), {effect::spawn(1)}, event_error::ok,
         bytes{}.u8(0x06).var(1).zz(1).var(1).effect(2).var(1).b, {102, 0, 3, 9}},
        {event::retired(103, 127), {}, event_error::ok, bytes{}.u8(0x07).var(0).zz(1).var(127).b, {103, 0, 3, 9}},
        {event::died(104, 128), {effect::retire(128, retire_reason::resize)}, event_error::ok,
         bytes{}.u8(0x08).var(1).zz(1).var(128).effect(3, 7).var(128).b, {104, 0, 3, 9}},
        {event::checked(104, 5, core::check_outcome::dead), {effect::reset(5)}, event_error::ok,
         bytes{}.u8(0x1b).var(1).zz(0).var(5).effect(7).var(5).b, {104, 0, 3, 9}},
        {event::checked(104, 5, core::check_outcome::alive), {}, event_error::not_checking,
         bytes{}.u8(0x8b).u8(12).var(0).zz(0).var(5).b, {104, 0, 3, 9}},
        {event::reset_done(105, 6, core::reset_outcome::failed), {}, event_error::ok, bytes{}.u8(0x1c).var(0).zz(1).var(6).b,
         {105, 0, 3, 9}},
        {event::reset_done(105, 6, core::reset_outcome::ok), {}, event_error::ok, bytes{}.u8(0x0c).var(0).zz(0).var(6).b,
         {105, 0, 3, 9}},
        // A grant's waiter and lease follow the ids before them (0 -> 2, 9 -> 10).
        {event::tick(1105), {effect::grant(2, 1, 10)}, event_error::ok,
         bytes{}.u8(0x09).var(1).zz(1000).effect(0).zz(2).var(1).zz(1).b, {1105, 2, 3, 10}},
        {event::of(event_kind::shutdown, 1105), {effect::reject(2, reject_reason::closed), effect::closed()}, event_error::ok,
         bytes{}.u8(0x0a).var(2).zz(0).effect(1, 4).zz(0).effect(5).b, {1105, 2, 3, 10}},
        // The far ends: time from 1105 to 0 and on to 2^64-1 (a delta of -1: one byte).
        {event::tick(0), {}, event_error::ok, bytes{}.u8(0x09).var(0).zz(-1105).b, {0, 2, 3, 10}},
        {event::tick(UINT64_MAX), {}, event_error::ok, bytes{}.u8(0x09).var(0).zz(-1).b, {UINT64_MAX, 2, 3, 10}},
        {event::cancel(UINT64_MAX, UINT64_MAX), {}, event_error::ok, bytes{}.u8(0x02).var(0).zz(0).zz(-3).b,
         {UINT64_MAX, UINT64_MAX, 3, 10}},
        {event::cancel(0, 0), {}, event_error::ok, bytes{}.u8(0x02).var(0).zz(1).zz(1).b, {0, 0, 3, 10}},
    };
    v3::delta_base base;
    trace t;
    t.version = 2;
    std::string payload;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const case_& c = cases[i];
        SCOPED_TRACE("case " + std::to_string(i) + ": " + core::to_string(c.e.kind));
        const v3::delta_base before = base;
        const std::string got = step_of(base, c.e, c.effects, c.error);
        EXPECT_EQ(testing::PrintToString(got), testing::PrintToString(c.expected));
        EXPECT_EQ(base, c.after);
        EXPECT_EQ(v3::step_bytes(reinterpret_cast<const unsigned char*>(got.data())), got.size());
        // decode_step from the base before: the step, and the same base after.
        v3::delta_base decoder = before;
        event e;
        event_error error = event_error::ok;
        std::vector<effect> effects;
        v3::decode_step(reinterpret_cast<const unsigned char*>(c.expected.data()), decoder, e, error, effects);
        EXPECT_TRUE(e == c.e);
        EXPECT_EQ(error, c.error);
        EXPECT_TRUE(effects == c.effects);
        EXPECT_EQ(decoder, c.after);
        payload += c.expected;
        step& s = t.steps.emplace_back();
        s.event = c.e;
        for (const effect& f : c.effects) s.effects.push_back({f, 0});
        if (c.error != event_error::ok) s.error = c.error;
    }
    // The whole run as one block (the canonical encoding's) reads back as those steps.
    const std::string file = plain_header() + steps_block(payload, static_cast<std::uint32_t>(cases.size()));
    EXPECT_EQ(file, v3::encode(t));
    const trace back = parsed(v3::read(file, false), "the records by hand");
    EXPECT_EQ(v2_text(back), v2_text(t));
}

// The deltas start from zero in every file: the same steps encode to the same blocks
// whatever file they are in and whatever came before them in another file; in one
// file, the second run of the same steps is written from where the first ended.
TEST(trace_v3, deltas_start_from_zero_in_every_file) {
    trace first = parsed(read(file_bytes(golden_dir() / "contract_example.trace")), "golden");
    trace second = first;
    second.segment = segment_info{2, 8, 0};
    // Later times and ids (as a recording's next segment holds), after a first file:
    for (step& s : second.steps) {
        s.event.now += 5000;
        if (s.event.deadline) *s.event.deadline += 5000;
    }
    const std::string a = v3::encode(first), b = v3::encode(second);
    const std::string body_a = a.substr(layout_of(a).header);
    const std::string body_b = b.substr(layout_of(b).header);
    // ... only the first step's time delta differs: 0 -> 5000 (varint 10000: two bytes)
    EXPECT_EQ(body_b.size(), body_a.size() + 1);
    trace again = first;
    again.segment = segment_info{7, 123, 0};
    const std::string c = v3::encode(again);
    EXPECT_EQ(c.substr(layout_of(c).header), body_a);  // another header, the same blocks
    // The two files read one after the other (each its own cursor), and the steps of
    // the second are the second file's, not taken from the end of the first.
    EXPECT_EQ(v2_text(parsed(v3::read(b, false), "second")), v2_text(second));
    v3::cursor ca(a, false), cb(b, false);
    ASSERT_TRUE(std::holds_alternative<v3::header>(ca.read_header()));
    ASSERT_TRUE(std::holds_alternative<v3::header>(cb.read_header()));
    while (ca.next() != nullptr) {
    }
    ASSERT_FALSE(ca.error());
    const v3::decoded_step* s = cb.next();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->event.now, 5000u);

    // In one file the steps twice: the second run's bytes are not the first's (its
    // first time is a delta from the end of the first run, back to 0), and it reads.
    trace twice = first;
    twice.steps.insert(twice.steps.end(), first.steps.begin(), first.steps.end());
    const std::string d = v3::encode(twice);
    const trace back = parsed(v3::read(d, false), "the steps twice");
    EXPECT_EQ(v2_text(back), v2_text(twice));
    EXPECT_EQ(back.steps[8].event.now, 0u);
    ASSERT_FALSE(back.gap);
    const std::string run1 = d.substr(back.steps[0].line, back.steps[8].line - back.steps[0].line);
    const std::string run2 = d.substr(back.steps[8].line);
    EXPECT_NE(run2, run1);
    // @0 after @1300 is zigzag(-1300), two bytes where @0 from the file's start took one;
    // every other delta of the second run is as short as the first's.
    EXPECT_EQ(run2.size(), run1.size() + 1);
}

// Times going backwards and ids going down (what the core refuses, or what a trace
// of bad input holds) round-trip like any other: negative deltas, and the far ends of
// a u64 (wrapping differences).
TEST(trace_v3, times_going_backwards_and_ids_going_down_round_trip) {
    trace t;
    t.version = 2;
    const std::vector<std::uint64_t> values = {100, 50, 0, UINT64_MAX, 0, std::uint64_t{1} << 63, 1, UINT64_MAX - 1, 7, 7};
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint64_t v = values[i];
        const std::uint64_t w = values[values.size() - 1 - i];
        step& s = t.steps.emplace_back();
        switch (i % 4) {
            case 0: s.event = event::acquire(v, w, v, w); break;
            case 1: s.event = event::cancel(v, w); break;
            case 2: s.event = event::deregister(v, w); break;
            default: s.event = event::release(v, static_cast<std::uint32_t>(i), w); break;
        }
        s.effects.push_back({effect::grant(v, 0, w), 0});
        s.effects.push_back({effect::reject(w, core::reject_reason::timeout), 0});
        s.effects.push_back({effect::leak_suspected(1, v), 0});
    }
    const std::string encoded = v3::encode(t);
    const trace back = parsed(v3::read(encoded, false), "backwards");
    ASSERT_EQ(back.steps.size(), t.steps.size());
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_TRUE(back.steps[i].event == t.steps[i].event);
        ASSERT_EQ(back.steps[i].effects.size(), 3u);
        for (std::size_t k = 0; k < 3; ++k) EXPECT_TRUE(back.steps[i].effects[k].effect == t.steps[i].effects[k].effect);
    }
    EXPECT_EQ(v2_text(back), v2_text(t));
    // A step back by one is one byte, as a step forward by one is.
    v3::delta_base base{10, 10, 10, 10};
    EXPECT_EQ(testing::PrintToString(step_of(base, event::cancel(9, 9))),
              testing::PrintToString(bytes{}.u8(0x02).var(0).u8(0x01).u8(0x01).b));
    EXPECT_EQ(testing::PrintToString(step_of(base, event::cancel(10, 10))),
              testing::PrintToString(bytes{}.u8(0x02).var(0).u8(0x02).u8(0x02).b));
}

// ---- RapidCheck: random steps ---------------------------------------------------------

rc::Gen<std::uint64_t> any_u64() {
    return rc::gen::oneOf(rc::gen::arbitrary<std::uint64_t>(),
                          rc::gen::element(std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{UINT32_MAX},
                                           std::uint64_t{UINT64_MAX - 1}, std::uint64_t{UINT64_MAX}));
}
// Empty or a value, half and half (inside rc::gen::exec).
template <typename T>
std::optional<T> maybe(const rc::Gen<T>& g) {
    if (*rc::gen::arbitrary<bool>()) return *g;
    return std::nullopt;
}
rc::Gen<std::uint32_t> any_slot() { return rc::gen::inRange<std::uint32_t>(0, 65536); }

rc::Gen<event> any_event() {
    return rc::gen::exec([] {
        const auto kind = static_cast<core::event_kind>(*rc::gen::inRange(0, core::event_kind_count));
        const std::uint64_t now = *any_u64();
        switch (kind) {
            case core::event_kind::acquire:
            {
                const std::uint64_t waiter = *any_u64(), handle = *any_u64();
                const std::optional<std::uint64_t> deadline = maybe(any_u64());
                const std::optional<std::uint32_t> weight = maybe(rc::gen::arbitrary<std::uint32_t>());
                const std::optional<std::uint64_t> max_leases = maybe(any_u64());
                return event::acquire(now, waiter, handle, deadline,
                                      weight ? std::optional<std::uint64_t>(*weight) : std::nullopt, max_leases);
            }
            case core::event_kind::cancel: return event::cancel(now, *any_u64());
            case core::event_kind::deregister: return event::deregister(now, *any_u64());
            case core::event_kind::release:
                return event::release(now, *any_slot(), *any_u64(),
                                      *rc::gen::element(core::release_outcome::clean, core::release_outcome::dirty));
            case core::event_kind::resize: return event::resize(now, *any_u64(), *any_u64());
            case core::event_kind::checked:
                return event::checked(now, *any_slot(), *rc::gen::element(core::check_outcome::alive, core::check_outcome::dead));
            case core::event_kind::reset_done:
                return event::reset_done(now, *any_slot(), *rc::gen::element(core::reset_outcome::ok, core::reset_outcome::failed));
            case core::event_kind::spawned:
            case core::event_kind::spawn_failed:
            case core::event_kind::retired:
            case core::event_kind::died: return event::of_slot(kind, now, *any_slot());
            case core::event_kind::start:
            case core::event_kind::tick:
            case core::event_kind::shutdown: break;
        }
        return event::of(kind, now);
    });
}

rc::Gen<effect> any_effect() {
    return rc::gen::exec([] {
        switch (static_cast<core::effect_kind>(*rc::gen::inRange(0, core::effect_kind_count))) {
            case core::effect_kind::grant: return effect::grant(*any_u64(), *any_slot(), *any_u64());
            case core::effect_kind::reject:
                return effect::reject(*any_u64(), static_cast<core::reject_reason>(*rc::gen::inRange(0, core::reject_reason_count)));
            case core::effect_kind::spawn: return effect::spawn(*any_slot());
            case core::effect_kind::retire:
                return effect::retire(*any_slot(), static_cast<core::retire_reason>(*rc::gen::inRange(0, core::retire_reason_count)));
            case core::effect_kind::leak_suspected: return effect::leak_suspected(*any_slot(), *any_u64());
            case core::effect_kind::check: return effect::check(*any_slot());
            case core::effect_kind::reset: return effect::reset(*any_slot());
            case core::effect_kind::closed: break;
        }
        return effect::closed();
    });
}

rc::Gen<step> any_step() {
    return rc::gen::exec([] {
        step s;
        s.event = *any_event();
        for (const effect& f : *rc::gen::resize(8, rc::gen::container<std::vector<effect>>(any_effect())))
            s.effects.push_back({f, 0});
        if (const int e = *rc::gen::inRange(0, core::event_error_count); e != 0) s.error = static_cast<event_error>(e);
        return s;
    });
}

RC_GTEST_PROP(trace_v3, random_steps_decode_to_the_same_events_effects_and_errors, ()) {
    trace t;
    t.version = 2;
    t.steps = *rc::gen::container<std::vector<step>>(any_step());
    if (*rc::gen::arbitrary<bool>()) t.segment = segment_info{*any_u64(), *any_u64(), 0};
    if (*rc::gen::arbitrary<bool>()) t.gap = gap_info{*rc::gen::inRange<std::uint64_t>(1, UINT64_MAX), 0};

    const std::string encoded = v3::encode(t);
    std::optional<std::size_t> cut;
    const read_result r = v3::read(encoded, false, &cut);
    if (const auto* e = std::get_if<read_error>(&r)) RC_FAIL(e->describe("<random>"));
    const trace& back = std::get<trace>(r);
    RC_ASSERT(!cut);
    RC_ASSERT(back.steps.size() == t.steps.size());
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        RC_ASSERT(back.steps[i].event == t.steps[i].event);
        RC_ASSERT(back.steps[i].error == t.steps[i].error);
        RC_ASSERT(back.steps[i].effects.size() == t.steps[i].effects.size());
        for (std::size_t k = 0; k < t.steps[i].effects.size(); ++k)
            RC_ASSERT(back.steps[i].effects[k].effect == t.steps[i].effects[k].effect);
    }
    RC_ASSERT(back.segment.has_value() == t.segment.has_value());
    if (t.segment) {
        RC_ASSERT(back.segment->number == t.segment->number);
        RC_ASSERT(back.segment->events_before == t.segment->events_before);
    }
    RC_ASSERT(back.gap.has_value() == t.gap.has_value());
    if (t.gap) RC_ASSERT(back.gap->events == t.gap->events);
    RC_ASSERT(v3::encode(back) == encoded);
    RC_ASSERT(v2_text(back) == v2_text(t));

    // Each step fits the bound the flight recorder sizes its buffer with.
    v3::delta_base base;
    for (const step& s : t.steps) {
        std::vector<effect> effects;
        for (const recorded_effect& f : s.effects) effects.push_back(f.effect);
        std::vector<unsigned char> buf(v3::max_step_bytes(effects.size()));
        RC_ASSERT(v3::put_step(buf.data(), base, s.event, effects, s.error.value_or(event_error::ok)) <=
                  buf.data() + buf.size());
    }
}

rc::Gen<v3::delta_base> any_base() {
    return rc::gen::exec([] {
        switch (*rc::gen::inRange(0, 3)) {
            case 0: return v3::delta_base{};  // a file's start
            case 1: {                         // small ids, as a pool's are
                const auto small = rc::gen::inRange<std::uint64_t>(0, 200);
                return v3::delta_base{*small, *small, *small, *small};
            }
            default: return v3::delta_base{*any_u64(), *any_u64(), *any_u64(), *any_u64()};
        }
    });
}

// The flight recorder's ring: steps put one after the other from any base. step_bytes
// finds each one's end from its bytes alone (the length put_step wrote), and
// decode_step from a copy of the base the encoder started that step from gives back
// its event, effects and error, and leaves the base where the encoder's was.
RC_GTEST_PROP(trace_v3, step_bytes_and_decode_step_agree_with_put_step_from_any_base, ()) {
    const v3::delta_base start = *any_base();
    const auto steps = *rc::gen::container<std::vector<step>>(any_step());
    std::size_t bound = 0;
    for (const step& s : steps) bound += v3::max_step_bytes(s.effects.size());
    // Bytes past each step are 0xff (continuations): a size that ran past its step
    // would not come out right.
    std::vector<unsigned char> ring(bound + 16, 0xff);
    std::vector<std::size_t> lengths;
    std::vector<v3::delta_base> bases{start};  // before each step, and after the last
    v3::delta_base encoder = start;
    unsigned char* p = ring.data();
    for (const step& s : steps) {
        std::vector<effect> effects;
        for (const recorded_effect& f : s.effects) effects.push_back(f.effect);
        unsigned char* end = v3::put_step(p, encoder, s.event, effects, s.error.value_or(event_error::ok));
        RC_ASSERT(static_cast<std::size_t>(end - p) <= v3::max_step_bytes(effects.size()));
        lengths.push_back(static_cast<std::size_t>(end - p));
        bases.push_back(encoder);
        p = end;
    }
    const unsigned char* q = ring.data();
    v3::delta_base decoder = start;
    event e;
    event_error error = event_error::ok;
    std::vector<effect> effects;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        RC_ASSERT(v3::step_bytes(q) == lengths[i]);
        // From a copy of the base before this step (whatever the steps before left).
        v3::delta_base copy = bases[i];
        v3::decode_step(q, copy, e, error, effects);
        RC_ASSERT(e == steps[i].event);
        RC_ASSERT(error == steps[i].error.value_or(event_error::ok));
        RC_ASSERT(effects.size() == steps[i].effects.size());
        for (std::size_t k = 0; k < effects.size(); ++k) RC_ASSERT(effects[k] == steps[i].effects[k].effect);
        RC_ASSERT(copy == bases[i + 1]);
        // And the decoder following the steps from the start agrees all along.
        v3::decode_step(q, decoder, e, error, effects);
        RC_ASSERT(decoder == bases[i + 1]);
        q += lengths[i];
    }
    RC_ASSERT(q == p);
    RC_ASSERT(decoder == encoder);
}

// ---- Damage: every flip, every truncation -----------------------------------------------

std::string snapshot_example_v3() {
    return v3::encode(parsed(read(file_bytes(golden_dir() / "contract_snapshot_example.trace")), "golden"));
}

// What reading `damaged` (`original` with byte `i` changed, nothing recomputed) must
// give: the checks run in the decoder's order (section 7.3) and the first that fails is
// the error, at its offset.
std::string expected_after_flip(const std::string& original, const std::string& damaged, std::size_t i, bool last_input) {
    const file_layout l = layout_of(original);
    const std::size_t n = damaged.size();
    if (i < 8) return "0: not a v3 trace (no magic)";
    if (i < 12) return "8: version " + std::to_string(get32(damaged, 8)) + ": this reader knows 3 (v1 and v2 are text)";
    if (i < 16) {
        const std::uint32_t size = get32(damaged, 12);
        if (size < 45) return "12: header size " + std::to_string(size) + " is too small";
        if (size > n) {
            if (last_input) return std::to_string(n) + ": cut in its header cut=0";
            return std::to_string(n) + ": the header of " + std::to_string(size) + " bytes runs past the end of the file (" +
                   std::to_string(n) + " bytes)";
        }
        return std::to_string(size - 4) + ": header checksum " + hex32(get32(damaged, size - 4)) +
               " does not match its bytes (" + hex32(crc_of(damaged, 0, size - 4)) + ")";
    }
    if (i < l.header)
        return std::to_string(l.header - 4) + ": header checksum " + hex32(get32(damaged, l.header - 4)) +
               " does not match its bytes (" + hex32(crc_of(damaged, 0, l.header - 4)) + ")";
    std::size_t steps_before = 0;
    for (const block_info& b : l.blocks) {
        if (i >= b.end()) {
            steps_before += b.steps;
            continue;
        }
        const std::size_t o = b.offset;
        const auto torn = [&] { return ok_summary(steps_before, {}, o); };
        const auto checksum = [&](std::uint32_t size) {
            return std::to_string(o + 12) + ": block checksum " + hex32(get32(damaged, o + 12)) +
                   " does not match its bytes (" + hex32(crc_of(damaged, o + 16, size, crc_of(damaged, o, 12))) + ")";
        };
        if (i == o) {
            const auto kind = static_cast<std::uint8_t>(damaged[o]);
            if (kind == 0 && last_input) return torn();
            if (kind != 1 && kind != 2)
                return std::to_string(o) + ": block kind " + std::to_string(kind) + " is not 1 (steps) or 2 (gap)";
            return checksum(b.size);
        }
        if (i < o + 4) return std::to_string(o + 1) + ": block header bytes 1..3 are not zero";
        if (i < o + 8) {
            const std::uint32_t size = get32(damaged, o + 4);
            if (size > n - o - 16) {
                if (last_input) return torn();
                return std::to_string(o + 4) + ": block of " + std::to_string(size) + " bytes runs past the end of the file (" +
                       std::to_string(n - o - 16) + " left): truncated";
            }
            return checksum(size);
        }
        return checksum(b.size);
    }
    return "(no byte " + std::to_string(i) + ")";
}

TEST(trace_v3_damage, every_flipped_bit_and_byte_is_refused_at_its_offset) {
    const std::string original = snapshot_example_v3();
    ASSERT_LT(original.size(), 2000u);
    const file_layout l = layout_of(original);
    ASSERT_EQ(l.blocks.size(), 2u);  // the steps, the gap
    std::size_t refused = 0;
    for (std::size_t i = 0; i < original.size(); ++i) {
        for (const unsigned mask : {0x01U, 0x02U, 0x04U, 0x08U, 0x10U, 0x20U, 0x40U, 0x80U, 0xffU}) {
            SCOPED_TRACE("byte " + std::to_string(i) + " ^ " + std::to_string(mask));
            std::string damaged = original;
            damaged[i] = static_cast<char>(static_cast<unsigned char>(damaged[i]) ^ mask);
            const std::string got = read_summary(damaged, false);
            ASSERT_EQ(got.rfind("steps=", 0), std::string::npos) << "a damaged file was read";
            ASSERT_EQ(got, expected_after_flip(original, damaged, i, false));
            ++refused;
            // As a recording's last file: the same, but a zeroed block kind or a block
            // running past the end is a torn tail, cut there.
            ASSERT_EQ(read_summary(damaged, true), expected_after_flip(original, damaged, i, true));
        }
    }
    EXPECT_EQ(refused, original.size() * 9);
}

// Every prefix of `file`: refused (last_input false) or cut at its last whole block
// (last_input true, or "cut in its header" with cut 0 when the header is not whole).
void expect_every_truncation(const std::string& file, std::optional<std::uint64_t> gap_events) {
    const file_layout l = layout_of(file);
    for (std::size_t n = 0; n <= file.size(); ++n) {
        SCOPED_TRACE(std::to_string(n) + " bytes of " + std::to_string(file.size()));
        const std::string_view prefix = std::string_view(file).substr(0, n);
        std::string whole, last;
        if (n < 20) {
            whole = std::to_string(n) + ": the header ends after " + std::to_string(n) + " bytes";
            last = std::to_string(n) + ": cut in its header cut=0";
        } else if (n < l.header) {
            whole = std::to_string(n) + ": the header of " + std::to_string(l.header) +
                    " bytes runs past the end of the file (" + std::to_string(n) + " bytes)";
            last = std::to_string(n) + ": cut in its header cut=0";
        } else {
            std::size_t steps_before = 0;
            bool found = false;
            for (const block_info& b : l.blocks) {
                if (n == b.offset) {
                    whole = last = ok_summary(steps_before, {}, {});
                    found = true;
                    break;
                }
                if (n < b.end()) {
                    const std::size_t left = n - b.offset;
                    whole = left < 16 ? std::to_string(b.offset) + ": block header cut short: " + std::to_string(left) +
                                            " bytes left in the file"
                                      : std::to_string(b.offset + 4) + ": block of " + std::to_string(b.size) +
                                            " bytes runs past the end of the file (" + std::to_string(left - 16) +
                                            " left): truncated";
                    last = ok_summary(steps_before, {}, b.offset);
                    found = true;
                    break;
                }
                steps_before += b.steps;
            }
            if (!found) {
                ASSERT_EQ(n, file.size());
                whole = last = ok_summary(steps_before, gap_events, {});
            }
        }
        EXPECT_EQ(read_summary(prefix, false), whole);
        EXPECT_EQ(read_summary(prefix, true), last);
        // A cut file reads as the steps of its whole blocks, as the prefix up to the cut.
        std::optional<std::size_t> cut;
        const read_result r = v3::read(prefix, true, &cut);
        if (cut && *cut > 0) {
            const trace before = parsed(v3::read(prefix.substr(0, *cut), false), "the prefix up to the cut");
            EXPECT_EQ(v2_text(parsed(r, "the cut file")), v2_text(before));
        }
    }
}

TEST(trace_v3_damage, every_truncation_of_a_snapshot_and_gap_file_is_refused_or_cut_at_its_last_whole_block) {
    expect_every_truncation(snapshot_example_v3(), 1742);
}

TEST(trace_v3_damage, every_truncation_of_a_file_of_several_blocks_is_refused_or_cut_at_its_last_whole_block) {
    const trace original = parsed(read(file_bytes(golden_dir() / "contract_example.trace")), "golden");
    const std::span<const step> steps(original.steps);
    const std::string file =
        v3::header_bytes(original.config, segment_info{1, 50, 0}, {}) + blocks_of(steps, {1, 2, 5}) + gap_block(9);
    ASSERT_EQ(layout_of(file).blocks.size(), 4u);
    expect_every_truncation(file, 9);
}

TEST(trace_v3_damage, a_zero_kind_byte_is_a_torn_tail_only_in_the_last_input) {
    const std::string head = plain_header();
    const std::string one = steps_block(bytes{}.tick().b);
    // What a crash of the machine leaves: the file's length written, its last blocks not.
    const std::string file = head + one + std::string(40, '\0');
    EXPECT_EQ(read_summary(file, false), std::to_string(head.size() + one.size()) + ": block kind 0 is not 1 (steps) or 2 (gap)");
    EXPECT_EQ(read_summary(file, true), ok_summary(1, {}, head.size() + one.size()));
    // A zero kind cuts everything after it, even whole blocks.
    const std::string hole = head + one + std::string(16, '\0') + one;
    EXPECT_EQ(read_summary(hole, true), ok_summary(1, {}, head.size() + one.size()));
}

// ---- Damage: checksums, versions, magic -----------------------------------------------

TEST(trace_v3_damage, a_bad_block_checksum_is_refused_naming_both_values) {
    const std::string head = plain_header();
    std::string file = head + steps_block(bytes{}.tick().b);
    const std::uint32_t good = get32(file, head.size() + 12);
    set32(file, head.size() + 12, good + 1);
    EXPECT_EQ(read_summary(file, false), std::to_string(head.size() + 12) + ": block checksum " + hex32(good + 1) +
                                             " does not match its bytes (" + hex32(good) + ")");
    EXPECT_EQ(read_summary(file, true), read_summary(file, false));  // not a torn tail
}

TEST(trace_v3_damage, a_bad_header_checksum_is_refused_naming_both_values) {
    std::string file = plain_header();
    const std::size_t at = file.size() - 4;
    const std::uint32_t good = get32(file, at);
    set32(file, at, good ^ 0x80000000U);
    EXPECT_EQ(read_summary(file, false),
              std::to_string(at) + ": header checksum " + hex32(good ^ 0x80000000U) + " does not match its bytes (" + hex32(good) + ")");
    EXPECT_EQ(read_summary(file, true), read_summary(file, false));
}

TEST(trace_v3_damage, another_version_is_refused_naming_it) {
    for (const std::uint32_t v : {2U, 4U, 0U, 0xffffffffU}) {
        std::string file = snapshot_example_v3();
        set32(file, 8, v);  // nothing recomputed: the version is checked first
        EXPECT_EQ(read_summary(file, false), "8: version " + std::to_string(v) + ": this reader knows 3 (v1 and v2 are text)");
        EXPECT_EQ(read_summary(file, true), read_summary(file, false));
        const read_result r = read(file);
        ASSERT_TRUE(std::holds_alternative<read_error>(r));
        EXPECT_EQ(std::get<read_error>(r).describe("old.trace"),
                  "old.trace: byte 8: version " + std::to_string(v) + ": this reader knows 3 (v1 and v2 are text)");
    }
}

TEST(trace_v3_damage, a_file_without_the_magic_is_not_v3) {
    EXPECT_EQ(read_summary("fairpool-trace v2\nconfig\n", false), "0: not a v3 trace (no magic)");
    EXPECT_EQ(read_summary("\x89" "FPTRACX" + std::string(40, '\0'), true), "0: not a v3 trace (no magic)");
    EXPECT_FALSE(v3::is_binary(""));
    EXPECT_FALSE(v3::is_binary("fairpool-trace v1\n"));
    EXPECT_TRUE(v3::is_binary("\x89" "FP"));
    EXPECT_FALSE(v3::is_binary("\x89" "FX"));
    // A prefix of the magic is a v3 file cut short.
    EXPECT_EQ(read_summary("\x89" "FPT", false), "4: the header ends after 4 bytes");
    EXPECT_EQ(read_summary("\x89" "FPT", true), "4: cut in its header cut=0");
}

// The string and the stream readers dispatch on the same test: a text that starts with
// 0x89 but is not (a prefix of) the magic is text to both (or binary to both).
TEST(trace_v3, string_and_stream_readers_agree_on_what_is_binary) {
    for (const std::string& text : {std::string("\x89" "abc\n"), std::string("\x89" "FPX\n"), std::string("\x89")}) {
        SCOPED_TRACE(testing::PrintToString(text));
        const read_result from_string = read(text);
        std::istringstream in(text);
        const read_result from_stream = read(in);
        ASSERT_TRUE(std::holds_alternative<read_error>(from_string));
        ASSERT_TRUE(std::holds_alternative<read_error>(from_stream));
        EXPECT_EQ(std::get<read_error>(from_stream).describe("x"), std::get<read_error>(from_string).describe("x"));
    }
}

// The stream reader looks at the first byte to tell v3 from text: with the stream's
// exceptions enabled that look must not throw either (as the text reader never does),
// on an empty stream or a v3 file.
TEST(trace_v3, the_stream_reader_with_exceptions_enabled_does_not_throw) {
    const std::string encoded = snapshot_example_v3();
    for (const std::string& input : {std::string(), encoded, encoded.substr(0, 30)}) {
        SCOPED_TRACE(std::to_string(input.size()) + " bytes");
        std::istringstream in(input);
        in.exceptions(std::ios::failbit | std::ios::badbit | std::ios::eofbit);
        try {
            EXPECT_EQ(summary(read(in), {}), summary(read(input), {}));
        } catch (const std::exception& e) {
            ADD_FAILURE() << "read(std::istream&) threw " << e.what();
        }
    }
}

// ---- Records that do not decode (block CRCs recomputed) -------------------------------

struct record_case {
    const char* name;
    std::string payload;
    std::uint32_t steps;
    std::size_t offset;  // from the payload's first byte
    std::string message;
};

// Offsets from the payload's first byte. tick() is 09 00 0a: head, effect count 0,
// time 5 (zigzag 10).
TEST(trace_v3_damage, a_record_that_does_not_decode_is_refused_at_its_field) {
    const std::uint64_t big = 65536;
    const std::uint64_t two32 = std::uint64_t{1} << 32;
    const std::string ten_ff(9, '\xff');  // the first nine bytes of a ten-byte varint of ones
    const std::string ten_80(10, '\x80');
    const std::vector<record_case> cases = {
        // The head: the kind first (bits 0-3).
        {"event kind 14", bytes{}.event(14).b, 1, 0, "event kind 14 is not one of 0..13"},
        {"event kind 15", bytes{}.event(15).b, 1, 0, "event kind 15 is not one of 0..13"},
        {"a head of 0xff", bytes{}.u8(0xff).u8(1).var(0).zz(5).b, 1, 0, "event kind 15 is not one of 0..13"},
        {"kind 14 with flags and an error", bytes{}.event(14, 0, 7, 3).b, 1, 0, "event kind 14 is not one of 0..13"},
        // The error byte (head bit 7).
        {"event error 14", bytes{}.event(9, 0, 0, 14).b, 1, 1, "event error 14 is not one of 0..13"},
        {"event error 255", bytes{}.event(9, 0, 0, 255).b, 1, 1, "event error 255 is not one of 0..13"},
        {"event error 0", bytes{}.event(9, 0, 0, 0).b, 1, 1, "event error 0: no error is written as no error byte"},
        {"an error bit and no error byte", bytes{}.u8(0x89).b, 1, 1, "event error runs past the end of its block"},
        // Flags (bits 4-6), checked once the record's fields have decoded.
        {"flags on a tick", bytes{}.event(9, 0, 1).b, 1, 0, "event flags 1 are not valid for tick"},
        {"flags 7 on a shutdown", bytes{}.event(10, 0, 7).b, 1, 0, "event flags 7 are not valid for shutdown"},
        {"flags on a start", bytes{}.event(0, 0, 4).b, 1, 0, "event flags 4 are not valid for start"},
        {"flags on a cancel", bytes{}.event(2, 0, 1).zz(1).b, 1, 0, "event flags 1 are not valid for cancel"},
        {"flags on a deregister", bytes{}.event(3, 0, 2).zz(1).b, 1, 0, "event flags 2 are not valid for deregister"},
        {"outcome flag on a spawned", bytes{}.event(5, 0, 1).var(0).b, 1, 0, "event flags 1 are not valid for spawned"},
        {"outcome flag on a spawn_failed", bytes{}.event(6, 0, 1).var(0).b, 1, 0, "event flags 1 are not valid for spawn_failed"},
        {"outcome flag on a retired", bytes{}.event(7, 0, 1).var(0).b, 1, 0, "event flags 1 are not valid for retired"},
        {"outcome flag on a died", bytes{}.event(8, 0, 1).var(0).b, 1, 0, "event flags 1 are not valid for died"},
        {"flag 2 on a release", bytes{}.event(4, 0, 2).var(0).zz(1).b, 1, 0, "event flags 2 are not valid for release"},
        {"flag 4 on a checked", bytes{}.event(11, 0, 4).var(3).b, 1, 0, "event flags 4 are not valid for checked"},
        {"flags 3 on a reset_done", bytes{}.event(12, 0, 3).var(3).b, 1, 0, "event flags 3 are not valid for reset_done"},
        {"flags on a resize", bytes{}.event(13, 0, 1).var(2).var(1).b, 1, 0, "event flags 1 are not valid for resize"},
        {"flags on a tick with an error", bytes{}.event(9, 0, 1, 3).b, 1, 0, "event flags 1 are not valid for tick"},
        {"bad flags and a bad slot: the slot first", bytes{}.event(5, 0, 1).var(big).b, 1, 3,
         "event slot 65536 is not below 65536"},
        // Slots, varints below 65536.
        {"event slot 65536", bytes{}.event(5).var(big).b, 1, 3, "event slot 65536 is not below 65536"},
        {"event slot 2^64-1", bytes{}.event(8).var(UINT64_MAX).b, 1, 3,
         "event slot 18446744073709551615 is not below 65536"},
        {"checked slot 65536", bytes{}.event(11, 0, 1).var(big).b, 1, 3, "event slot 65536 is not below 65536"},
        {"reset_done slot 65536", bytes{}.event(12).var(big).b, 1, 3, "event slot 65536 is not below 65536"},
        {"release slot 65536", bytes{}.event(4).var(big).zz(1).b, 1, 3, "release slot 65536 is not below 65536"},
        {"an error byte, then slot 65536", bytes{}.event(5, 0, 0, 4).var(big).b, 1, 4, "event slot 65536 is not below 65536"},
        // Weights and effect counts: at most 2^32-1.
        {"acquire weight 2^32", bytes{}.event(1, 0, 2).zz(1).zz(2).var(two32).b, 1, 5,
         "acquire weight 4294967296 is above 2^32-1"},
        {"acquire weight 2^64-1 after a deadline", bytes{}.event(1, 0, 7).zz(1).zz(2).zz(3).var(UINT64_MAX).var(1).b, 1, 6,
         "acquire weight 18446744073709551615 is above 2^32-1"},
        {"effect count 2^32", bytes{}.event(9, two32).b, 1, 1, "effect count 4294967296 is above 2^32-1"},
        {"effect count 2^64-1", bytes{}.event(9, UINT64_MAX).b, 1, 1, "effect count 18446744073709551615 is above 2^32-1"},
        {"effect count 2^32 after an error byte", bytes{}.event(9, two32, 0, 3).b, 1, 2, "effect count 4294967296 is above 2^32-1"},
        // Effect counts running past the block: at the step's event record.
        {"effect count past the block", bytes{}.event(9, 1).b, 1, 0, "effect count 1 runs past the end of its block"},
        {"a huge effect count", bytes{}.event(9, 0xffffffffU).effect(5).b, 1, 0,
         "effect count 4294967295 runs past the end of its block"},
        {"two effects, one byte left", bytes{}.event(9, 2).effect(5).b, 1, 0, "effect count 2 runs past the end of its block"},
        {"the second step's effect count past the block", bytes{}.tick().event(9, 3).effect(5).effect(5).b, 2, 3,
         "effect count 3 runs past the end of its block"},
        {"one effect more than the count", bytes{}.event(9, 1).effect(5).effect(5).b, 1, 4,
         "1 bytes after the block's last step"},
        // Varints: at most 10 bytes, the tenth 0 or 1, in their fewest bytes.
        {"a varint of 11 bytes", bytes{}.u8(9).u8(0).raw(ten_80).u8(1).b, 1, 2, "event time overflows 64 bits"},
        {"a tenth byte of 2", bytes{}.u8(9).u8(0).raw(ten_ff).u8(2).b, 1, 2, "event time overflows 64 bits"},
        {"a tenth byte of 0x81", bytes{}.u8(9).u8(0).raw(ten_ff).u8(0x81).u8(0).b, 1, 2, "event time overflows 64 bits"},
        {"an effect count of 11 bytes", bytes{}.u8(9).raw(ten_80).u8(0).zz(5).b, 1, 1, "effect count overflows 64 bits"},
        {"a slot of 11 bytes", bytes{}.event(5).raw(ten_80).u8(0).b, 1, 3, "event slot overflows 64 bits"},
        {"a weight of 11 bytes", bytes{}.event(1, 0, 2).zz(1).zz(2).raw(ten_80).u8(1).b, 1, 5, "acquire weight overflows 64 bits"},
        {"a grant lease of 11 bytes", bytes{}.event(9, 1).effect(0).zz(1).var(0).raw(ten_80).u8(1).b, 1, 6,
         "grant lease overflows 64 bits"},
        {"a non-minimal time", bytes{}.u8(9).u8(0).u8(0x8a).u8(0).b, 1, 2, "event time is not written in its fewest bytes"},
        {"2^63-1 in ten bytes", bytes{}.u8(9).u8(0).raw(ten_ff).u8(0).b, 1, 2, "event time is not written in its fewest bytes"},
        {"zero in two bytes", bytes{}.u8(9).u8(0x80).u8(0).zz(5).b, 1, 1, "effect count is not written in its fewest bytes"},
        {"a non-minimal slot", bytes{}.event(5).u8(0x81).u8(0x80).u8(0).b, 1, 3, "event slot is not written in its fewest bytes"},
        {"a non-minimal weight", bytes{}.event(1, 0, 2).zz(1).zz(2).u8(0x83).u8(0).b, 1, 5,
         "acquire weight is not written in its fewest bytes"},
        {"a non-minimal waiter delta", bytes{}.event(2).u8(0x82).u8(0).b, 1, 3, "cancel waiter is not written in its fewest bytes"},
        {"a non-minimal reject waiter", bytes{}.event(9, 1).effect(1).u8(0x80).u8(0).b, 1, 4,
         "reject waiter is not written in its fewest bytes"},
        // A varint the block cuts: refused at the byte that is not there.
        {"a varint cut by the block's end", bytes{}.u8(9).u8(0).u8(0x80).b, 1, 3, "event time runs past the end of its block"},
        {"a ten-byte varint cut after nine", bytes{}.u8(9).u8(0).raw(ten_ff).b, 1, 11, "event time runs past the end of its block"},
        // Effect heads: bits 6-7 zero, a reason (bits 3-5) only on a reject or a retire.
        {"effect head bit 6", bytes{}.event(9, 1).u8(0x45).b, 1, 3, "effect head bits 6 and 7 are not zero"},
        {"effect head bit 7", bytes{}.event(9, 1).u8(0x85).b, 1, 3, "effect head bits 6 and 7 are not zero"},
        {"effect head 0xff", bytes{}.event(9, 1).u8(0xff).b, 1, 3, "effect head bits 6 and 7 are not zero"},
        {"a reason on a grant", bytes{}.event(9, 1).effect(0, 1).zz(1).var(0).zz(1).b, 1, 3,
         "effect reason 1 is not valid for grant"},
        {"reject reason 5", bytes{}.event(9, 1).effect(1, 5).zz(1).b, 1, 3, "effect reason 5 is not valid for reject"},
        {"reject reason 7", bytes{}.event(9, 1).effect(1, 7).zz(1).b, 1, 3, "effect reason 7 is not valid for reject"},
        {"a reason on a spawn", bytes{}.event(9, 1).effect(2, 1).var(0).b, 1, 3, "effect reason 1 is not valid for spawn"},
        {"a reason on a leak_suspected", bytes{}.event(9, 1).effect(4, 2).var(0).zz(1).b, 1, 3,
         "effect reason 2 is not valid for leak_suspected"},
        {"a reason on closed", bytes{}.event(9, 1).effect(5, 1).b, 1, 3, "effect reason 1 is not valid for closed"},
        {"a reason on a check", bytes{}.event(9, 1).effect(6, 7).var(0).b, 1, 3, "effect reason 7 is not valid for check"},
        {"a reason on a reset", bytes{}.event(9, 1).effect(7, 4).var(0).b, 1, 3, "effect reason 4 is not valid for reset"},
        {"the second effect's reason", bytes{}.event(9, 2).effect(5).effect(5, 1).b, 1, 4, "effect reason 1 is not valid for closed"},
        {"a reason and a bad slot: the slot first", bytes{}.event(9, 1).effect(2, 1).var(big).b, 1, 4,
         "effect slot 65536 is not below 65536"},
        {"grant slot 65536", bytes{}.event(9, 1).effect(0).zz(1).var(big).zz(1).b, 1, 5, "grant slot 65536 is not below 65536"},
        {"spawn slot 65536", bytes{}.event(9, 1).effect(2).var(big).b, 1, 4, "effect slot 65536 is not below 65536"},
        {"retire slot 65536", bytes{}.event(9, 1).effect(3, 1).var(big).b, 1, 4, "retire slot 65536 is not below 65536"},
        {"leak_suspected slot 65536", bytes{}.event(9, 1).effect(4).var(big).zz(1).b, 1, 4,
         "leak_suspected slot 65536 is not below 65536"},
        {"check slot 65536", bytes{}.event(9, 1).effect(6).var(big).b, 1, 4, "effect slot 65536 is not below 65536"},
        {"reset slot 65536", bytes{}.event(9, 1).effect(7).var(big).b, 1, 4, "effect slot 65536 is not below 65536"},
        // Records cut short by their block.
        {"an empty payload", "", 1, 0, "event head runs past the end of its block"},
        {"an event head alone", bytes{}.u8(9).b, 1, 1, "effect count runs past the end of its block"},
        {"an event without its time", bytes{}.u8(9).u8(0).b, 1, 2, "event time runs past the end of its block"},
        {"an acquire without its handle", bytes{}.event(1).zz(1).b, 1, 4, "acquire handle runs past the end of its block"},
        {"a deadline missing", bytes{}.event(1, 0, 1).zz(1).zz(2).b, 1, 5, "acquire deadline runs past the end of its block"},
        {"a weight missing", bytes{}.event(1, 0, 2).zz(1).zz(2).b, 1, 5, "acquire weight runs past the end of its block"},
        {"max_leases missing", bytes{}.event(1, 0, 4).zz(1).zz(2).b, 1, 5, "acquire max_leases runs past the end of its block"},
        {"a release without its lease", bytes{}.event(4).var(0).b, 1, 4, "release lease runs past the end of its block"},
        {"a resize without min_slots", bytes{}.event(13).var(2).b, 1, 4, "resize min_slots runs past the end of its block"},
        {"a died without its slot", bytes{}.event(8).b, 1, 3, "event slot runs past the end of its block"},
        {"a grant cut short", bytes{}.event(9, 1).effect(0).zz(1).var(0).b, 1, 6, "grant lease runs past the end of its block"},
        {"a leak_suspected cut short", bytes{}.event(9, 2).effect(5).effect(4).var(0).b, 1, 6,
         "leak_suspected lease runs past the end of its block"},
        // Steps against the block's count.
        {"more steps than the count", bytes{}.tick().tick().b, 1, 3, "3 bytes after the block's last step"},
        {"bytes after the last step", bytes{}.tick().u8(0).b, 1, 3, "1 bytes after the block's last step"},
        {"fewer steps than the count", bytes{}.tick().b, 2, 3, "the block ends 1 steps short of the count in its header"},
        {"far fewer steps than the count", bytes{}.tick().tick().b, 7, 6, "the block ends 5 steps short of the count in its header"},
        {"a count of 2^32-1", bytes{}.tick().b, 0xffffffffU, 3,
         "the block ends 4294967294 steps short of the count in its header"},
    };
    const std::string head = plain_header();
    const std::size_t payload_at = head.size() + 16;
    for (const record_case& c : cases) {
        SCOPED_TRACE(c.name);
        const std::string file = head + steps_block(c.payload, c.steps);
        const std::string expected = std::to_string(payload_at + c.offset) + ": " + c.message;
        EXPECT_EQ(read_summary(file, false), expected);
        EXPECT_EQ(read_summary(file, true), expected);  // a whole block: never a torn tail
        // The same record in a second block, after a tick: the offset moves with it.
        const std::string later = head + steps_block(bytes{}.tick().b) + steps_block(c.payload, c.steps);
        EXPECT_EQ(read_summary(later, false), std::to_string(payload_at + 19 + c.offset) + ": " + c.message);
    }
}

TEST(trace_v3_damage, the_well_formed_twins_of_those_records_read) {
    // The same records with the one field put right: what the cases above refuse is
    // that field, not the record around it.
    const std::string head = plain_header();
    const std::string ten_ff(9, '\xff');
    const std::string nine_80(9, '\x80');
    struct twin {
        std::string payload;
        std::string text;  // the step it reads as, in v2 text
    };
    const std::vector<twin> twins = {
        {bytes{}.event(13).var(2).var(1).b, "@5 resize max_slots=2 min_slots=1"},
        {bytes{}.event(5).var(65535).b, "@5 spawned slot=65535"},
        {bytes{}.event(4, 0, 1).var(0).zz(1).b, "@5 release slot=0 lease=1 outcome=dirty"},
        {bytes{}.event(11, 0, 1).var(3).b, "@5 checked slot=3 outcome=dead"},
        {bytes{}.event(12, 0, 1).var(3).b, "@5 reset_done slot=3 outcome=failed"},
        {bytes{}.event(1, 0, 7).zz(1).zz(2).zz(-3).var(UINT32_MAX).var(5).b,
         "@5 acquire waiter=1 handle=2 deadline=2 weight=4294967295 max_leases=5"},
        {bytes{}.event(9, 1).effect(0).zz(1).var(65535).zz(1).b, "@5 tick\n= grant waiter=1 slot=65535 lease=1"},
        {bytes{}.event(9, 1).effect(1, 4).zz(1).b, "@5 tick\n= reject waiter=1 reason=closed"},
        {bytes{}.event(9, 1).effect(3, 7).var(0).b, "@5 tick\n= retire slot=0 reason=resize"},
        {bytes{}.event(9, 0, 0, 13).b, "@5 tick\n! not_resetting"},
        {bytes{}.event(9, 1).effect(5).b, "@5 tick\n= closed"},
        // Varints at their limits: 2^64-1 (a tenth byte of 1) is a delta of -2^63 as a
        // zigzag; 2^63 (nine 0x80 and a 1) is 2^62; 127 and 128 either side of a byte.
        {bytes{}.u8(9).u8(0).raw(ten_ff).u8(1).b, "@9223372036854775808 tick"},
        {bytes{}.u8(9).u8(0).raw(nine_80).u8(1).b, "@4611686018427387904 tick"},
        {bytes{}.event(5).var(127).b, "@5 spawned slot=127"},
        {bytes{}.event(5).var(128).b, "@5 spawned slot=128"},
        {bytes{}.event(1, 0, 2).zz(1).zz(2).var(UINT32_MAX).b, "@5 acquire waiter=1 handle=2 weight=4294967295"},
        {bytes{}.u8(9).u8(0).u8(0).b, "@0 tick"},
    };
    for (const twin& t : twins) {
        SCOPED_TRACE(testing::PrintToString(t.payload));
        const std::string file = head + steps_block(t.payload);
        EXPECT_EQ(read_summary(file, false), ok_summary(1, {}, {}));
        const read_result r = v3::read(file, false);
        if (const auto* tr = std::get_if<trace>(&r)) {
            const std::string text = v2_text(*tr);
            const std::string prefix = v2_text(parsed(v3::read(head, false), "the header"));
            ASSERT_EQ(text.rfind(prefix, 0), 0u);
            EXPECT_EQ(text.substr(prefix.size()), t.text + "\n");
        }
    }
}

TEST(trace_v3_damage, a_block_header_that_does_not_decode_is_refused) {
    const std::string head = plain_header();
    const std::size_t h = head.size();
    const std::string tick = bytes{}.tick().b;
    const auto at = [&](std::size_t offset, const std::string& message) { return std::to_string(offset) + ": " + message; };
    EXPECT_EQ(read_summary(head + block(3, tick, 1), false), at(h, "block kind 3 is not 1 (steps) or 2 (gap)"));
    EXPECT_EQ(read_summary(head + block(3, tick, 1), true), at(h, "block kind 3 is not 1 (steps) or 2 (gap)"));
    EXPECT_EQ(read_summary(head + block(0, tick, 1), false), at(h, "block kind 0 is not 1 (steps) or 2 (gap)"));
    EXPECT_EQ(read_summary(head + block(0, tick, 1), true), ok_summary(0, {}, h));
    for (const std::array<std::uint8_t, 3> pad :
         {std::array<std::uint8_t, 3>{1, 0, 0}, std::array<std::uint8_t, 3>{0, 1, 0}, std::array<std::uint8_t, 3>{0, 0, 0x80}})
        EXPECT_EQ(read_summary(head + block(1, tick, 1, pad), true), at(h + 1, "block header bytes 1..3 are not zero"));
    // A block of no steps, with or without a payload.
    EXPECT_EQ(read_summary(head + block(1, "", 0), false), at(h + 8, "a steps block holds no step"));
    EXPECT_EQ(read_summary(head + block(1, tick, 0), true), at(h + 8, "a steps block holds no step"));
}

TEST(trace_v3_damage, a_gap_block_that_does_not_decode_or_is_not_last_is_refused) {
    const std::string head = plain_header();
    const std::size_t h = head.size();
    const std::string one = steps_block(bytes{}.tick().b);
    const auto at = [&](std::size_t offset, const std::string& message) { return std::to_string(offset) + ": " + message; };
    for (const bool last : {false, true}) {
        SCOPED_TRACE(last ? "last input" : "whole file");
        EXPECT_EQ(read_summary(head + gap_block(0), last), at(h + 16, "gap of 0 events (a gap loses at least one event)"));
        EXPECT_EQ(read_summary(head + block(2, bytes{}.u64(1).u32(0).b, 0), last), at(h, "a gap block holds 8 bytes and no step"));
        EXPECT_EQ(read_summary(head + block(2, bytes{}.u32(1).b, 0), last), at(h, "a gap block holds 8 bytes and no step"));
        EXPECT_EQ(read_summary(head + block(2, bytes{}.u64(1).b, 1), last), at(h, "a gap block holds 8 bytes and no step"));
        // Data after the gap: a whole block, another gap, a byte, a torn block header.
        const std::size_t after = h + one.size() + v3::gap_block_bytes;
        const std::string data_after = "data after the gap block (a gap is the last block of a file)";
        EXPECT_EQ(read_summary(head + one + gap_block(4) + one, last), at(after, data_after));
        EXPECT_EQ(read_summary(head + one + gap_block(4) + gap_block(4), last), at(after, data_after));
        EXPECT_EQ(read_summary(head + one + gap_block(4) + std::string(1, '\0'), last), at(after, data_after));
        EXPECT_EQ(read_summary(head + one + gap_block(4) + one.substr(0, 5), last), at(after, data_after));
        // The gap alone, and after steps: fine.
        EXPECT_EQ(read_summary(head + gap_block(UINT64_MAX), last), ok_summary(0, UINT64_MAX, {}));
        EXPECT_EQ(read_summary(head + one + one + gap_block(1), last), ok_summary(2, 1, {}));
    }
}

// ---- Headers that do not decode (header CRCs recomputed) ------------------------------

TEST(trace_v3_damage, a_header_that_does_not_decode_is_refused_at_its_field) {
    const std::string& config = default_config_line;
    const std::size_t after_config = 20 + config.size();
    const auto at = [](std::size_t offset, const std::string& message) { return std::to_string(offset) + ": " + message; };

    // Built by hand the way the encoder builds it: the same bytes.
    EXPECT_EQ(header_by_hand(config, no_segment_no_snapshot()), plain_header());
    EXPECT_EQ(read_summary(header_by_hand(config, no_segment_no_snapshot()), false), ok_summary(0, {}, {}));

    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(2).u64(0).u64(0).u32(0).b), false),
              at(after_config, "segment flag 2 is not one of 0..1"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(1).u32(0).b), false),
              at(after_config, "no segment, but its fields are not zero"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(1).u64(0).u64(0).u32(0).b), false), ok_summary(0, {}, {}));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).b), false),
              at(after_config + 17, "snapshot record count runs past the end of its header"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(1000).b), false),
              at(after_config + 17, "snapshot record count 1000 runs past the header"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(1).u8(10).b), false),
              at(after_config + 21, "snapshot record tag 10 is not one of 1..9"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(1).u8(0).b), false),
              at(after_config + 21, "snapshot record tag 0 is not one of 1..9"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(1).u8(1).u64(0).b), false),
              at(after_config + 30, "a snapshot field runs past the end of its header"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(1).u8(4).u32(65536).b), false),
              at(after_config + 22, "idle slot 65536 is not below 65536"));
    EXPECT_EQ(read_summary(header_by_hand(config, bytes{}.u8(0).u64(0).u64(0).u32(0).u8(0).u8(0).u8(0).b), false),
              at(after_config + 21, "3 bytes after the snapshot, before the header checksum"));

    // The config line.
    EXPECT_EQ(read_summary(header_by_hand(config + " # a comment", no_segment_no_snapshot()), false),
              at(20, "the config line holds a line end, '#' or NUL"));
    EXPECT_EQ(read_summary(header_by_hand("config max_slots=2\n@0 start", no_segment_no_snapshot()), false),
              at(20, "the config line holds a line end, '#' or NUL"));
    EXPECT_EQ(read_summary(header_by_hand(std::string("config\0", 7), no_segment_no_snapshot()), false),
              at(20, "the config line holds a line end, '#' or NUL"));
    {
        // An invalid config: the text reader's message, at the config's offset.
        const std::string bad = "config max_slots=2 min_slots=3";
        const read_result text = read("fairpool-trace v1\n" + bad + "\n");
        ASSERT_TRUE(std::holds_alternative<read_error>(text));
        EXPECT_EQ(read_summary(header_by_hand(bad, no_segment_no_snapshot()), false), at(20, std::get<read_error>(text).message));
        const read_result unknown = read("fairpool-trace v1\nconfig colour=blue\n");
        ASSERT_TRUE(std::holds_alternative<read_error>(unknown));
        EXPECT_EQ(read_summary(header_by_hand("config colour=blue", no_segment_no_snapshot()), false),
                  at(20, std::get<read_error>(unknown).message));
    }

    // Sizes: the header's, the config's.
    {
        std::string small = header_by_hand(config, no_segment_no_snapshot());
        set32(small, 12, 44);
        EXPECT_EQ(read_summary(small, false), at(12, "header size 44 is too small"));
        std::string big_config = header_by_hand(config, no_segment_no_snapshot());
        set32(big_config, 16, static_cast<std::uint32_t>(big_config.size()));
        set32(big_config, big_config.size() - 4, crc_of(big_config, 0, big_config.size() - 4));
        EXPECT_EQ(read_summary(big_config, false),
                  at(16, "config size " + std::to_string(big_config.size()) + " runs past the header"));
    }
}

TEST(trace_v3_damage, a_snapshot_the_core_refuses_is_refused_at_the_record_it_names) {
    const trace golden = parsed(read(file_bytes(golden_dir() / "contract_snapshot_example.trace")), "golden");
    std::vector<core::snapshot_record> records = records_of(golden);
    // Slot 1 made leased while still on the idle list.
    bool changed = false;
    for (core::snapshot_record& r : records)
        if (auto* s = std::get_if<core::snapshot_slot>(&r); s && s->index == 1) s->state = core::slot_state::spawning, changed = true;
    ASSERT_TRUE(changed);
    std::size_t refused_record = 0;
    std::string why;
    try {
        const core::scheduler restored(golden.config, records, 0);
        FAIL() << "the core restored the damaged snapshot";
    } catch (const core::snapshot_error& e) {
        refused_record = e.record();
        why = e.what();
    }
    const std::string file = v3::header_bytes(golden.config, golden.segment, records);
    const trace offsets = parsed(v3::read(v3::header_bytes(golden.config, golden.segment, records_of(golden)), false), "good");
    ASSERT_LT(refused_record, offsets.snapshot.size());
    EXPECT_EQ(read_summary(file, false), std::to_string(offsets.snapshot[refused_record].line) + ": snapshot: " + why);
}

// ---- Messages -----------------------------------------------------------------------------

TEST(trace_v3, errors_are_described_by_file_and_byte_offset) {
    const read_result r = v3::read(plain_header() + gap_block(0), false);
    ASSERT_TRUE(std::holds_alternative<read_error>(r));
    const read_error& e = std::get<read_error>(r);
    EXPECT_TRUE(e.binary);
    EXPECT_EQ(e.describe("seg.trace"),
              "seg.trace: byte " + std::to_string(plain_header().size() + 16) + ": gap of 0 events (a gap loses at least one event)");
}

// ---- The fuzzer's seeds ------------------------------------------------------------------

// tests/fuzz/corpus/trace_v3 holds the canonical v3 encodings of these golden traces
// (the fuzz_trace_v3 harness's seeds). FAIRPOOL_WRITE_V3_SEEDS=1 writes them again.
const std::vector<std::string> seed_traces = {
    "contract_snapshot_example", "snapshot_gap",        "snapshot_health_resetting", "snapshot_waiters_turns_deadlines",
    "event_errors",              "health_event_errors", "isolation_event_errors",    "resize_shrink_leased",
    "cap_skip_and_rejoin",       "weighted_turns",
};

TEST(trace_v3, the_fuzzers_seeds_are_the_canonical_encodings_of_their_golden_traces) {
    const fs::path dir = FAIRPOOL_V3_SEEDS_DIR;
    const char* regenerate = std::getenv("FAIRPOOL_WRITE_V3_SEEDS");
    for (const std::string& name : seed_traces) {
        SCOPED_TRACE(name);
        const std::string encoded = v3::encode(parsed(read(file_bytes(golden_dir() / (name + ".trace"))), name));
        EXPECT_LT(encoded.size(), 8192u);
        const fs::path seed = dir / (name + ".bin");
        if (regenerate != nullptr && std::string(regenerate) == "1") {
            fs::create_directories(dir);
            std::ofstream(seed, std::ios::binary) << encoded;
        }
        EXPECT_TRUE(file_bytes(seed) == encoded) << seed << " is not the encoding of its golden trace "
                                             << "(FAIRPOOL_WRITE_V3_SEEDS=1 writes it again)";
    }
}

}  // namespace
}  // namespace fairpool::trace
