#pragma once
// What a pool runs with: its options checked and turned into the scheduler's config
// (nanosecond integers, 0 for "off") and the adapter's own settings. Made once, at the
// pool's construction (settings_of); the pool's parts read only this.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "fairpool/asio/options.hpp"
#include "fairpool/asio/recorder_options.hpp"
#include "fairpool/core/config.hpp"

namespace fairpool::detail {

struct pool_settings {
    core::config scheduler;  // resolved: every optional field filled in
    std::uint32_t mailbox_capacity = 0;
    std::chrono::nanoseconds retire_grace{0};
    std::chrono::nanoseconds check_timeout{0};
    std::chrono::nanoseconds reset_timeout{0};
    std::chrono::nanoseconds create_timeout{0};  // 0: unbounded (pool_options: forever)
    std::optional<recorder_options> recording;
    std::function<void(std::uint32_t slot, std::uint64_t lease)> on_leak_suspected;
};

// Throws config_error ("invalid pool options: FIELD: why") unless the options are valid.
[[nodiscard]] pool_settings settings_of(const pool_options& o);

}  // namespace fairpool::detail
