// The adapter allocates nothing in steady state: on a warm pool, an acquire → grant →
// release cycle driven by callbacks (the completion handler releases its lease and
// starts the next acquire) performs no heap allocation at all.
//
// Every allocation is counted: the global operator new (all forms) is replaced, and the
// C allocation functions called from this program's own objects (Asio's recycling
// allocator, inlined here, calls std::aligned_alloc) are wrapped at link time
// (-Wl,--wrap=…, see meson.build). Allocations inside the measured window are also
// captured as backtraces, printed when a count is not zero.
//
// The same loop as a coroutine (co_spawn + use_awaitable) is measured and reported; it
// is expected to be allocation-free too (Asio recycles awaitable frames per thread).
//
// And allocation failure (fault injection through the same wrapped functions): a
// pool's construction (a recording one's included: it leaves its directory as it was),
// make_handle, async_close and an acquire refused busy, with each of their allocations
// failing in turn, either succeed or throw std::bad_alloc having changed nothing; and a
// queued close, each allocation failing in turn as its deadline comes or as the pool
// closes, completes exactly once (the sections at the end).
#include <gtest/gtest.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <execinfo.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unistd.h>

#include "fairpool/asio/pool.hpp"
#include "manual_clock.hpp"

// --- Counting -------------------------------------------------------------------------

namespace {

std::atomic<std::uint64_t> allocations{0};

// Backtraces of the first allocations while capturing.
constexpr int max_captured = 8;
constexpr int max_depth = 48;
std::atomic<bool> capturing{false};
std::atomic<int> captured{0};
void* captured_frames[max_captured][max_depth];
int captured_depth[max_captured];
thread_local bool in_hook = false;
// Each thread's own count: the pool's path (the io_context's thread) apart from other
// threads of the program (the flight recorder's writer, which may allocate).
thread_local std::uint64_t this_thread_allocations = 0;
thread_local bool measured_thread = false;

void count_allocation() noexcept {
    if (in_hook) return;  // the unwinder's own allocations are not the program's
    allocations.fetch_add(1, std::memory_order_relaxed);
    ++this_thread_allocations;
    if (!capturing.load(std::memory_order_relaxed) || !measured_thread) return;
    in_hook = true;
    const int at = captured.fetch_add(1, std::memory_order_relaxed);
    if (at < max_captured) captured_depth[at] = ::backtrace(captured_frames[at], max_depth);
    in_hook = false;
}

// backtrace() loads the unwinder on its first call: do that before any measurement.
const int unwinder_loaded = [] {
    void* frames[4];
    in_hook = true;
    const int n = ::backtrace(frames, 4);
    in_hook = false;
    return n;
}();

// Prints each distinct captured stack once, symbolized with addr2line when it is there
// (frames of this executable; a frame of a shared library is printed as is).
void print_captured() {
    const int n = std::min(captured.load(), max_captured);
    char exe[4096];
    const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    Dl_info self;
    const void* base = ::dladdr(reinterpret_cast<void*>(&print_captured), &self) ? self.dli_fbase : nullptr;
    for (int i = 0; i < n; ++i) {
        bool seen = false;
        for (int j = 0; j < i && !seen; ++j)
            seen = captured_depth[j] == captured_depth[i] &&
                   std::memcmp(captured_frames[j], captured_frames[i], sizeof(void*) * captured_depth[i]) == 0;
        if (seen) continue;
        std::fprintf(stderr, "--- an allocation in the measured window (stack %d of the first %d captured):\n", i + 1, n);
        std::string command = std::string("addr2line -Cfpi -e '") + exe + "'";
        bool any = false;
        for (int f = 0; f < captured_depth[i]; ++f) {
            Dl_info info;
            if (base && ::dladdr(captured_frames[i][f], &info) && info.dli_fbase == base) {
                any = true;
                char offset[32];
                // A return address: the call is the byte before.
                std::snprintf(offset, sizeof offset, " %#zx",
                              static_cast<std::size_t>(static_cast<char*>(captured_frames[i][f]) -
                                                       static_cast<char*>(info.dli_fbase) - 1));
                command += offset;
            }
        }
        std::fflush(stderr);
        if (!any || std::system((command + " 1>&2 2>/dev/null").c_str()) != 0)
            ::backtrace_symbols_fd(captured_frames[i], captured_depth[i], STDERR_FILENO);
    }
}

// Fault injection: while armed (failing_allocation, below), the allocation numbered
// failing_at on the arming thread, counted from 0 at arming, fails. Other threads'
// allocations, and the unwinder's, are never failed.
thread_local bool failing_armed = false;
thread_local std::uint64_t failing_seen = 0;
thread_local std::uint64_t failing_at = 0;
thread_local bool failing_injected = false;

bool fail_allocation() noexcept {
    if (in_hook || !failing_armed) return false;
    if (failing_seen++ != failing_at) return false;
    failing_injected = true;
    return true;
}

}  // namespace

#define FAIRPOOL_FAILING_ALLOCATION
#include "../support/counting_allocation.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;

constexpr std::uint64_t warm_up = 1'000;
constexpr std::uint64_t measured = 100'000;

// Opened and closed on the thread that runs the pool: count() is every thread's
// allocations meanwhile, this_thread() that thread's alone.
struct window {
    std::uint64_t at_start = 0;
    std::uint64_t at_end = 0;
    std::uint64_t here_at_start = 0;
    std::uint64_t here_at_end = 0;
    void open() {
        captured.store(0);
        measured_thread = true;
        here_at_start = this_thread_allocations;
        at_start = allocations.load();
        capturing.store(true);
    }
    void close() {
        at_end = allocations.load();
        here_at_end = this_thread_allocations;
        capturing.store(false);
        measured_thread = false;
    }
    [[nodiscard]] std::uint64_t count() const { return at_end - at_start; }
    [[nodiscard]] std::uint64_t this_thread() const { return here_at_end - here_at_start; }
};

using int_pool = pool<int>;

std::unique_ptr<int_pool> warm_pool(boost::asio::io_context& io) {
    pool_options o;
    o.max_slots = 2;
    o.min_slots = 2;
    auto p = std::make_unique<int_pool>(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 7; });
    io.run();  // prewarmed: both resources created
    io.restart();
    return p;
}

// The same, built from resource_hooks with a check and a reset hook that the settings
// never call (all health settings off), or call only past the test's end (a check after
// an hour idle, a keepalive every hour): a hook given but not due costs nothing.
std::unique_ptr<int_pool> warm_pool_with_hooks(boost::asio::io_context& io, bool checks_configured) {
    pool_options o;
    o.max_slots = 2;
    o.min_slots = 2;
    if (checks_configured) {
        o.check_after_idle = std::chrono::hours(1);
        o.keepalive_interval = std::chrono::hours(1);
    }
    resource_hooks<int> hooks{
        .create = []() -> boost::asio::awaitable<int> { co_return 7; },
        .check = [](int&) -> boost::asio::awaitable<bool> { co_return true; },
        .reset = [](int&) -> boost::asio::awaitable<bool> { co_return true; },
    };
    auto p = std::make_unique<int_pool>(io.get_executor(), o, std::move(hooks));
    // Not io.run(): the keepalive timer, armed an hour ahead, is outstanding work.
    while (p->stats().slots_idle < 2 && io.run_one() > 0) {
    }
    return p;
}

