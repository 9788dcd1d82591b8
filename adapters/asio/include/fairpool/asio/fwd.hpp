#pragma once
// The adapter's class templates, declared once with their default arguments: the clock
// the pool reads (the scheduler's time, deadlines, backoff, retire grace and close
// deadlines) and the wait traits its Asio timers wait with. A Clock is a steady
// std::chrono clock; a test may give one whose now() it advances itself.
#include <boost/asio/wait_traits.hpp>
#include <chrono>

namespace fairpool {

template <class Resource, class Clock = std::chrono::steady_clock, class WaitTraits = boost::asio::wait_traits<Clock>>
class pool;

template <class Resource, class Clock = std::chrono::steady_clock, class WaitTraits = boost::asio::wait_traits<Clock>>
class handle;

template <class Resource, class Clock = std::chrono::steady_clock, class WaitTraits = boost::asio::wait_traits<Clock>>
class lease;

namespace detail {
template <class Resource, class Clock, class WaitTraits>
class pool_state;
}

}  // namespace fairpool
