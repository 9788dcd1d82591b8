// Uncontended round trip, one thread, driven the way a server drives a pool: each
// completion handler releases its lease and starts the next acquire (acquiring from
// outside io_context::run() would miss Asio's per-thread recycling of operation memory
// and count allocations no server sees). The blocking pool completes inline, so its
// loop is unrolled instead of recursing. io_context::run() returns how many handlers
// it ran: the tasks a design posts per cycle, its completion included.
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common.hpp"
#include "fairpool/asio/detail/flight_recorder.hpp"
#include "scenarios.hpp"

namespace fairpool_bench {
namespace {

struct round_trip_result {
    double ns_per_cycle = 0;
    double allocations_per_cycle = 0;  // on the thread that runs the round trip: the pool's
    double handlers_per_cycle = 0;
    double other_allocations_per_cycle = 0;  // on other threads meanwhile (the recorder's writer)
    double checks_per_cycle = 0;  // the checking round trip's
    double thread_cpu_ns_per_cycle = 0;  // CPU time of the thread that runs the round trip (the pool's)
};

// This thread's CPU time, user and system.
std::int64_t thread_cpu_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

template <class Source>
class round_trip_loop {
public:
    round_trip_loop(Source& source, std::size_t cycles) : source_(source), cycles_(cycles) {}

    void start() {
        for (;;) {
            in_call_ = true;
            completed_inline_ = false;
            // this->: clang 14 calls the capture unused without it (llvm/llvm-project#81243)
            source_.async_acquire([this](error_code ec, auto lease) { this->on_grant(ec, std::move(lease)); });
            in_call_ = false;
            if (!completed_inline_ || done_ == cycles_) return;
        }
    }
    [[nodiscard]] std::size_t done() const noexcept { return done_; }

private:
    template <class Lease>
    void on_grant(error_code ec, Lease lease) {
        if (ec || !lease) {
            std::fprintf(stderr, "round trip: acquire failed: %s\n", ec.message().c_str());
            std::abort();
        }
        lease.release();
        ++done_;
        if (in_call_) completed_inline_ = true;  // start() goes on
        else if (done_ < cycles_) start();
    }

    Source& source_;
    std::size_t cycles_;
    std::size_t done_ = 0;
    bool in_call_ = false;
    bool completed_inline_ = false;
};

// before() runs after the warm-up, just before the measured run; after() just after it
// (neither in its time, its CPU time or its count of allocations).
template <class Source, class Before = void (*)(), class After = void (*)()>
round_trip_result measure_round_trip(asio::io_context& io, Source& source, std::size_t cycles, const char* name,
                                     Before before = [] {}, After after = [] {}) {
    const auto run_cycles = [&](std::size_t n) {
        round_trip_loop<Source> loop(source, n);
        io.restart();
        asio::post(io, [&loop] { loop.start(); });
        const std::size_t handlers = io.run() - 1;  // minus the post above
        if (loop.done() != n) {
            std::fprintf(stderr, "%s: %zu of %zu round trips\n", name, loop.done(), n);
            std::abort();
        }
        return handlers;
    };
    run_cycles(1000);  // warm caches and recycling allocators
    before();
    const std::uint64_t a0 = allocations(), mine0 = allocations_on_this_thread();
    const std::int64_t cpu0 = thread_cpu_ns();
    const auto t0 = clock_type::now();
    const std::size_t handlers = run_cycles(cycles);
    const auto t1 = clock_type::now();
    const std::int64_t cpu1 = thread_cpu_ns();
    const std::uint64_t a1 = allocations(), mine1 = allocations_on_this_thread();
    after();
    const auto n = static_cast<double>(cycles);
    const auto mine = static_cast<double>(mine1 - mine0);
    return {.ns_per_cycle = static_cast<double>(ns_between(t0, t1)) / n,
            .allocations_per_cycle = mine / n,
            .handlers_per_cycle = static_cast<double>(handlers) / n,
            .other_allocations_per_cycle = (static_cast<double>(a1 - a0) - mine) / n,
            .thread_cpu_ns_per_cycle = static_cast<double>(cpu1 - cpu0) / n};
}

template <class Design>
round_trip_result round_trip_once(std::size_t cycles) {
    asio::io_context io(1);
    auto pool = Design::make(io, 1);
    auto source = Design::source(*pool);
    return measure_round_trip(io, source, cycles, Design::name);
}

// The flight recorder on, writing to local disk (fairpool_recording_design); also what it
// reports: steps lost in gaps when the writer fell behind (the actor never waits).
struct recording_result {
    round_trip_result trip;
    double lost_share = 0;  // of the events fed
    // The writer thread's CPU time (user and system, recording_status::writer_cpu_time)
    // for the records the measured run pushed: from the warm-up's last record written to
    // the measured run's, idle wakes included.
    double writer_cpu_ns_per_cycle = 0;
};

// The 200,000-cycle run is the recorder at full speed: the writer, woken at the ring's
// high-water mark, drains it while the pool runs. whole_run_cycles is a run short enough
// for the default ring to hold all of it (the acquire and its grant, the release: 82
// bytes a cycle, the warm-up's included) before the writer's first wake: the actor's
// cost of recording every step, with the writer mostly asleep.
constexpr std::size_t whole_run_cycles = 20'000;

// The repetitions of one recording scenario, and its rows.
struct recording_samples {
    std::vector<double> ns, allocs, writer_allocs, lost, pool_cpu, writer_cpu, writer_vs_pool;