TEST(adapter_allocation, the_counter_sees_every_kind_of_allocation) {
    // Each pointer escapes, or the compiler may elide the allocation altogether.
    const auto escape = [](void* p) { asm volatile("" : : "g"(p) : "memory"); };
    const std::uint64_t before = allocations.load();
    int* i = new int(1);
    escape(i);
    delete i;
    void* p = std::aligned_alloc(64, 64);
    escape(p);
    std::free(p);
    p = std::malloc(8);
    escape(p);
    std::free(p);
    char* c = new (std::align_val_t(64)) char[64];
    escape(c);
    ::operator delete[](c, std::align_val_t(64));
    EXPECT_EQ(allocations.load() - before, 4u);
    EXPECT_GT(unwinder_loaded, 0);
}

// The callback loop: each completion handler releases its lease and starts the next.
struct callback_loop {
    int_pool* pool = nullptr;
    std::uint64_t done = 0;
    std::uint64_t errors = 0;
    window w;
};

struct next_cycle {
    callback_loop* loop;
    void operator()(error_code ec, lease<int> l) const {
        if (ec || !l || *l != 7) ++loop->errors;
        l.release();
        const std::uint64_t n = ++loop->done;
        if (n == warm_up) loop->w.open();
        if (n == warm_up + measured) loop->w.close();
        if (n < warm_up + measured) loop->pool->async_acquire(next_cycle{loop});
    }
};

TEST(adapter_allocation, callback_acquire_release_cycles_allocate_nothing_once_warm) {
    boost::asio::io_context io(1);
    auto pool = warm_pool(io);
    callback_loop loop;
    loop.pool = pool.get();
    // Started from inside the io_context, as every later acquire is.
    boost::asio::post(io, [&loop] { loop.pool->async_acquire(next_cycle{&loop}); });
    io.run();
    ASSERT_EQ(loop.done, warm_up + measured);
    EXPECT_EQ(loop.errors, 0u);
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.grants_immediate, warm_up + measured);
    EXPECT_EQ(s.spawns, 2u);  // nothing was retired or respawned
    std::printf("callback loop: %llu allocations in %llu warm cycles\n",
                static_cast<unsigned long long>(loop.w.count()), static_cast<unsigned long long>(measured));
    EXPECT_EQ(loop.w.count(), 0u);
    if (loop.w.count() != 0) print_captured();
}

TEST(adapter_allocation, hooks_that_are_never_due_allocate_nothing_once_warm) {
    for (const bool checks_configured : {false, true}) {
        boost::asio::io_context io(1);
        auto pool = warm_pool_with_hooks(io, checks_configured);
        callback_loop loop;
        loop.pool = pool.get();
        boost::asio::post(io, [&loop] { loop.pool->async_acquire(next_cycle{&loop}); });
        // The keepalive timer, armed an hour ahead, is outstanding work: run until the
        // loop is done instead of until the context runs dry.
        while (loop.done < warm_up + measured && io.run_one() > 0) {
        }
        ASSERT_EQ(loop.done, warm_up + measured);
        EXPECT_EQ(loop.errors, 0u);
        const pool_stats s = pool->stats();
        EXPECT_EQ(s.grants_immediate, warm_up + measured);
        EXPECT_EQ(s.checks_started, 0u);
        EXPECT_EQ(s.resets_started, 0u);
        std::printf("callback loop with hooks (checks %s): %llu allocations in %llu warm cycles\n",
                    checks_configured ? "configured, never due" : "off",
                    static_cast<unsigned long long>(loop.w.count()), static_cast<unsigned long long>(measured));
        EXPECT_EQ(loop.w.count(), 0u);
        if (loop.w.count() != 0) print_captured();
    }
}

// The flight recorder on: the actor copies each step into its preallocated ring, starts
// a segment (a snapshot into the ring) every 1,000 events, some 200 times in the
// measured cycles, and, when the writer falls behind, drops steps and starts over after
// the gap with a snapshot into the ring too. None of it allocates on the pool's thread.
// The writer thread formats and writes the files (and may allocate: it is not the
// pool's path); its allocations are reported, not pinned.
TEST(adapter_allocation, cycles_with_the_flight_recorder_on_allocate_nothing_on_the_pools_thread) {
    char path[] = "/tmp/fairpool-allocation-recording-XXXXXX";
    ASSERT_NE(::mkdtemp(path), nullptr);
    std::uint64_t segments = 0, gaps = 0;
    callback_loop loop;
    {
        boost::asio::io_context io(1);
        pool_options o;
        o.max_slots = 2;
        o.min_slots = 2;
        recorder_options r;
        r.directory = path;
        r.segment_events = 1'000;
        r.keep_segments = 2;
        o.recording = r;
        auto pool = std::make_unique<int_pool>(io.get_executor(), o, []() -> boost::asio::awaitable<int> { co_return 7; });
        io.run();
        io.restart();
        loop.pool = pool.get();
        boost::asio::post(io, [&loop] { loop.pool->async_acquire(next_cycle{&loop}); });
        io.run();
        ASSERT_EQ(loop.done, warm_up + measured);
        EXPECT_EQ(loop.errors, 0u);
        const auto status = pool->recording_status();
        ASSERT_TRUE(status);
        segments = status->segments_started;
        gaps = status->gaps;
    }
    std::filesystem::remove_all(path);
    std::printf("callback loop, recorder on: %llu allocations on the pool's thread, %llu on all threads, in %llu "
                "warm cycles; %llu segments, %llu gaps\n",
                static_cast<unsigned long long>(loop.w.this_thread()), static_cast<unsigned long long>(loop.w.count()),
                static_cast<unsigned long long>(measured), static_cast<unsigned long long>(segments),
                static_cast<unsigned long long>(gaps));
    EXPECT_GE(segments, 20u);  // rolled during the measured cycles (even if the writer never woke: 22)
    EXPECT_EQ(loop.w.this_thread(), 0u);
    if (loop.w.this_thread() != 0) print_captured();
}

// A handle capped at one lease (max_leases = 1) beside an idle slot: each completion
// starts the next acquire while it still holds its lease, so that acquire queues behind
// the cap (the handle leaves the rotation), then releases, which hands the slot to it
// (the handle rejoins): caps, per-handle statistics and the lease's block kept by the
// actor, without an allocation.
struct capped_loop {
    int_pool::handle_type handle;
    std::uint64_t done = 0;
    std::uint64_t errors = 0;
    std::uint64_t held_beside_cap = 0;  // acquires that found the handle at its cap
    window w;
};

