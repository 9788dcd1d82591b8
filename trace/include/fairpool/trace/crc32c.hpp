#pragma once
// CRC-32C (Castagnoli: polynomial 0x1EDC6F41 reflected, initial value and final XOR
// 0xFFFFFFFF), the checksum of every block of trace format v3 (docs/CONTRACT.md
// section 7.3). With SSE 4.2 (checked once, at run time) eight bytes an instruction;
// without it Boost.CRC's table, a byte at a time. crc32c("123456789") = 0xE3069283.
#include <cstddef>
#include <cstdint>

namespace fairpool::trace {

// The CRC of `size` bytes at `data`, continuing from `crc` (0 to start):
// crc32c(b, n1 + n2) == crc32c(b + n1, n2, crc32c(b, n1)).
[[nodiscard]] std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;
// The same, always by the table (what a machine without SSE 4.2 computes): for tests.
[[nodiscard]] std::uint32_t crc32c_by_table(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

}  // namespace fairpool::trace
