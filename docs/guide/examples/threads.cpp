// Threads: an io_context run by two threads; three tenants acquire, each from a strand of
// its own; the main thread, outside run(), acquires, cancels, releases, reads the
// counters and closes.
#include <boost/asio.hpp>
#include <fairpool/asio.hpp>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using strand = asio::strand<asio::io_context::executor_type>;

struct connection {
    int uses = 0;  // a plain int: one holder at a time touches it
};

// [tenant]
// A tenant's requests, one after another, from the coroutine's strand.
asio::awaitable<int> tenant(fairpool::handle<connection> handle, strand on,
                            std::atomic<int>& off_strand) {
    int grants = 0;
    for (int i = 0; i < 4; ++i) {
        auto lease = co_await handle.async_acquire(asio::use_awaitable);
        if (!on.running_in_this_thread()) ++off_strand;  // never: completions come on it
        ++lease->uses;
        ++grants;
    }
    co_return grants;
}
// [/tenant]

int main() {
    asio::io_context io;
    auto work = asio::make_work_guard(io);  // run() returns only once the pool has closed
    std::atomic<int> made{0};               // hooks may run on both threads at once
    fairpool::pool<connection> pool(io.get_executor(), {.max_slots = 2},
                                    [&]() -> asio::awaitable<connection> {
                                        ++made;
                                        co_return connection{};
                                    });
    std::thread first([&] { io.run(); }), second([&] { io.run(); });

    // [strands]
    std::atomic<int> off_strand{0};
    std::vector<std::future<int>> tenants;
    for (int t = 0; t < 3; ++t) {
        strand on = asio::make_strand(io);
        tenants.push_back(
            asio::co_spawn(on, tenant(pool.make_handle(), on, off_strand), asio::use_future));
    }
    // [/strands]

    // [foreign]
    // This thread does not run the io_context: it waits on futures.
    fairpool::lease<connection> one = pool.async_acquire(asio::use_future).get();
    fairpool::lease<connection> two = pool.async_acquire(asio::use_future).get();  // both

    // To cancel from here, bind the handler to an executor and emit the signal there: a
    // cancellation_signal is not thread-safe.
    strand where = asio::make_strand(io);
    asio::cancellation_signal signal;
    std::promise<boost::system::error_code> outcome;
    pool.async_acquire(asio::bind_cancellation_slot(
        signal.slot(), asio::bind_executor(where, [&](boost::system::error_code ec,
                                                      fairpool::lease<connection>) {
            outcome.set_value(ec);
        })));
    asio::post(where, [&] { signal.emit(asio::cancellation_type::terminal); });
    std::printf("cancelled from this thread: %s\n", outcome.get_future().get().message().c_str());
    one.release();  // any thread, never blocks
    two.release();
    // [/foreign]

    int grants = 0;
    for (auto& f : tenants) grants += f.get();
    const fairpool::pool_stats s = pool.stats();  // any thread, no lock
    std::printf("tenants' grants: %d, the pool's: %llu, cancelled: %llu\n", grants,
                static_cast<unsigned long long>(s.grants),
                static_cast<unsigned long long>(s.rejected_cancelled));
    std::printf("completions off their strand: %d\n", off_strand.load());
    const fairpool::close_report report = pool.async_close(asio::use_future).get();
    std::printf("closed: %s\n", report.closed ? "yes" : "no");
    work.reset();
    first.join();
    second.join();
    return made > 0 && off_strand == 0 ? 0 : 1;
}
