// fleet_round_trip: N uncontended round trips (acquire, completion, release) on one
// io_context thread, with a budget client refreshing against Redis on the same
// io_context (--redis-port P) or without one. Run under callgrind by
// bench/fleet/round_trip.py: the client must cost the round trip nothing it would notice.
//
//   fleet_round_trip CYCLES [--redis-port P]
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "fairpool/asio.hpp"
#include "fairpool/budget/client.hpp"

namespace asio = boost::asio;
using int_pool = fairpool::pool<int>;

namespace {

struct cycler {
    int_pool::handle_type handle;
    long left;
    void next() {
        if (left-- <= 0) return;
        handle.async_acquire([this](boost::system::error_code ec, int_pool::lease_type lease) {
            if (ec) std::abort();
            lease = {};
            next();
        });
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 4) {
        std::fprintf(stderr, "usage: fleet_round_trip CYCLES [--redis-port P]\n");
        return 2;
    }
    const long cycles = std::atol(argv[1]);
    asio::io_context io(1);
    fairpool::pool_options o;
    o.max_slots = 1;
    o.slot_capacity = 4;
    int_pool pool(io.get_executor(), o, []() -> asio::awaitable<int> { co_return 1; });
    std::optional<fairpool::budget::budget_client> member;
    if (argc == 4) {
        fairpool::budget::budget_options b;
        b.name = "round-trip";
        b.budget = 4;
        b.member_id = "bench";
        b.redis = {asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(std::atoi(argv[3]))};
        member.emplace(io.get_executor(), b, fairpool::budget::target_of(pool));
        member->start();  // the first acquire waits for the first grant (no learning: the caller
                          // established the budget)
    }
    cycler c{pool.make_handle(), cycles};
    c.next();
    while (c.left >= 0) io.run_one();
    if (member) member->stop();
    pool.async_close([](auto&&...) {});
    io.run();
    std::printf("%ld\n", cycles);
    return 0;
}