struct next_capped_cycle {
    capped_loop* loop;
    void operator()(error_code ec, lease<int> l) const {
        if (ec || !l || *l != 7) ++loop->errors;
        const std::uint64_t n = ++loop->done;
        if (n == warm_up) loop->w.open();
        if (n == warm_up + measured) loop->w.close();
        if (n < warm_up + measured) {
            loop->handle.async_acquire(next_capped_cycle{loop});
            if (loop->handle.stats().leases_out == 1) ++loop->held_beside_cap;
        }
        l.release();
    }
};

TEST(adapter_allocation, cycles_of_a_capped_handle_queued_behind_its_cap_allocate_nothing_once_warm) {
    boost::asio::io_context io(1);
    auto pool = warm_pool(io);
    capped_loop loop;
    handle_options capped;
    capped.max_leases = 1;
    capped.name = "capped";
    loop.handle = pool->make_handle(capped);
    boost::asio::post(io, [&loop] { loop.handle.async_acquire(next_capped_cycle{&loop}); });
    io.run();
    ASSERT_EQ(loop.done, warm_up + measured);
    EXPECT_EQ(loop.errors, 0u);
    EXPECT_EQ(loop.held_beside_cap, warm_up + measured - 1);
    const pool_stats s = pool->stats();
    EXPECT_EQ(s.grants_after_wait, warm_up + measured - 1) << "the acquires did not queue behind the cap";
    EXPECT_EQ(s.spawns, 2u);
    const handle_stats h = loop.handle.stats();
    EXPECT_EQ(h.grants, warm_up + measured);
    EXPECT_EQ(h.leases_out, 0u);
    EXPECT_EQ(h.leases_out_max, 1u);
    std::printf("capped handle loop: %llu allocations in %llu warm cycles\n",
                static_cast<unsigned long long>(loop.w.count()), static_cast<unsigned long long>(measured));
    EXPECT_EQ(loop.w.count(), 0u);
    if (loop.w.count() != 0) print_captured();
}

TEST(adapter_allocation, coroutine_acquire_release_cycles_once_warm) {
    boost::asio::io_context io(1);
    auto pool = warm_pool(io);
    window w;
    std::uint64_t done = 0, errors = 0;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            for (std::uint64_t n = 1; n <= warm_up + measured; ++n) {
                lease<int> l = co_await pool->async_acquire(boost::asio::use_awaitable);
                if (!l || *l != 7) ++errors;
                l.release();
                done = n;
                if (n == warm_up) w.open();
            }
            w.close();
        },
        boost::asio::detached);
    io.run();
    ASSERT_EQ(done, warm_up + measured);
    EXPECT_EQ(errors, 0u);
    EXPECT_EQ(pool->stats().grants_immediate, warm_up + measured);
    std::printf("coroutine loop: %llu allocations in %llu warm cycles\n",
                static_cast<unsigned long long>(w.count()), static_cast<unsigned long long>(measured));
    EXPECT_EQ(w.count(), 0u);
    if (w.count() != 0) print_captured();
}

// --- Allocation failure ----------------------------------------------------------------
//
// A call that allocates before it changes any shared state either succeeds or throws
// std::bad_alloc having changed nothing: no abort, no leak (the ASan build), nothing
// left posted, the pool's counters as they were, and the io_context and its pools still
// serving and closing. Swept here: the call runs with its n-th allocation failing
// (counted from the start of the call, on the calling thread only), for n = 0, 1, 2, ...
// until it returns with no failure injected; after each failure the io_context is run
// and its pools checked.
//
// What is left out: a drain cannot stop half-way, so an allocation failing in one is
// fatal by design (actor.hpp: drain_or_die), and so is the post of a drain once the
// actor is scheduled (post_drain). The calls are made off the pool's executor (no
// thread runs the io_context meanwhile), so none drains inline: the one such
// allocation in them is the post of the new pool's start drain, which pool_state::start
// makes last, once nothing else can throw. A construction is therefore swept up to its
// last allocation, and a death test pins that this last one is that post.

constexpr std::uint64_t no_failure = std::numeric_limits<std::uint64_t>::max();

// Arms the fault injection for its lifetime: the allocation numbered `n` on this thread
// fails (none, if the call makes fewer).
class failing_allocation {
public:
    explicit failing_allocation(std::uint64_t n) noexcept {
        failing_seen = 0;
        failing_at = n;
        failing_injected = false;
        failing_armed = true;
    }
    failing_allocation(const failing_allocation&) = delete;
    failing_allocation& operator=(const failing_allocation&) = delete;
    ~failing_allocation() { failing_armed = false; }
};

struct attempt {
    bool threw = false;             // std::bad_alloc (anything else escapes: the test fails)
    bool injected = false;          // the failure was injected
    std::uint64_t allocations = 0;  // the call's, on this thread (a failed one included)
};

template <class Call>
attempt with_failing_allocation(std::uint64_t n, Call&& call) {
    attempt a;
    {
        failing_allocation failing(n);
        try {
            call();
        } catch (const std::bad_alloc&) {
            a.threw = true;
        }
    }
    a.injected = failing_injected;
    a.allocations = failing_seen;
    return a;
}

pool_options sweep_options() {
    pool_options o;
    o.max_slots = 2;
    o.min_slots = 1;
    return o;
}

resource_hooks<int> sweep_hooks() {
    return resource_hooks<int>{.create = []() -> boost::asio::awaitable<int> { co_return 7; }};
}

// One acquire through `source` (a pool or a handle) granted a resource, then released.
template <class Source>
bool serves(boost::asio::io_context& io, Source& source) {
    bool done = false, ok = false;
    source.async_acquire([&](error_code ec, lease<int> l) {
        done = true;
        ok = !ec && l && *l == 7;
    });
    io.restart();
    while (!done && io.run_one() > 0) {
    }
    return ok;
}

// Runs what is ready (what a completion left behind), so that a later poll finds only
// what came meanwhile.
void settle(boost::asio::io_context& io) {
    io.restart();
    io.poll();
}

bool closes(boost::asio::io_context& io, int_pool& p) {
    bool done = false, ok = false;
    p.async_close([&](error_code ec, close_report r) {
        done = true;
        ok = !ec && r.closed;
    });
    io.restart();
    while (!done && io.run_one() > 0) {
    }
    return ok;
}

