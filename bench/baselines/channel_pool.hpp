#pragma once
// Baseline (d): an asio::experimental::concurrent_channel of idle resources, the
// "just use a channel" pool. The channel (buffer = pool size) starts full of resource
// indices; an acquire is async_receive, a release is try_send (it cannot fail: the
// buffer holds every resource). A release with receivers waiting hands the resource
// straight to the oldest receiver, so there is no barging; the channel does its own
// locking (a mutex per channel) and posts each completion to the receiver's executor.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <utility>
#include <vector>

#include "lease.hpp"

namespace fairpool_bench {

template <class Resource>
class channel_pool {
public:
    using resource_type = Resource;
    using executor_type = boost::asio::any_io_executor;
    using lease_type = basic_lease<channel_pool>;
    using acquire_signature = void(boost::system::error_code, lease_type);

    channel_pool(executor_type ex, std::vector<Resource> resources)
        : resources_(std::move(resources)), idle_(std::move(ex), resources_.size()) {
        for (std::size_t i = 0; i < resources_.size(); ++i) idle_.try_send(boost::system::error_code{}, i);
    }
    channel_pool(const channel_pool&) = delete;
    channel_pool& operator=(const channel_pool&) = delete;

    template <class Token>
    auto async_acquire(Token&& token) {
        return boost::asio::async_compose<Token, acquire_signature>(receive_op{this}, token, idle_);
    }

    Resource& resource(std::size_t i) noexcept { return resources_[i]; }

    void give_back(std::size_t i) noexcept { idle_.try_send(boost::system::error_code{}, i); }

private:
    struct receive_op {
        channel_pool* pool;
        bool started = false;

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t index = 0) {
            if (!started) {
                started = true;
                pool->idle_.async_receive(std::move(self));
                return;
            }
            if (ec) self.complete(ec, lease_type());
            else self.complete(ec, lease_type(pool, index));
        }
    };

    std::vector<Resource> resources_;
    boost::asio::experimental::concurrent_channel<void(boost::system::error_code, std::size_t)> idle_;
};

}  // namespace fairpool_bench
