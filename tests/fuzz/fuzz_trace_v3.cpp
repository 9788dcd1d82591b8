// libFuzzer harness: arbitrary bytes into the v3 (binary) trace reader, both as a whole
// file and as a recording's last file (torn tail allowed). Any breach aborts:
// - an error must be marked binary, name an offset inside the input (or its end) and
//   say something printable;
// - a file that reads as a whole reads the same as a last input, and is never cut;
// - a last input that reads and was cut reads as its bytes up to the cut, read whole;
//   one that fails (and was not cut in its header) fails as the whole file does;
// - whatever reads re-encodes (canonically) to a file that reads back to the same
//   canonical text, and that encoding is a fixed point.
// The block and header checksums would refuse nearly every mutation before a record is
// decoded, so each input is also read with its checksums recomputed (and its magic and
// version put right): the record decoders get the fuzzer's bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/crc32c.hpp"
#include "fairpool/trace/read.hpp"
#include "fairpool/trace/write.hpp"

namespace {

using namespace fairpool;

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz_trace_v3: %s\n", why.c_str());
    std::abort();
}

std::string canonical(const trace::trace& t) {
    std::ostringstream out;
    trace::write(out, t);  // v2 text for a v3 trace
    return out.str();
}

std::string describe(const trace::read_result& r) {
    if (const auto* e = std::get_if<trace::read_error>(&r)) return e->describe("input");
    return "a trace";
}

void check_error(const trace::read_error& e, std::size_t size) {
    if (!e.binary) fail("a v3 read error not marked binary: " + e.message);
    if (e.line > size) fail("a read error past the end of the input: " + e.describe("input"));
    if (e.message.empty()) fail("a read error without a message");
    for (const char c : e.message)
        if (c < 0x20 || c > 0x7e) fail("a read error with an unprintable message: " + e.describe("input"));
}

// Re-encoding what was read gives a file that reads back to the same canonical text.
void check_round_trip(const trace::trace& t) {
    const std::string text = canonical(t);
    const std::string encoded = trace::v3::encode(t);
    const auto again = trace::v3::read(encoded, false);
    const auto* t2 = std::get_if<trace::trace>(&again);
    if (t2 == nullptr) fail("the re-encoding does not read back: " + describe(again) + "\nof:\n" + text);
    if (canonical(*t2) != text) fail("the re-encoding reads back to another trace:\n" + text + "\n---\n" + canonical(*t2));
    if (trace::v3::encode(*t2) != encoded) fail("the canonical encoding is not a fixed point:\n" + text);
}

void check(std::string_view bytes) {
    std::optional<std::size_t> whole_cut, last_cut;
    const auto whole = trace::v3::read(bytes, false, &whole_cut);
    const auto last = trace::v3::read(bytes, true, &last_cut);
    if (whole_cut) fail("a whole file was cut");

    const auto* whole_error = std::get_if<trace::read_error>(&whole);
    const auto* last_error = std::get_if<trace::read_error>(&last);
    if (whole_error) check_error(*whole_error, bytes.size());
    if (last_error) check_error(*last_error, bytes.size());

    if (const auto* t = std::get_if<trace::trace>(&whole)) {
        const auto* tl = std::get_if<trace::trace>(&last);
        if (tl == nullptr) fail("a file that reads whole fails as a last input: " + describe(last));
        if (last_cut) fail("a file that reads whole is cut as a last input");
        if (canonical(*tl) != canonical(*t)) fail("a file reads differently whole and as a last input");
        check_round_trip(*t);
        return;
    }
    if (last_error) {
        const bool header_cut = last_error->message == "cut in its header";
        if (header_cut != (last_cut == std::size_t{0})) fail("a cut in the header without cut() == 0, or the reverse");
        // Short of a cut, a last input goes where a whole file goes, and fails there.
        if (!header_cut && describe(whole) != describe(last))
            fail("a last input fails otherwise than the whole file: " + describe(last) + " / " + describe(whole));
        return;
    }
    // A last input that reads where the whole file does not: a torn tail, cut.
    const auto& tl = std::get<trace::trace>(last);
    if (!last_cut) fail("a last input reads where the whole file fails (" + describe(whole) + "), without a cut");
    if (*last_cut > bytes.size() || *last_cut == 0) fail("a cut outside the file: " + std::to_string(*last_cut));
    const auto prefix = trace::v3::read(bytes.substr(0, *last_cut), false);
    const auto* tp = std::get_if<trace::trace>(&prefix);
    if (tp == nullptr) fail("the bytes up to the cut do not read whole: " + describe(prefix));
    if (canonical(*tp) != canonical(tl)) fail("a cut last input reads otherwise than its bytes up to the cut");
    if (tl.gap) fail("a cut last input has a gap");
    check_round_trip(tl);
}

void put32(std::string& s, std::size_t at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t get32(std::string_view s, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
    return v;
}

// The input with its magic and version put right and every checksum recomputed, as far
// as its sizes lead (section 7.3's layout); nullopt if that changes nothing.
std::optional<std::string> repaired(std::string_view bytes) {
    if (bytes.size() < 20) return std::nullopt;
    std::string s(bytes);
    std::memcpy(s.data(), trace::v3::magic.data(), trace::v3::magic.size());
    put32(s, 8, trace::v3::version);
    const std::uint32_t header = get32(s, 12);
    if (header >= 24 && header <= s.size()) {
        put32(s, header - 4, trace::crc32c(s.data(), header - 4));
        for (std::size_t at = header; s.size() - at >= trace::v3::block_header_bytes;) {
            const std::uint32_t size = get32(s, at + 4);
            if (size > s.size() - at - trace::v3::block_header_bytes) break;
            put32(s, at + 12, trace::crc32c(s.data() + at + 16, size, trace::crc32c(s.data() + at, 12)));
            at += trace::v3::block_header_bytes + size;
        }
    }
    if (s == bytes) return std::nullopt;
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    check(bytes);
    if (const auto fixed = repaired(bytes)) check(*fixed);
    return 0;
}