// Sweeps the construction of a pool on a fresh io_context, on which `before` first does
// what it does (construct a pool, or nothing). Returns the allocation points swept.
template <class Before>
std::uint64_t sweep_construction(Before before) {
    const pool_options o = sweep_options();
    const resource_hooks<int> hooks = sweep_hooks();
    const auto construct = [&](std::optional<int_pool>& p, boost::asio::io_context& io) {
        p.emplace(io.get_executor(), o, hooks);
    };
    // Each attempt from the same start: a fresh io_context and what `before` puts on it.
    struct context {
        boost::asio::io_context io{1};
        std::optional<int_pool> earlier;
    };
    const auto fresh = [&] {
        auto c = std::make_unique<context>();
        before(c->io, c->earlier);
        return c;
    };
    // The earlier pool, if any, is untouched by a failed construction and still serves.
    const auto check_earlier = [](context& c, const pool_stats& before_attempt) {
        if (!c.earlier) return;
        EXPECT_EQ(c.earlier->stats(), before_attempt);
        EXPECT_TRUE(serves(c.io, *c.earlier));
        EXPECT_TRUE(closes(c.io, *c.earlier));
    };
    const auto stats_of = [](context& c) { return c.earlier ? c.earlier->stats() : pool_stats{}; };

    // Its allocations, with none failing: the same in the last two of three runs (the
    // first may count a first use, of the program's or of this thread's).
    std::uint64_t total = 0;
    for (int run = 0; run < 3; ++run) {
        auto c = fresh();
        std::optional<int_pool> p;
        const pool_stats earlier_stats = stats_of(*c);
        const attempt a = with_failing_allocation(no_failure, [&] { construct(p, c->io); });
        EXPECT_FALSE(a.threw);
        EXPECT_FALSE(a.injected);
        if (!p) return 0;
        EXPECT_EQ(p->diagnostics().drains_posted, 1u);  // the start drain, posted
        EXPECT_TRUE(serves(c->io, *p));
        EXPECT_TRUE(closes(c->io, *p));
        check_earlier(*c, earlier_stats);
        if (run == 2) {
            EXPECT_EQ(a.allocations, total) << "a first use was counted";
        }
        total = a.allocations;
    }
    if (total < 2) {
        ADD_FAILURE() << "the construction made " << total << " allocations";
        return 0;
    }

    // The last one is the start drain's post: its failure is fatal by design.
    const auto fail_the_last = [&] {
        auto c = fresh();
        std::optional<int_pool> p;
        (void)with_failing_allocation(total - 1, [&] { construct(p, c->io); });
    };
    EXPECT_DEATH(fail_the_last(), "a drain could be posted to the pool's executor");

    // Each one before it fails in turn.
    for (std::uint64_t n = 0; n + 1 < total; ++n) {
        auto c = fresh();
        std::optional<int_pool> p;
        settle(c->io);
        const pool_stats earlier_stats = stats_of(*c);
        const attempt a = with_failing_allocation(n, [&] { construct(p, c->io); });
        EXPECT_TRUE(a.threw) << "allocation " << n << " of " << total;
        EXPECT_TRUE(a.injected) << "allocation " << n << " of " << total;
        EXPECT_FALSE(p);
        if (p) return n;
        // Nothing left behind: no drain (a shutdown, say) posted, nothing to run.
        c->io.restart();
        EXPECT_EQ(c->io.poll(), 0u) << "allocation " << n << " of " << total;
        check_earlier(*c, earlier_stats);
        // The io_context still takes a pool, which serves and closes.
        construct(p, c->io);
        EXPECT_TRUE(serves(c->io, *p)) << "allocation " << n << " of " << total;
        EXPECT_TRUE(closes(c->io, *p)) << "allocation " << n << " of " << total;
    }

    // And past the last: the construction succeeds, no failure injected.
    auto c = fresh();
    std::optional<int_pool> p;
    const attempt a = with_failing_allocation(total, [&] { construct(p, c->io); });
    EXPECT_FALSE(a.threw);
    EXPECT_FALSE(a.injected);
    EXPECT_EQ(a.allocations, total);
    if (p) {
        EXPECT_TRUE(serves(c->io, *p));
        EXPECT_TRUE(closes(c->io, *p));
    }
    return total - 1;
}

// (a) The first pool of an io_context: it also creates the registry service (and the
// timer's services).
TEST(adapter_allocation_failure, a_pool_on_a_fresh_io_context_is_constructed_or_nothing_changes) {
    const std::uint64_t swept =
        sweep_construction([](boost::asio::io_context&, std::optional<int_pool>&) {});
    std::printf("construction on a fresh io_context: %llu allocation points swept (and the start drain's post)\n",
                static_cast<unsigned long long>(swept));
    EXPECT_GT(swept, 0u);
}

// (b) Beside a pool already on the io_context, warm (its resource created), whose
// counters a failed construction leaves as they were.
TEST(adapter_allocation_failure, a_second_pool_on_an_io_context_is_constructed_or_nothing_changes) {
    const std::uint64_t swept = sweep_construction([](boost::asio::io_context& io, std::optional<int_pool>& earlier) {
        earlier.emplace(io.get_executor(), sweep_options(), sweep_hooks());
        EXPECT_TRUE(serves(io, *earlier));
    });
    std::printf("construction beside a pool: %llu allocation points swept (and the start drain's post)\n",
                static_cast<unsigned long long>(swept));
    EXPECT_GT(swept, 0u);
}

// (c) A pool that records (pool_options::recording) into a directory: a construction
// that throws leaves that directory as it was. Each allocation of the construction
// fails in turn (but the last, the start drain's post: fatal, pinned by (a)), with the
// recording's directory not there yet, and with an earlier recording in it; after each
// failure the scratch directory holds exactly what it held before (no directory made,
// no segment file, the earlier recording not moved into previous/). (The recorder's
// writer thread, which writes the files, has been joined when the constructor throws.)
using tree = std::map<std::string, std::string>;  // relative path -> contents ("/" for a directory)

tree tree_of(const std::filesystem::path& root) {
    tree t;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
        const std::string name = entry.path().lexically_relative(root).string();
        if (entry.is_directory()) {
            t[name] = "/";
        } else {
            std::ifstream in(entry.path(), std::ios::binary);
            t[name] = std::string(std::istreambuf_iterator<char>(in), {});
        }
    }
    return t;
}

std::uint64_t sweep_recording_construction(bool earlier_recording) {
    char scratch[] = "/tmp/fairpool-allocation-construction-XXXXXX";
    if (::mkdtemp(scratch) == nullptr) {
        ADD_FAILURE() << "mkdtemp";
        return 0;
    }
    const std::filesystem::path root = scratch;
    const std::filesystem::path dir = root / "recording";
    pool_options o = sweep_options();
    recorder_options r;
    r.directory = dir;
    o.recording = r;
    const auto set_up = [&] {
        std::filesystem::remove_all(dir);
        if (earlier_recording) {
            std::filesystem::create_directory(dir);
            std::ofstream(dir / "segment-00000000.trace") << "an earlier run's recording\n";
        }
        return tree_of(root);
    };
    const auto construct = [&](std::optional<int_pool>& p, boost::asio::io_context& io) {
        p.emplace(io.get_executor(), o, sweep_hooks());
    };

    // Its allocations, with none failing: the same in the last two of three runs. The
    // pool records: its first segment file is there once it is gone.
    std::uint64_t total = 0;
    for (int run = 0; run < 3; ++run) {
        set_up();
        attempt a;
        {
            boost::asio::io_context io(1);
            std::optional<int_pool> p;
            a = with_failing_allocation(no_failure, [&] { construct(p, io); });
            EXPECT_FALSE(a.threw);
            if (!p) return 0;
            EXPECT_TRUE(serves(io, *p));
            EXPECT_TRUE(closes(io, *p));
        }  // the pool's state, and its recorder, gone with the io_context
        const tree after = tree_of(root);
        EXPECT_EQ(after.count("recording/segment-00000000.trace"), 1u);
        if (earlier_recording) {
            EXPECT_EQ(after.count("recording/previous/segment-00000000.trace"), 1u);
        }
        if (run == 2) {
            EXPECT_EQ(a.allocations, total) << "a first use was counted";
        }
        total = a.allocations;
    }
    std::uint64_t n = 0;
    for (; n + 1 < total; ++n) {
        const tree before = set_up();
        boost::asio::io_context io(1);
        std::optional<int_pool> p;
        const attempt a = with_failing_allocation(n, [&] { construct(p, io); });
        EXPECT_TRUE(a.threw) << "allocation " << n << " of " << total;
        EXPECT_TRUE(a.injected) << "allocation " << n << " of " << total;
        if (p) break;
        EXPECT_EQ(tree_of(root), before) << "allocation " << n << " of " << total
                                         << " failed: the construction that threw left the directory changed";
        io.restart();
        EXPECT_EQ(io.poll(), 0u) << "allocation " << n << " of " << total;
    }
    std::filesystem::remove_all(root);
    return n;
}

