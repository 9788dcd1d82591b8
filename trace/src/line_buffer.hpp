#pragma once
// One trace line, built in a fixed buffer: the writer formats records at a recorder's
// rate without allocating. The longest record is the config line (20 keys of at most
// 22 bytes, values of at most 20 digits or a name: under 1,000 bytes); an append
// that would overflow the buffer stops at its end rather than writing past it.
#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "fairpool/core/config.hpp"
#include "fairpool/core/event.hpp"
#include "fairpool/core/snapshot.hpp"

namespace fairpool::trace {

class line_buffer {
public:
    void append(std::string_view text) noexcept {
        const std::size_t n = text.size() < room() ? text.size() : room();
        text.copy(data_.data() + size_, n);
        size_ += n;
    }
    void append(char c) noexcept {
        if (room() > 0) data_[size_++] = c;
    }
    void append(std::uint64_t value) noexcept {
        const auto [end, error] = std::to_chars(data_.data() + size_, data_.data() + data_.size(), value);
        if (error == std::errc{}) size_ = static_cast<std::size_t>(end - data_.data());
    }
    [[nodiscard]] std::string_view view() const noexcept { return {data_.data(), size_}; }

private:
    [[nodiscard]] std::size_t room() const noexcept { return data_.size() - size_; }

    std::array<char, 2048> data_;  // NOLINT(cppcoreguidelines-pro-member-init): written before it is read
    std::size_t size_ = 0;
};


// The records, appended to a line (format.cpp); format.hpp's functions return the same text.
void append_event_line(line_buffer& out, const core::event& e);   // "@NOW EVENT key=value…"
void append_effect(line_buffer& out, const core::effect& f);      // "EFFECT key=value…"
void append_snapshot_record(line_buffer& out, const core::snapshot_record& r);
void append_canonical(line_buffer& out, const core::config& c);   // "config key=value…", resolved

}  // namespace fairpool::trace
