#include "busy_poll.hpp"

namespace fairpool::demo {

void run_with_busy_poll(boost::asio::io_context& io, std::chrono::microseconds spin) {
    if (spin.count() == 0) {
        io.run();
        return;
    }
    while (!io.stopped()) {
        if (io.poll() > 0) continue;  // handlers ran: poll again at once
        const auto until = std::chrono::steady_clock::now() + spin;
        bool ran = false;
        while (!ran && !io.stopped() && std::chrono::steady_clock::now() < until) ran = io.poll() > 0;
        if (!ran && io.run_one() == 0) return;  // nothing came: block until something does
    }
}

}  // namespace fairpool::demo