    void add(const recording_result& r) {
        ns.push_back(r.trip.ns_per_cycle);
        allocs.push_back(r.trip.allocations_per_cycle);
        writer_allocs.push_back(r.trip.other_allocations_per_cycle);
        lost.push_back(r.lost_share);
        pool_cpu.push_back(r.trip.thread_cpu_ns_per_cycle);
        writer_cpu.push_back(r.writer_cpu_ns_per_cycle);
        writer_vs_pool.push_back(r.trip.thread_cpu_ns_per_cycle > 0
                                     ? r.writer_cpu_ns_per_cycle / r.trip.thread_cpu_ns_per_cycle
                                     : 0.0);
    }
    void rows(const std::string& scenario, double off_ns_per_cycle) const {
        row(scenario, "fairpool", "ns_per_cycle", median(ns), "ns");
        row(scenario, "fairpool", "allocs_per_cycle", median(allocs), "count");
        row(scenario, "fairpool", "writer_allocs_per_cycle", median(writer_allocs), "count");
        row(scenario, "fairpool", "overhead_vs_off", median(ns) / off_ns_per_cycle, "ratio");
        row(scenario, "fairpool", "events_lost_share", median(lost), "ratio");
        // CPU time (user and system) per cycle of the pool's thread, of the writer's, and
        // the writer's over the pool thread's (the median of each repetition's ratio).
        row(scenario, "fairpool", "pool_thread_cpu_ns_per_cycle", median(pool_cpu), "ns");
        row(scenario, "fairpool", "writer_cpu_ns_per_cycle", median(writer_cpu), "ns");
        row(scenario, "fairpool", "writer_cpu_vs_pool_thread", median(writer_vs_pool), "ratio");
    }
};

// Waits (at most 10 s, sleeping: the writer gets the CPU) until the writer has written
// or counted lost every event the pool was fed; then its CPU time so far.
template <class Pool>
std::chrono::nanoseconds writer_cpu_once_written(const Pool& pool) {
    const auto deadline = clock_type::now() + std::chrono::seconds(10);
    for (;;) {
        const auto s = pool.recording_status();
        if (!s) return {};
        if (s->events_written + s->events_lost >= commands_fed(pool)) return s->writer_cpu_time;
        if (clock_type::now() > deadline) {
            std::fprintf(stderr, "round_trip: the writer did not catch up in 10 s (%llu of %llu events)\n",
                         static_cast<unsigned long long>(s->events_written + s->events_lost),
                         static_cast<unsigned long long>(commands_fed(pool)));
            return s->writer_cpu_time;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// measure_writer: also the writer's CPU time (the run is then followed by a wait for the
// writer to catch up; bench/round_trip_instructions.py's runs under callgrind do without).
recording_result recording_round_trip_once(std::size_t cycles, bool measure_writer = true) {
    asio::io_context io(1);
    auto pool = fairpool_recording_design::make(io, 1);
    auto source = fairpool_design::source(*pool);
    std::chrono::nanoseconds writer0{}, writer1{};
    std::uint64_t fed = 0, lost = 0;
    const auto before = [&] {
        if (measure_writer) writer0 = writer_cpu_once_written(*pool);
    };
    const auto after = [&] {
        fed = commands_fed(*pool);  // the losses of the run, before any wait
        const auto status = pool->recording_status();
        lost = status ? status->events_lost : 0;
        if (measure_writer) writer1 = writer_cpu_once_written(*pool);
    };
    recording_result result{measure_round_trip(io, source, cycles, "fairpool (recorder on)", before, after)};
    if (fed > 0) result.lost_share = static_cast<double>(lost) / static_cast<double>(fed);
    result.writer_cpu_ns_per_cycle = static_cast<double>((writer1 - writer0).count()) / static_cast<double>(cycles);
    return result;
}

// check_after_idle = 1 ns: the idle resource is stale at every acquire (time passes
// between a release and the next acquire), so each cycle checks it first.
round_trip_result checking_round_trip_once(std::size_t cycles) {
    asio::io_context io(1);
    auto pool = fairpool_design::make(io, 1, nullptr, std::chrono::nanoseconds(1));
    auto source = fairpool_design::source(*pool);
    const std::uint64_t checks_before = pool->stats().checks_started;
    auto result = measure_round_trip(io, source, cycles, "fairpool (check_after_idle)");
    result.checks_per_cycle =
        static_cast<double>(pool->stats().checks_started - checks_before) / static_cast<double>(cycles + 1000);
    return result;
}

}  // namespace

bool round_trip_cycles(const char* design, std::size_t cycles, bool threaded) {
    if (threaded) std::thread([] {}).join();
    if (std::string_view(design) == checking_design) return checking_round_trip_once(cycles), true;
    if (std::string_view(design) == recording_design) return recording_round_trip_once(cycles, false), true;
    return with_design_named(design, [&](auto d) { round_trip_once<decltype(d)>(cycles); });
}

void scenario_round_trip(int reps, std::size_t cycles) {
    std::fprintf(stderr, "round_trip: %d reps x %zu cycles per design\n", reps, cycles);
    std::vector<std::vector<double>> ns(design_count), allocs(design_count), handlers(design_count);
    recording_samples recorded, whole;
    std::vector<double> whole_off_ns;
    std::vector<double> checking_ns, checking_allocs, checking_handlers, checks;
    for (int r = 0; r < reps; ++r) {
        for_each_design([&](auto design, std::size_t d) {
            const auto result = round_trip_once<decltype(design)>(cycles);
            ns[d].push_back(result.ns_per_cycle);
            allocs[d].push_back(result.allocations_per_cycle);
            handlers[d].push_back(result.handlers_per_cycle);
        });
        recorded.add(recording_round_trip_once(cycles));
        const auto whole_run = recording_round_trip_once(whole_run_cycles);
        if (whole_run.lost_share != 0) {
            std::fprintf(stderr, "round_trip: the whole run lost events: the default ring is smaller than 3 x %zu\n",
                         whole_run_cycles + 1000);
            std::abort();
        }
        whole.add(whole_run);
        whole_off_ns.push_back(round_trip_once<fairpool_design>(whole_run_cycles).ns_per_cycle);
        const auto checked = checking_round_trip_once(cycles);
        checking_ns.push_back(checked.ns_per_cycle);
        checking_allocs.push_back(checked.allocations_per_cycle);
        checking_handlers.push_back(checked.handlers_per_cycle);
        checks.push_back(checked.checks_per_cycle);
    }
    for_each_design([&](auto design, std::size_t d) {
        row("round_trip", design.name, "ns_per_cycle", median(ns[d]), "ns");
        row("round_trip", design.name, "allocs_per_cycle", median(allocs[d]), "count");
        row("round_trip", design.name, "handlers_per_cycle", median(handlers[d]), "count");
    });
    recorded.rows("round_trip/recorder", median(ns[0]));
    // The ring's size with the default recorder_options, for the round trip's pool.
    const fairpool::recorder_options defaults = bench_recorder_options();
    const fairpool::pool_options with_recorder = fairpool_design::options(1, &defaults);
    const std::size_t ring_bytes =  // scheduler_config is resolved, as the pool's core has it
        fairpool::detail::flight_recorder::memory(defaults, fairpool::scheduler_config(with_recorder));
    row("round_trip/recorder", "fairpool", "ring_bytes", static_cast<double>(ring_bytes), "bytes");
    whole.rows("round_trip/recorder_whole_run", median(whole_off_ns));
    row("round_trip/check_after_idle", "fairpool", "ns_per_cycle", median(checking_ns), "ns");
    row("round_trip/check_after_idle", "fairpool", "allocs_per_cycle", median(checking_allocs), "count");
    row("round_trip/check_after_idle", "fairpool", "handlers_per_cycle", median(checking_handlers), "count");
    row("round_trip/check_after_idle", "fairpool", "checks_per_cycle", median(checks), "count");
    row("round_trip/check_after_idle", "fairpool", "overhead_vs_off", median(checking_ns) / median(ns[0]), "ratio");
}

}  // namespace fairpool_bench