TEST(adapter_allocation_failure, a_recording_pool_is_constructed_or_its_directory_is_left_as_it_was) {
    for (const bool earlier : {false, true}) {
        const std::uint64_t swept = sweep_recording_construction(earlier);
        std::printf("construction of a recording pool (%s): %llu allocation points swept\n",
                    earlier ? "an earlier recording in its directory" : "its directory not there yet",
                    static_cast<unsigned long long>(swept));
        EXPECT_GT(swept, 0u);
    }
}

// (d) make_handle, with a name too long for the short-string buffer (so it allocates).
TEST(adapter_allocation_failure, make_handle_makes_a_handle_or_nothing_changes) {
    boost::asio::io_context io(1);
    int_pool pool(io.get_executor(), sweep_options(), sweep_hooks());
    auto first = pool.make_handle();
    ASSERT_TRUE(serves(io, first));
    handle_options options;
    options.weight = 3;
    options.name = "a tenant whose name does not fit a short string";
    int_pool::handle_type made;
    std::uint64_t n = 0;
    for (;; ++n) {
        ASSERT_LT(n, 1'000u) << "make_handle never succeeded";
        settle(io);
        const pool_stats before = pool.stats();
        const attempt a = with_failing_allocation(n, [&] { made = pool.make_handle(options); });
        if (!a.threw) {
            EXPECT_FALSE(a.injected) << "allocation " << n << " failed, yet make_handle returned";
            break;
        }
        EXPECT_TRUE(a.injected);
        EXPECT_FALSE(made);
        EXPECT_EQ(pool.stats(), before);
        io.restart();
        EXPECT_EQ(io.poll(), 0u);
        EXPECT_TRUE(serves(io, first));
    }
    std::printf("make_handle: %llu allocation points swept\n", static_cast<unsigned long long>(n));
    EXPECT_GT(n, 0u);
    ASSERT_TRUE(made);
    EXPECT_EQ(made.id(), first.id() + 1) << "a failed make_handle took a handle id";
    EXPECT_EQ(made.name(), options.name);
    EXPECT_TRUE(serves(io, made));
    EXPECT_EQ(made.stats().grants, 1u);
    first.reset();
    made.reset();
    EXPECT_TRUE(closes(io, pool));
}


// --- async_close under allocation failure ---------------------------------------------
//
// async_close allocates its waiter (the handler's operation, the work it counts, a node
// of the waiters' list) and, for a deadline, a timer and its wait, and for a handler
// with a cancellation slot its cancellation handler: each allocation fails in turn. Either the call throws std::bad_alloc having changed nothing (no shutdown
// requested: an open pool still grants an acquire; no handler of the call ever runs,
// nothing left to run; a retry closes), or it succeeds and its handler runs exactly
// once. Swept on an open pool, beside another close that waits (a lease is out), and on
// a pool already closed; with and without a deadline, and with a deadline and a
// cancellation slot (left with no handler when the call threw or its close completed). On a pool not yet closed the
// call's last allocation is the post of the drain that feeds the shutdown (nothing may
// throw after it asked for the shutdown): fatal by design, pinned by a death test.

enum class before_close { nothing, another_close_waits, pool_closed };

struct close_call {
    int completions = 0;
    error_code ec;
    close_report report;
    auto handler() {
        return [this](error_code e, close_report r) {
            ++completions;
            ec = e;
            report = r;
        };
    }
};

// Runs the io_context until `done` (or nothing is left to run for 10 s).
template <class Done>
void run_until(boost::asio::io_context& io, Done done) {
    io.restart();
    while (!done() && io.run_one_for(std::chrono::seconds(10)) > 0) {
    }
}

struct close_context {
    close_call earlier, swept, retry;  // first: they outlive the io_context, which may hold their handlers
    boost::asio::cancellation_signal swept_signal;  // the swept call's, when it has a slot
    boost::asio::io_context io{1};
    std::optional<int_pool> pool;
    int_pool::lease_type held;  // another_close_waits: keeps the pool from closing
};

// The sweep's start: a pool on a fresh io_context, warm, and what `before` says.
std::unique_ptr<close_context> close_start(before_close before) {
    auto c = std::make_unique<close_context>();
    c->pool.emplace(c->io.get_executor(), sweep_options(), sweep_hooks());
    EXPECT_TRUE(serves(c->io, *c->pool));
    switch (before) {
        case before_close::nothing: break;
        case before_close::another_close_waits: {
            c->pool->async_acquire([&c = *c](error_code, int_pool::lease_type l) { c.held = std::move(l); });
            run_until(c->io, [&] { return static_cast<bool>(c->held); });
            EXPECT_TRUE(c->held);
            c->pool->async_close(c->earlier.handler());
            settle(c->io);  // the shutdown is fed; the pool waits for the lease
            EXPECT_EQ(c->earlier.completions, 0);
            break;
        }
        case before_close::pool_closed: EXPECT_TRUE(closes(c->io, *c->pool)); break;
    }
    settle(c->io);
    return c;
}

// How the close under test is made: no deadline; a deadline (an hour away); a deadline
// and a cancellation slot.
enum class close_kind { no_deadline, deadline, deadline_and_slot };

void close_now(close_context& c, close_call& call, close_kind kind) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    switch (kind) {
        case close_kind::no_deadline: return c.pool->async_close(call.handler());
        case close_kind::deadline: return c.pool->async_close(deadline, call.handler());
        case close_kind::deadline_and_slot:
            return c.pool->async_close(deadline,
                                       boost::asio::bind_cancellation_slot(c.swept_signal.slot(), call.handler()));
    }
}

// Lets the pool close (the lease held back, if any) and runs until `call` completed.
void close_completes(close_context& c, const close_call& call) {
    c.held.release();
    run_until(c.io, [&] { return call.completions > 0; });
    settle(c.io);
}

