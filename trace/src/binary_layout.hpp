#pragma once
// What the v3 encoder (binary_write.cpp) and decoder (binary_read.cpp) share: the
// little-endian field primitives and the tags of the records (docs/CONTRACT.md
// section 7.3). Fields are copied one by one at no alignment; on a big-endian machine
// their bytes are swapped.
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fairpool::trace::v3::layout {

template <typename U>
    requires std::is_unsigned_v<U>
inline unsigned char* put(unsigned char* out, U value) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out, &value, sizeof(U));
    } else {
        for (std::size_t i = 0; i < sizeof(U); ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
    }
    return out + sizeof(U);
}

template <typename U>
    requires std::is_unsigned_v<U>
[[nodiscard]] inline U get(const unsigned char* in) noexcept {
    U value;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&value, in, sizeof(U));
    } else {
        value = 0;
        for (std::size_t i = 0; i < sizeof(U); ++i) value = static_cast<U>(value | (U{in[i]} << (8 * i)));
    }
    return value;
}

// The flags of an event record (byte 1).
inline constexpr std::uint8_t has_deadline = 1, has_weight = 2, has_max_leases = 4;  // acquire
inline constexpr std::uint8_t other_outcome = 1;  // release dirty, checked dead, reset_done failed

// The tag of each snapshot record (its first byte).
enum class snapshot_tag : std::uint8_t {
    begin = 1, sizes = 2, slot = 3, idle = 4, handle = 5, waiter = 6, counter = 7, bucket = 8, end = 9,
};

// Offsets in the header (section 7.3).
inline constexpr std::size_t version_at = 8, header_size_at = 12, config_size_at = 16, config_at = 20;
// Block header fields.
inline constexpr std::size_t block_size_at = 4, block_steps_at = 8, block_crc_at = 12;

}  // namespace fairpool::trace::v3::layout
