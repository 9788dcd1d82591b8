#pragma once
// A handle's statistics and name, readable after the handle object has gone: what a
// scrape handler keeps for each tenant (handle::observer()) while the handles
// themselves live in the code that acquires through them. Copyable; any thread, no
// lock. It keeps the handle's small shared block alive, not the pool. Empty (all zero,
// no name) when default-constructed or taken from an empty handle.
#include <memory>
#include <string_view>
#include <utility>

#include "fairpool/asio/detail/handle_block.hpp"
#include "fairpool/asio/handle_stats.hpp"

namespace fairpool {

class handle_observer {
public:
    handle_observer() noexcept = default;
    explicit handle_observer(std::shared_ptr<const detail::handle_block> block) noexcept : block_(std::move(block)) {}

    [[nodiscard]] handle_stats stats() const noexcept { return block_ ? block_->read() : handle_stats{}; }
    [[nodiscard]] std::string_view name() const noexcept { return block_ ? std::string_view(block_->name) : ""; }
    [[nodiscard]] explicit operator bool() const noexcept { return block_ != nullptr; }

private:
    std::shared_ptr<const detail::handle_block> block_;
};

}  // namespace fairpool
