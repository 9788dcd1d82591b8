#include "fairpool/trace/crc32c.hpp"

#include <boost/crc.hpp>
#include <cstring>

namespace fairpool::trace {

namespace {

using crc32c_table = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

// Boost.CRC takes a starting remainder unreflected, as the polynomial is written.
std::uint32_t reflected(std::uint32_t v) noexcept {
    std::uint32_t r = 0;
    for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1U);
    return r;
}

std::uint32_t by_table(const unsigned char* p, std::size_t n, std::uint32_t crc) noexcept {
    // The running remainder after the bytes before is the finished CRC with its final
    // XOR undone; Boost.CRC wants it unreflected.
    crc32c_table c(reflected(crc ^ 0xFFFFFFFFU));
    c.process_bytes(p, n);
    return c.checksum();
}

#if defined(__x86_64__)
[[gnu::target("sse4.2")]] std::uint32_t by_instruction(const unsigned char* p, std::size_t n,
                                                      std::uint32_t crc) noexcept {
    std::uint64_t c = crc ^ 0xFFFFFFFFU;
    for (; n >= 8; p += 8, n -= 8) {
        std::uint64_t word;
        std::memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    auto c32 = static_cast<std::uint32_t>(c);
    for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32 ^ 0xFFFFFFFFU;
}

const bool has_sse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
    if (has_sse42) return by_instruction(p, size, crc);
#endif
    return by_table(p, size, crc);
}

std::uint32_t crc32c_by_table(const void* data, std::size_t size, std::uint32_t crc) noexcept {
    return by_table(static_cast<const unsigned char*>(data), size, crc);
}

}  // namespace fairpool::trace