// Returns the allocation points swept (the shutdown drain's post, if any, not counted).
std::uint64_t sweep_close(before_close before, close_kind kind) {
    // Its allocations, with none failing: the same in two runs; whether it posted a drain.
    std::uint64_t total = 0;
    bool posts_drain = false;
    for (int run = 0; run < 2; ++run) {
        auto c = close_start(before);
        const std::uint64_t drains = c->pool->diagnostics().drains_posted;
        const attempt a = with_failing_allocation(no_failure, [&] { close_now(*c, c->swept, kind); });
        EXPECT_FALSE(a.threw);
        EXPECT_FALSE(a.injected);
        if (run == 1) {
            EXPECT_EQ(a.allocations, total);
            EXPECT_EQ(c->pool->diagnostics().drains_posted - drains == 1, posts_drain);
        }
        total = a.allocations;
        posts_drain = c->pool->diagnostics().drains_posted - drains == 1;
        close_completes(*c, c->swept);
        EXPECT_EQ(c->swept.completions, 1);
        EXPECT_FALSE(c->swept_signal.slot().has_handler()) << "a completed close left its cancellation handler";
        EXPECT_FALSE(c->swept.ec);
        EXPECT_TRUE(c->swept.report.closed);
        EXPECT_EQ(c->earlier.completions, before == before_close::another_close_waits ? 1 : 0);
    }
    if (total == 0) {
        ADD_FAILURE() << "the close made no allocation";
        return 0;
    }
    // A drain posted asking for the shutdown: then nothing may throw after it, so it is
    // the last allocation, and its failure is fatal by design (actor.hpp: post_drain).
    const std::uint64_t swept = posts_drain ? total - 1 : total;
    if (posts_drain) {
        const auto fail_the_last = [&] {
            auto c = close_start(before);
            (void)with_failing_allocation(total - 1, [&] { close_now(*c, c->swept, kind); });
        };
        EXPECT_DEATH(fail_the_last(), "a drain could be posted to the pool's executor");
    }

    for (std::uint64_t n = 0; n < swept; ++n) {
        auto c = close_start(before);
        const attempt a = with_failing_allocation(n, [&] { close_now(*c, c->swept, kind); });
        EXPECT_TRUE(a.threw) << "allocation " << n << " of " << total;
        EXPECT_TRUE(a.injected) << "allocation " << n << " of " << total;
        // Nothing changed: nothing to run (no drain posted, no timer fired), the other
        // close still waiting, an open pool still serving.
        EXPECT_EQ(c->swept.completions, 0) << "allocation " << n << " of " << total;
        EXPECT_FALSE(c->swept_signal.slot().has_handler()) << "allocation " << n << " of " << total;
        c->io.restart();
        EXPECT_EQ(c->io.poll(), 0u) << "allocation " << n << " of " << total;
        EXPECT_EQ(c->earlier.completions, 0) << "allocation " << n << " of " << total;
        if (before == before_close::nothing) {
            EXPECT_TRUE(serves(c->io, *c->pool)) << "allocation " << n << " of " << total << ": the pool was shut";
        }
        // A retry closes, its handler once; the failed call's never.
        close_now(*c, c->retry, kind == close_kind::no_deadline ? kind : close_kind::deadline);
        close_completes(*c, c->retry);
        EXPECT_EQ(c->retry.completions, 1) << "allocation " << n << " of " << total;
        EXPECT_TRUE(c->retry.report.closed) << "allocation " << n << " of " << total;
        EXPECT_EQ(c->earlier.completions, before == before_close::another_close_waits ? 1 : 0);
        EXPECT_EQ(c->swept.completions, 0) << "allocation " << n << " of " << total << ": a call that threw completed";
    }
    return swept;
}

void report_close_sweep(const char* what, before_close before) {
    for (const close_kind kind : {close_kind::no_deadline, close_kind::deadline, close_kind::deadline_and_slot}) {
        const std::uint64_t swept = sweep_close(before, kind);
        std::printf("async_close %s, %s: %llu allocation points swept\n", what,
                    kind == close_kind::no_deadline ? "no deadline"
                    : kind == close_kind::deadline  ? "with a deadline"
                                                    : "with a deadline and a cancellation slot",
                    static_cast<unsigned long long>(swept));
        EXPECT_GT(swept, 0u);
    }
}

TEST(adapter_allocation_failure, async_close_on_an_open_pool_closes_once_or_changes_nothing) {
    report_close_sweep("on an open pool", before_close::nothing);
}

TEST(adapter_allocation_failure, async_close_beside_a_waiting_close_closes_once_or_changes_nothing) {
    report_close_sweep("beside a waiting close", before_close::another_close_waits);
}

TEST(adapter_allocation_failure, async_close_on_a_closed_pool_completes_once_or_changes_nothing) {
    report_close_sweep("on a closed pool", before_close::pool_closed);
}

// --- A queued close's completion under allocation failure ------------------------------
//
// A close that async_close queued completes exactly once, whatever allocation fails
// after its initiating function returned: with error::timeout when its deadline comes
// first, with success when the pool closes first. (Its completion's storage is reserved
// in async_close, as its timer's wait: closing.hpp.) Swept: the run of the io_context
// that delivers those completions, with each of its allocations on this thread failing
// in turn; then every close has completed once, with its error and its report. On a
// pool whose Clock the test moves by hand (manual_clock.hpp), so that nothing but the
// test decides when a deadline comes.

using manual_pool = pool<int, manual_clock, manual_wait_traits>;

struct manual_close_context {
    std::deque<close_call> calls;  // first: they outlive the io_context, which may hold their handlers
    boost::asio::io_context io{1};
    std::optional<manual_pool> pool;
    manual_pool::lease_type held;  // keeps the pool from closing
};

// A warm pool of one resource, leased out (held).
std::unique_ptr<manual_close_context> manual_close_start() {
    auto c = std::make_unique<manual_close_context>();
    pool_options o;
    o.max_slots = 1;
    o.min_slots = 1;
    c->pool.emplace(c->io.get_executor(), o, sweep_hooks());
    c->pool->async_acquire([&c = *c](error_code, manual_pool::lease_type l) { c.held = std::move(l); });
    run_until(c->io, [&] { return static_cast<bool>(c->held); });
    EXPECT_TRUE(c->held);
    return c;
}

std::uint64_t completions_of(const std::deque<close_call>& calls) {
    std::uint64_t n = 0;
    for (const close_call& call : calls) n += static_cast<std::uint64_t>(call.completions);
    return n;
}

