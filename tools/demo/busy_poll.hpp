#pragma once
// Runs an io_context on this thread like run(), except that after handlers have run it
// keeps polling for up to `spin` before it blocks in the reactor again: under load the
// next event usually comes within microseconds, and a thread that did not go to sleep
// need not be woken (a wakeup costs the thread that sends the data — here the clients
// and redis-server — an inter-processor interrupt and a context switch). Idle, it blocks
// as run() does: a spin starts only after work. spin 0 is plain run(). Returns when the
// context runs out of work or is stopped.
#include <boost/asio/io_context.hpp>
#include <chrono>

namespace fairpool::demo {

void run_with_busy_poll(boost::asio::io_context& io, std::chrono::microseconds spin);

}  // namespace fairpool::demo