// Deadlines: two closes with a deadline an hour away and one without, queued behind the
// held lease. The window: the clock moved two hours, the io_context run until both
// deadlines' closes completed (a std::bad_alloc out of run() is caught, and the
// io_context run again, no allocation failing). Then the lease comes back and the pool
// closes. Returns the window's attempt.
attempt deadlines_come(std::uint64_t n) {
    auto c = manual_close_start();
    const auto deadline = manual_clock::now() + std::chrono::hours(1);
    close_call& first = c->calls.emplace_back();
    close_call& second = c->calls.emplace_back();
    close_call& no_deadline = c->calls.emplace_back();
    c->pool->async_close(deadline, first.handler());
    c->pool->async_close(deadline, second.handler());
    c->pool->async_close(no_deadline.handler());
    settle(c->io);  // the shutdown fed; the pool waits for the lease
    EXPECT_EQ(completions_of(c->calls), 0u);
    const auto both_came = [&] { return first.completions > 0 && second.completions > 0; };
    const attempt a = with_failing_allocation(n, [&] {
        manual_clock::advance(std::chrono::hours(2));
        run_until(c->io, both_came);
    });
    EXPECT_EQ(a.threw, a.injected) << "allocation " << n;
    if (a.threw) run_until(c->io, both_came);
    for (close_call* call : {&first, &second}) {
        EXPECT_EQ(call->completions, 1) << "allocation " << n << " failed: a close whose deadline came";
        EXPECT_EQ(call->ec, make_error_code(error::timeout)) << "allocation " << n;
        EXPECT_FALSE(call->report.closed) << "allocation " << n;
        EXPECT_EQ(call->report.leases_out, 1u) << "allocation " << n;
    }
    EXPECT_EQ(no_deadline.completions, 0) << "allocation " << n;
    // The lease back: the pool closes; the close without a deadline completes with
    // success, the others never again.
    c->held.release();
    run_until(c->io, [&] { return no_deadline.completions > 0; });
    settle(c->io);
    EXPECT_EQ(no_deadline.completions, 1) << "allocation " << n;
    EXPECT_FALSE(no_deadline.ec) << "allocation " << n;
    EXPECT_TRUE(no_deadline.report.closed) << "allocation " << n;
    EXPECT_EQ(first.completions, 1) << "allocation " << n;
    EXPECT_EQ(second.completions, 1) << "allocation " << n;
    return a;
}

TEST(adapter_allocation_failure, closes_whose_deadline_comes_complete_once_timed_out) {
    std::uint64_t n = 0;
    for (;; ++n) {
        ASSERT_LT(n, 100u) << "the deadlines' completions never ran without a failure";
        if (!deadlines_come(n).injected) break;
    }
    std::printf("closes whose deadline came: %llu allocation points swept\n", static_cast<unsigned long long>(n));
}

// The pool closes: three closes waiting (one with a deadline ten hours away), the lease
// back. The window: the drain that closes the pool (fed the last resource's
// retirement), alone. To tell it apart, the pool runs on an executor of the test's own
// over the io_context, which numbers each function it runs: with an executor that is
// not an io_context's, every drain is posted, a function of its own (actor.hpp). A dry
// run finds the number of the closing drain (the function after which no slot is
// retiring any more); each attempt fails an allocation in it. An allocation failing in a
// drain is fatal by design (actor.hpp), so each attempt runs in a process of its own,
// whose exit status says whether every close completed once, with success.

// The function runs of the window_executor, numbered from 1; the run numbered arm_run
// runs with the allocation numbered arm_allocation failing, and window_attempt gets
// what happened in it.
std::uint64_t window_runs = 0;
std::uint64_t arm_run = 0;
std::uint64_t arm_allocation = no_failure;
attempt window_attempt;
std::function<std::uint64_t()> retiring_now;  // the pool's retiring slots, if set
std::uint64_t closing_run = 0;                 // the run after which retiring went from 1 to 0

struct window_executor {
    boost::asio::io_context* io;

    template <class F>
    struct numbered {
        F f;
        void operator()() {
            const std::uint64_t me = ++window_runs;
            const std::uint64_t retiring_before = retiring_now ? retiring_now() : 0;
            if (me == arm_run) {
                window_attempt = with_failing_allocation(arm_allocation, [&] { f(); });
            } else {
                f();
            }
            if (retiring_before == 1 && retiring_now && retiring_now() == 0 && closing_run == 0) closing_run = me;
        }
    };

    template <class F>
    void execute(F f) const {
        boost::asio::post(*io, numbered<std::decay_t<F>>{std::move(f)});
    }
    [[nodiscard]] boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
        return *io;
    }
    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
        return boost::asio::execution::blocking.never;
    }
    [[nodiscard]] window_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }
    friend bool operator==(const window_executor& a, const window_executor& b) noexcept { return a.io == b.io; }
};

// Returns whether every close completed once, with success.
bool pool_closes(std::uint64_t run, std::uint64_t n) {
    window_runs = 0;
    arm_run = run;
    arm_allocation = n;
    window_attempt = attempt{};
    closing_run = 0;
    std::deque<close_call> calls;
    boost::asio::io_context io(1);
    pool_options o;
    o.max_slots = 1;
    o.min_slots = 1;
    std::optional<manual_pool> p;
    p.emplace(boost::asio::any_io_executor(window_executor{&io}), o, sweep_hooks());
    retiring_now = [&p] { return p->stats().slots_retiring; };
    manual_pool::lease_type held;
    p->async_acquire([&](error_code, manual_pool::lease_type l) { held = std::move(l); });
    run_until(io, [&] { return static_cast<bool>(held); });
    close_call& first = calls.emplace_back();
    close_call& second = calls.emplace_back();
    close_call& far_deadline = calls.emplace_back();
    p->async_close(first.handler());
    p->async_close(second.handler());
    p->async_close(manual_clock::now() + std::chrono::hours(10), far_deadline.handler());
    settle(io);
    bool ok = held && completions_of(calls) == 0;
    const auto all_done = [&] { return completions_of(calls) == 3; };
    held.release();
    bool threw = false;
    try {
        run_until(io, all_done);
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    if (threw) run_until(io, all_done);
    settle(io);
    ok = ok && threw == window_attempt.threw && window_attempt.threw == window_attempt.injected;
    for (const close_call& call : calls) ok = ok && call.completions == 1 && !call.ec && call.report.closed;
    if (!ok)
        std::fprintf(stderr, "allocation %llu of run %llu failed: the closes completed %d, %d and %d times\n",
                     static_cast<unsigned long long>(n), static_cast<unsigned long long>(run), first.completions,
                     second.completions, far_deadline.completions);
    p.reset();
    retiring_now = nullptr;
    return ok;
}

TEST(adapter_allocation_failure, closes_waiting_when_the_pool_closes_complete_once_with_success) {
    // The closing drain's number, then its allocations with none failing: the same twice.
    ASSERT_TRUE(pool_closes(0, no_failure));
    const std::uint64_t run = closing_run;
    ASSERT_GT(run, 0u) << "no drain closed the pool";
    ASSERT_TRUE(pool_closes(run, no_failure));
    EXPECT_EQ(closing_run, run);
    EXPECT_FALSE(window_attempt.injected);
    const std::uint64_t total = window_attempt.allocations;
    ASSERT_TRUE(pool_closes(run, no_failure));
    EXPECT_EQ(window_attempt.allocations, total);
    for (std::uint64_t n = 0; n < total; ++n) {
        EXPECT_EXIT(
            {
                const bool ok = pool_closes(run, n) && window_attempt.injected;
                std::fflush(nullptr);
                std::_Exit(ok ? 0 : 1);
            },
            ::testing::ExitedWithCode(0), "")
            << "allocation " << n << " of " << total << " in the drain that closed the pool failed";
    }
    std::printf("closes waiting when the pool closes: %llu allocation points swept in the closing drain\n",
                static_cast<unsigned long long>(total));
}

// --- Acquires refused busy under allocation failure ------------------------------------
//
// An acquire refused error::busy (admission full) posts its completion, which
// allocates. If that fails the initiating function throws std::bad_alloc, and the
// refusal is not counted (stats().rejected_busy, the handle's rejected_busy) and its
// handler never runs; otherwise it is counted once and its handler runs once.

struct busy_tally {
    std::atomic<int> completions{0};
    std::atomic<bool> busy{false};
    auto handler() {
        return [this](error_code ec, int_pool::lease_type) {
            busy = ec == make_error_code(error::busy);
            ++completions;
        };
    }
};

pool_options admitting_two() {
    pool_options o = sweep_options();
    o.max_waiters = 1;
    o.mailbox_capacity = 1;  // L = 2 acquires outstanding at most
    return o;
}

// From off the pool's executor: refused on the caller's thread, its handler posted.
TEST(adapter_allocation_failure, an_acquire_refused_busy_is_counted_once_or_changes_nothing) {
    std::deque<busy_tally> tallies;  // they outlive the io_context
    boost::asio::io_context io(1);
    int_pool pool(io.get_executor(), admitting_two(), sweep_hooks());
    ASSERT_TRUE(serves(io, pool));
    auto h = pool.make_handle();
    busy_tally& first = tallies.emplace_back();
    busy_tally& second = tallies.emplace_back();
    h.async_acquire(first.handler());  // admitted; no drain runs until the end
    h.async_acquire(second.handler());
    std::uint64_t expected_busy = 0;
    for (const bool through_handle : {true, false}) {
        std::uint64_t n = 0;
        for (;; ++n) {
            ASSERT_LT(n, 100u) << "the acquire never returned";
            const std::uint64_t pool_busy = pool.stats().rejected_busy;
            const std::uint64_t handle_busy = h.stats().rejected_busy;
            busy_tally& t = tallies.emplace_back();
            const attempt a = with_failing_allocation(n, [&] {
                if (through_handle) h.async_acquire(t.handler());
                else pool.async_acquire(t.handler());
            });
            if (!a.threw) {
                EXPECT_FALSE(a.injected) << "allocation " << n << " failed, yet the acquire returned";
                ++expected_busy;
                break;
            }
            EXPECT_TRUE(a.injected);
            EXPECT_EQ(pool.stats().rejected_busy, pool_busy) << "allocation " << n << ": a refusal not delivered counted";
            EXPECT_EQ(h.stats().rejected_busy, handle_busy) << "allocation " << n << ": a refusal not delivered counted";
        }
        std::printf("an acquire refused busy (through %s): %llu allocation points swept\n",
                    through_handle ? "a handle" : "the pool", static_cast<unsigned long long>(n));
        EXPECT_GT(n, 0u);
        EXPECT_EQ(pool.stats().rejected_busy, expected_busy);
        EXPECT_EQ(h.stats().rejected_busy, 1u);  // the handle's one
    }
    settle(io);
    EXPECT_EQ(first.completions, 1);
    EXPECT_EQ(second.completions, 1);
    // Each refusal that returned completed once, busy; one that threw never.
    std::uint64_t refused = 0;
    for (auto it = tallies.begin() + 2; it != tallies.end(); ++it) {
        EXPECT_LE(it->completions, 1);
        if (it->completions == 1) {
            ++refused;
            EXPECT_TRUE(it->busy);
        }
    }
    EXPECT_EQ(refused, expected_busy);
    EXPECT_EQ(tallies.back().completions, 1);
    EXPECT_TRUE(closes(io, pool));
}

// An allocator Asio takes as it is (std::allocator<void> it swaps for its per-thread
// recycling cache, which may serve a post without allocating): each allocation counted.
template <class T>
struct plain_allocator {
    using value_type = T;
    plain_allocator() noexcept = default;
    template <class U>
    plain_allocator(const plain_allocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
    friend bool operator==(const plain_allocator&, const plain_allocator&) noexcept { return true; }
};

// On the pool's executor with the actor not idle (a drain posted, not yet run): refused
// by the admission in the initiating function, through the acquire's operation, whose
// completion is posted to the handler's executor: here a thread pool's, where the post
// allocates (an io_context's would take the operation itself, allocating nothing). The
// handler's allocator makes both allocations (the operation, the post's) real ones.
TEST(adapter_allocation_failure, an_acquire_on_the_pools_executor_refused_busy_is_counted_once_or_changes_nothing) {
    boost::asio::thread_pool elsewhere(1);
    std::uint64_t n = 0;
    for (;; ++n) {
        ASSERT_LT(n, 100u) << "the acquire never returned";
        busy_tally first, second, t;
        boost::asio::io_context io(1);
        int_pool pool(io.get_executor(), admitting_two(), sweep_hooks());
        ASSERT_TRUE(serves(io, pool));
        settle(io);  // the actor idle
        auto h = pool.make_handle();
        attempt a;
        std::uint64_t pool_busy = 0, handle_busy = 0;
        bool ran = false;
        boost::asio::post(io, [&] {
            ran = true;
            pool_busy = pool.stats().rejected_busy;
            handle_busy = h.stats().rejected_busy;
            a = with_failing_allocation(n, [&] {
                h.async_acquire(boost::asio::bind_allocator(plain_allocator<void>(),
                                                            boost::asio::bind_executor(elsewhere, t.handler())));
            });
        });
        h.async_acquire(first.handler());  // admitted (L = 2), their drain posted after the handler above
        h.async_acquire(second.handler());
        settle(io);
        ASSERT_TRUE(ran);
        boost::asio::post(elsewhere, boost::asio::use_future).get();  // what it was given has run
        if (!a.threw) {
            EXPECT_FALSE(a.injected) << "allocation " << n << " failed, yet the acquire returned";
            EXPECT_EQ(pool.stats().rejected_busy, pool_busy + 1);
            EXPECT_EQ(h.stats().rejected_busy, handle_busy + 1);
            EXPECT_EQ(t.completions, 1);
            EXPECT_TRUE(t.busy);
            EXPECT_TRUE(closes(io, pool));
            break;
        }
        EXPECT_TRUE(a.injected);
        EXPECT_EQ(pool.stats().rejected_busy, pool_busy) << "allocation " << n << ": a refusal not delivered counted";
        EXPECT_EQ(h.stats().rejected_busy, handle_busy) << "allocation " << n << ": a refusal not delivered counted";
        EXPECT_EQ(t.completions, 0) << "allocation " << n;
        EXPECT_EQ(first.completions, 1);
        EXPECT_EQ(second.completions, 1);
        EXPECT_TRUE(closes(io, pool));
    }
    std::printf("an acquire on the pool's executor refused busy: %llu allocation points swept\n",
                static_cast<unsigned long long>(n));
    EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace fairpool::testing
