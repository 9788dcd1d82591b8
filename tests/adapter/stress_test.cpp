// The Boost.Asio adapter under load from many threads at once.
//
// Four threads run the io_context; producer threads outside it issue acquires (plain
// callbacks through the pool, and through weighted handles that are replaced from time
// to time, which deregisters their queued waiters), some with short timeouts, some
// cancelled per operation (the cancellation_signal is emitted on the strand the handler
// is bound to, as Asio requires), some released dirty, released from arbitrary threads
// (the handler's, the producer's, a dedicated releaser thread, a later io_context task).
//
// Checked: every acquire completes exactly once; a (slot, lease) is never delivered
// twice and a slot never has two holders at once; a dirty resource is never handed out
// again; the counters the handlers saw agree with the scheduler's; after async_close
// every slot is back and every resource created was destroyed; nothing keeps the pool's
// state alive. The test's own bookkeeping uses relaxed atomics only, so that it adds no
// happens-before edge that could hide a missing one in the adapter from ThreadSanitizer
// (the resources carry a plain counter that each holder bumps); the main thread is
// woken through a mutex only at the few moments it waits for (half the grants, enough
// closed rejections, no lease out).
//
// Nothing here sleeps or asserts on time: threads wait on condition variables (a wait
// that lasts 120 s gives up with a report instead of hanging), a cancellation comes
// "later" after a few hops through its strand rather than after a timer, and the pool
// runs on the real steady_clock only for its short acquire timeouts, whose outcome
// (granted or timed out) the checks accept either way.
//
// A third run closes the pool halfway through, while producers still issue acquires
// and leases are out: later acquires are rejected `closed`, and the close completes
// once every lease is back.
//
// The recording test runs a smaller stress with the flight recorder on (pool_options::
// recording, small segments: the run splits into many), then replays every segment with
// `fairpool-replay --check` (FAIRPOOL_REPLAY names it) and the directory as a chain,
// and, in process, every segment from its own snapshot, and the events of all of them
// with model::lockstep from the start: same effects, no breach.
//
// The health run records the same load with checks before reuse, keepalive and resets on
// release turned on, on the 4 io_context threads: checks and resets touch the resource's
// plain counter like a holder (ThreadSanitizer sees any missing order), some come back
// dead or failed, and such a resource must never be handed out again.
//
// FAIRPOOL_STRESS_CYCLES and FAIRPOOL_RECORDING_CYCLES scale the runs (sanitizer
// builds set them lower in meson.build).
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "fairpool/asio/pool.hpp"
#include "fairpool/model/lockstep.hpp"
#include "fairpool/trace/read.hpp"
#include "recording_check.hpp"

namespace fairpool::testing {
namespace {

using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto relaxed = std::memory_order_relaxed;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::strtoull(v, nullptr, 10);
}

// --- The resource ------------------------------------------------------------------

struct resource_counters {
    std::atomic<std::uint64_t> next_id{1};
    std::atomic<std::uint64_t> created{0};
    std::atomic<std::uint64_t> destroyed{0};
    std::atomic<std::uint64_t> closed{0};
};

class stress_resource {
public:
    explicit stress_resource(resource_counters* c) : id_(c->next_id.fetch_add(1, relaxed)), counters_(c) {
        counters_->created.fetch_add(1, relaxed);
    }
    stress_resource(stress_resource&& o) noexcept
        : id_(o.id_), counters_(std::exchange(o.counters_, nullptr)), uses_(o.uses_) {}
    stress_resource& operator=(stress_resource&&) = delete;
    ~stress_resource() {
        if (counters_) counters_->destroyed.fetch_add(1, relaxed);
    }
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
    // Plain memory, read and written by whoever holds the lease: the adapter must order
    // one holder's accesses before the next holder's.
    void use() noexcept { ++uses_; }
    [[nodiscard]] std::uint64_t uses() const noexcept { return uses_; }

private:
    std::uint64_t id_;
    resource_counters* counters_;
    std::uint64_t uses_ = 0;
};

using stress_pool = pool<stress_resource>;
using stress_lease = lease<stress_resource>;
using stress_handle = handle<stress_resource>;

// --- The harness ---------------------------------------------------------------------

struct stress_config {
    std::uint64_t cycles = 200'000;  // acquire → grant → release cycles: acquires are issued until this many granted
    unsigned io_threads = 4;
    unsigned producers = 3;
    std::uint32_t window = 40;  // acquires outstanding per producer
    std::uint32_t max_slots = 6;
    std::optional<recorder_options> recording;
    // Close the pool halfway through, while producers still issue acquires and leases
    // are out: queued and later acquires are rejected `closed`, the close completes once
    // every lease is back.
    bool close_under_load = false;
    // check_after_idle (1 ns: nearly every grant of an idle slot is checked),
    // keepalive_interval (200 us, 2 at once), reset_on_release; every 4th check dead and
    // every 40th reset failed.
    bool health = false;
    std::uint64_t seed = 1;
};

enum outcome_kind { ok, timeout, aborted, deregistered, saturated, busy, closed, other, outcome_kinds };

outcome_kind classify(const error_code& ec) {
    if (!ec) return ok;
    if (ec == boost::asio::error::operation_aborted) return aborted;
    if (ec == make_error_code(error::timeout)) return timeout;
    if (ec == make_error_code(error::deregistered)) return deregistered;
    if (ec == make_error_code(error::saturated)) return saturated;
    if (ec == make_error_code(error::busy)) return busy;
    if (ec == make_error_code(error::closed)) return closed;
    return other;
}

const char* const outcome_names[] = {"ok", "timeout", "aborted", "deregistered", "saturated", "busy", "closed", "other"};

struct stress_report {
    std::uint64_t issued = 0;
    std::array<std::uint64_t, outcome_kinds> outcomes{};
    std::uint64_t cancels_requested = 0;
    std::uint64_t dirty_releases = 0;
    std::uint64_t handles_replaced = 0;
    std::array<std::uint64_t, 4> release_routes{};  // handler, producer, releaser thread, posted
    pool_stats stats;
    close_report closing;
    bool close_completed = false;
    error_code close_ec;
    std::uint64_t created = 0, destroyed = 0, closed_resources = 0;
    bool state_expired = false;
    std::chrono::milliseconds elapsed{};

    std::string describe() const {
        std::ostringstream o;
        o << issued << " acquires in " << elapsed.count() << " ms:";
        for (int k = 0; k < outcome_kinds; ++k) o << " " << outcome_names[k] << "=" << outcomes[k];
        o << "\ncancels requested=" << cancels_requested << " dirty releases=" << dirty_releases
          << " handles replaced=" << handles_replaced << " releases by handler/producer/releaser/posted="
          << release_routes[0] << "/" << release_routes[1] << "/" << release_routes[2] << "/" << release_routes[3]
          << "\nresources created=" << created << " destroyed=" << destroyed << " closed=" << closed_resources
          << " grants immediate=" << stats.grants_immediate << " after wait=" << stats.grants_after_wait;
        return o.str();
    }
};

class stress_harness {
public:
    explicit stress_harness(const stress_config& c)
        : config_(c),
          capacity_(4 * c.cycles + 1024),
          completions_(capacity_),
          lease_deliveries_(capacity_ + 1),
          dirty_(capacity_ + 4096),
          holders_(c.max_slots) {
        for (unsigned i = 0; i < 8; ++i) strands_.push_back(boost::asio::make_strand(io_));
    }

    stress_report run() {
        stress_report report;
        const auto started = clock_type::now();
        auto work = boost::asio::make_work_guard(io_);
        std::vector<std::thread> runners;
        for (unsigned i = 0; i < config_.io_threads; ++i) runners.emplace_back([this] { io_.run(); });

        std::weak_ptr<const void> lifetime;
        {
            pool_options o;
            o.max_slots = config_.max_slots;
            o.min_slots = 2;
            o.max_waiters = 128;
            o.max_waiters_per_handle = 14;  // a busy handle is sometimes saturated
            o.max_uses = 40;  // retirements and respawns under load too
            o.spawn_backoff_initial = std::chrono::microseconds(100);
            o.spawn_backoff_max = std::chrono::milliseconds(1);
            o.mailbox_capacity = 64;
            o.retire_grace = std::chrono::milliseconds(100);
            o.recording = config_.recording;
            if (config_.health) {
                o.check_after_idle = std::chrono::nanoseconds(1);
                o.keepalive_interval = std::chrono::microseconds(200);
                o.max_concurrent_checks = 2;
                o.reset_on_release = true;
            }
            auto* counters = &counters_;
            stress_pool pool(io_.get_executor(), o,
                             resource_hooks<stress_resource>{
                                 .create = [counters]() -> boost::asio::awaitable<stress_resource> {
                                     co_return stress_resource(counters);
                                 },
                                 .close = [counters](stress_resource&) -> boost::asio::awaitable<void> {
                                     counters->closed.fetch_add(1, relaxed);
                                     co_return;
                                 },
                                 .check = [this](stress_resource& r) { return verdict(r, 0); },
                                 .reset = [this](stress_resource& r) { return verdict(r, 1); },
                             });
            lifetime = pool.diagnostics().lifetime;
            pool_ = &pool;

            releaser_ = std::thread([this] { run_releaser(); });
            producers_.resize(config_.producers);
            for (auto& p : producers_) p = std::make_unique<producer>();
            std::vector<std::thread> producer_threads;
            for (unsigned p = 0; p < config_.producers; ++p) producer_threads.emplace_back([this, p] { run_producer(p); });

            // Completed by async_close's handler, on an io_context thread.
            auto closing = std::make_shared<std::promise<std::pair<error_code, close_report>>>();
            auto closed = closing->get_future();
            const auto close = [&pool, closing] {
                pool.async_close(clock_type::now() + std::chrono::seconds(60), [closing](error_code ec, close_report r) {
                    closing->set_value({ec, r});
                });
            };
            if (config_.close_under_load) {
                wait_until([this] { return granted_.load(relaxed) >= config_.cycles / 2; }, "half the grants");
                close();
                // Producers keep issuing into the closing pool for a while.
                wait_until([this] { return outcomes_[outcome_kind::closed].load(relaxed) >= closed_rejections_awaited; },
                           "acquires rejected as closed");
                stop_.store(true, relaxed);
            }
            for (auto& t : producer_threads) t.join();

            // Every acquire has completed (each producer waited for its own); now every
            // lease must come back: from the releaser thread and the posted releases.
            wait_until([this] { return leases_out_.load(relaxed) == 0; }, "every lease released");
            {
                std::lock_guard lock(releaser_mutex_);
                releaser_stop_ = true;
            }
            releaser_cv_.notify_all();
            releaser_.join();

            if (!config_.close_under_load) close();
            if (closed.wait_for(std::chrono::seconds(90)) != std::future_status::ready) give_up("async_close");
            std::tie(report.close_ec, report.closing) = closed.get();
            report.close_completed = true;
            report.stats = pool.stats();
            pool_ = nullptr;
        }  // the pool object goes; the handles went with their producers
        work.reset();
        for (auto& t : runners) t.join();
        producers_.clear();  // no handler can touch them any more
        report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);

        report.issued = issued_.load(relaxed);
        for (int k = 0; k < outcome_kinds; ++k) report.outcomes[k] = outcomes_[k].load(relaxed);
        report.cancels_requested = cancels_requested_.load(relaxed);
        report.dirty_releases = dirty_releases_.load(relaxed);
        report.handles_replaced = handles_replaced_.load(relaxed);
        for (int r = 0; r < 4; ++r) report.release_routes[r] = release_routes_[r].load(relaxed);
        report.created = counters_.created.load(relaxed);
        report.destroyed = counters_.destroyed.load(relaxed);
        report.closed_resources = counters_.closed.load(relaxed);
        report.state_expired = lifetime.expired();
        return report;
    }

    // Every acquire completed exactly once (operation ids that did not).
    std::vector<std::uint64_t> not_completed_once() const {
        std::vector<std::uint64_t> bad;
        for (std::uint64_t i = 0; i < issued_.load(relaxed); ++i)
            if (completions_[i].load(relaxed) != 1) bad.push_back(i);
        return bad;
    }

    std::uint64_t failures() const { return failures_.load(relaxed); }
    std::string first_failure() const {
        std::lock_guard lock(failure_mutex_);
        return first_failure_;
    }

private:
    // A lease on its way back, with what the test knows about it.
    struct held {
        stress_lease lease;
        std::uint32_t slot = 0;
    };

    // A producer's window of outstanding acquires and its inbox of leases to release.
    struct producer {
        std::mutex mutex;
        std::condition_variable cv;
        std::uint32_t inflight = 0;
        std::deque<held> inbox;
    };

    // One cancellable acquire: its signal and the strand its handler is bound to (the
    // signal is emitted there, serialised with the delivery that clears the slot).
    struct cancel_context {
        explicit cancel_context(boost::asio::strand<boost::asio::io_context::executor_type> s) : strand(std::move(s)) {}
        boost::asio::strand<boost::asio::io_context::executor_type> strand;
        boost::asio::cancellation_signal signal;
    };

    // Emits the cancellation after `hops` more trips through the context's strand: later
    // than at once, by a number of handlers rather than by time.
    static void emit_after(std::shared_ptr<cancel_context> ctx, boost::asio::cancellation_type type, unsigned hops) {
        boost::asio::post(ctx->strand, [ctx, type, hops]() mutable {
            if (hops == 0) return ctx->signal.emit(type);
            emit_after(std::move(ctx), type, hops - 1);
        });
    }

    void fail(const std::string& what) {
        if (failures_.fetch_add(1, relaxed) == 0) {
            std::lock_guard lock(failure_mutex_);
            first_failure_ = what;
        }
    }

    // A wait that cannot end means an operation or a lease was lost: the run cannot be
    // wound down (pending operations hold work on the io_context), so say what was still
    // out and abort, rather than hang until the test's timeout. `done` reads the relaxed
    // counters; whoever makes it true calls progress().
    template <class Predicate>
    void wait_until(Predicate done, const char* what) {
        std::unique_lock lock(progress_mutex_);
        if (!progress_cv_.wait_for(lock, std::chrono::seconds(120), done)) give_up(what);
    }

    // Wakes wait_until (the lock orders this after a waiter's check of its predicate).
    void progress() {
        { std::lock_guard lock(progress_mutex_); }
        progress_cv_.notify_all();
    }

    [[noreturn]] void give_up(const char* what) {
        std::fprintf(stderr, "stress: gave up waiting for %s: issued=%llu granted=%llu leases out=%lld\n", what,
                     static_cast<unsigned long long>(issued_.load()), static_cast<unsigned long long>(granted_.load()),
                     static_cast<long long>(leases_out_.load()));
        int shown = 0;
        for (std::uint64_t i = 0; i < issued_.load() && shown < 10; ++i)
            if (completions_[i].load() != 1) {
                std::fprintf(stderr, "  operation %llu completed %d times\n", static_cast<unsigned long long>(i),
                             completions_[i].load());
                ++shown;
            }
        if (pool_) {
            const pool_stats st = pool_->stats();
            std::fprintf(stderr, "  pool: queued=%llu leased=%llu idle=%llu spawning=%llu retiring=%llu drains=%llu\n",
                         static_cast<unsigned long long>(st.queued_waiters),
                         static_cast<unsigned long long>(st.slots_leased),
                         static_cast<unsigned long long>(st.slots_idle),
                         static_cast<unsigned long long>(st.slots_spawning),
                         static_cast<unsigned long long>(st.slots_retiring),
                         static_cast<unsigned long long>(pool_->diagnostics().drains_posted));
        }
        std::fprintf(stderr, "  first failure: %s\n", first_failure().c_str());
        std::abort();
    }

    static std::mt19937_64& rng() {
        thread_local std::mt19937_64 engine(std::hash<std::thread::id>()(std::this_thread::get_id()));
        return engine;
    }
    static bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng()) < p; }
    static std::uint64_t below(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng()); }

    // --- Completion: runs on an io_context thread (or a strand) ---------------------------

    void on_complete(unsigned p, std::uint64_t op, error_code ec, stress_lease l) {
        if (completions_[op].fetch_add(1, relaxed) != 0) fail("operation " + std::to_string(op) + " completed twice");
        const outcome_kind kind = classify(ec);
        const std::uint64_t seen = outcomes_[kind].fetch_add(1, relaxed) + 1;
        if (kind == closed && seen == closed_rejections_awaited) progress();
        if (kind == other) fail("operation " + std::to_string(op) + " completed with " + ec.message());
        if (kind == ok) {
            accept(p, std::move(l));
        } else if (l) {
            fail("operation " + std::to_string(op) + " failed (" + ec.message() + ") but carried a lease");
        }
        producer& pr = *producers_[p];
        {
            std::lock_guard lock(pr.mutex);
            --pr.inflight;
        }
        pr.cv.notify_one();
    }

    // A check's (kind 0) or a reset's (kind 1) answer: false for every 4th check and
    // every 40th reset (counted with relaxed atomics: no order between the hooks). A
    // resource that fails is never to be handed out again: marked like a dirty one.
    boost::asio::awaitable<bool> verdict(stress_resource& r, std::size_t kind) {
        r.use();  // plain memory: ordered after its last holder, before its next
        const bool passed = (hook_calls_[kind].fetch_add(1, relaxed) + 1) % (kind == 0 ? 4 : 40) != 0;
        if (!passed) {
            if (r.id() >= dirty_.size()) fail("more resources than the test expected");
            else dirty_[r.id()].store(1, relaxed);
        }
        co_return passed;
    }

    void accept(unsigned p, stress_lease l) {
        if (!l) return fail("a grant without a lease");
        const std::uint32_t slot = l.slot();
        if (slot >= config_.max_slots) return fail("slot " + std::to_string(slot) + " out of range");
        if (l.id() == 0 || l.id() >= lease_deliveries_.size()) return fail("lease id out of range");
        if (lease_deliveries_[l.id()].fetch_add(1, relaxed) != 0)
            fail("lease " + std::to_string(l.id()) + " of slot " + std::to_string(slot) + " delivered twice");
        if (const std::uint64_t other = holders_[slot].exchange(l.id(), relaxed); other != 0)
            fail("slot " + std::to_string(slot) + " delivered with lease " + std::to_string(l.id()) +
                 " while lease " + std::to_string(other) + " still held it");
        leases_out_.fetch_add(1, relaxed);
        if (granted_.fetch_add(1, relaxed) + 1 == config_.cycles / 2) progress();
        const std::uint64_t id = l->id();
        if (id >= dirty_.size()) return fail("more resources than the test expected");
        if (dirty_[id].load(relaxed)) fail("dirty resource " + std::to_string(id) + " handed out again");
        l->use();
        if (chance(0.03)) {
            dirty_[id].store(1, relaxed);
            l.mark_dirty();
            dirty_releases_.fetch_add(1, relaxed);
        }
        held h{std::move(l), slot};
        switch (below(4)) {
            case 0:  // here, on the handler's thread
                give_back(h, 0);
                break;
            case 1: {  // by the producer
                producer& pr = *producers_[p];
                {
                    std::lock_guard lock(pr.mutex);
                    pr.inbox.push_back(std::move(h));
                }
                pr.cv.notify_one();
                break;
            }
            case 2: {  // by the releaser thread
                {
                    std::lock_guard lock(releaser_mutex_);
                    releaser_inbox_.push_back(std::move(h));
                }
                releaser_cv_.notify_one();
                break;
            }
            default:  // later, by whichever io_context thread runs it
                boost::asio::post(io_, [this, h = std::move(h)]() mutable { give_back(h, 3); });
                break;
        }
    }

    void give_back(held& h, int route) {
        h.lease->use();
        const std::uint64_t id = h.lease.id();
        if (holders_[h.slot].exchange(0, relaxed) != id)
            fail("slot " + std::to_string(h.slot) + " changed holder while lease " + std::to_string(id) + " held it");
        h.lease.release();
        if (h.lease) fail("a released lease still holds its slot");
        release_routes_[route].fetch_add(1, relaxed);
        if (leases_out_.fetch_sub(1, relaxed) == 1) progress();
    }

    void run_releaser() {
        std::unique_lock lock(releaser_mutex_);
        for (;;) {
            releaser_cv_.wait(lock, [this] { return releaser_stop_ || !releaser_inbox_.empty(); });
            if (releaser_inbox_.empty()) return;
            std::deque<held> batch;
            batch.swap(releaser_inbox_);
            lock.unlock();
            for (auto& h : batch) give_back(h, 2);
            batch.clear();
            lock.lock();
        }
    }

    // --- Producers: outside the io_context ----------------------------------------------

    // Issues acquires until enough were granted (every producer stops at the next check).
    void run_producer(unsigned p) {
        producer& pr = *producers_[p];
        std::vector<stress_handle> handles;
        for (std::uint32_t w = 1; w <= 4; ++w) handles.push_back(pool_->make_handle(w));
        auto release_inbox = [&](std::unique_lock<std::mutex>& lock) {
            std::deque<held> batch;
            batch.swap(pr.inbox);
            lock.unlock();
            for (auto& h : batch) give_back(h, 1);
            batch.clear();
            lock.lock();
        };
        while (!stop_.load(relaxed) && (config_.close_under_load || granted_.load(relaxed) < config_.cycles)) {
            const std::uint64_t op = next_op_.fetch_add(1, relaxed);
            if (op >= capacity_) {
                fail("too few grants: " + std::to_string(capacity_) + " acquires issued");
                break;
            }
            {
                std::unique_lock lock(pr.mutex);
                const auto deadline = clock_type::now() + std::chrono::seconds(120);
                while (pr.inflight >= config_.window || !pr.inbox.empty()) {
                    if (!pr.inbox.empty()) {
                        release_inbox(lock);
                        continue;
                    }
                    if (!pr.cv.wait_until(lock, deadline, [&] { return pr.inflight < config_.window || !pr.inbox.empty(); }))
                        give_up("room in a producer's window");
                }
                ++pr.inflight;
            }
            issue(p, op, handles);
            if (below(600) == 0) {  // a handle goes, deregistering its queued waiters
                const std::size_t k = below(handles.size());
                const std::uint32_t weight = static_cast<std::uint32_t>(1 + below(4));
                if (chance(0.5)) handles[k] = pool_->make_handle(weight);  // move-assignment deregisters
                else {
                    handles.erase(handles.begin() + static_cast<std::ptrdiff_t>(k));  // destruction
                    handles.push_back(pool_->make_handle(weight));
                }
                handles_replaced_.fetch_add(1, relaxed);
            }
        }
        std::unique_lock lock(pr.mutex);
        const auto deadline = clock_type::now() + std::chrono::seconds(120);
        while (pr.inflight > 0 || !pr.inbox.empty()) {
            if (!pr.inbox.empty()) release_inbox(lock);
            else if (!pr.cv.wait_until(lock, deadline, [&] { return pr.inflight == 0 || !pr.inbox.empty(); }))
                give_up("a producer's acquires to complete");
        }
        lock.unlock();
        handles.clear();
    }

    void issue(unsigned p, std::uint64_t op, std::vector<stress_handle>& handles) {
        issued_.fetch_add(1, relaxed);
        auto callback = [this, p, op](error_code ec, stress_lease l) { on_complete(p, op, ec, std::move(l)); };
        // Mostly the pool's acquire_timeout only; else a try (only if one is idle now) or
        // a short timeout.
        enum { plain, try_now, timed } kind = plain;
        std::chrono::nanoseconds timeout{};
        if (chance(0.15)) {
            static constexpr std::chrono::nanoseconds timeouts[] = {
                std::chrono::microseconds(20), std::chrono::microseconds(200), std::chrono::milliseconds(2)};
            const std::uint64_t pick = below(4);
            if (pick == 0) kind = try_now;
            else kind = timed, timeout = timeouts[pick - 1];
        }
        stress_handle* h = chance(0.3) ? nullptr : &handles[below(handles.size())];
        auto start = [&](auto&& token) {
            if (h) {
                if (kind == try_now) h->async_try_acquire(std::move(token));
                else if (kind == timed) h->async_acquire(timeout, std::move(token));
                else h->async_acquire(std::move(token));
            } else {
                if (kind == try_now) pool_->async_try_acquire(std::move(token));
                else if (kind == timed) pool_->async_acquire(timeout, std::move(token));
                else pool_->async_acquire(std::move(token));
            }
        };
        if (!chance(0.12)) return start(std::move(callback));

        auto ctx = std::make_shared<cancel_context>(strands_[below(strands_.size())]);
        cancels_requested_.fetch_add(1, relaxed);
        start(boost::asio::bind_cancellation_slot(
            ctx->signal.slot(),
            boost::asio::bind_executor(ctx->strand, [this, ctx, callback](error_code ec, stress_lease l) {
                if (!ctx->strand.running_in_this_thread()) fail("a strand-bound handler ran off its strand");
                callback(ec, std::move(l));
            })));
        static constexpr boost::asio::cancellation_type types[] = {boost::asio::cancellation_type::terminal,
                                                                   boost::asio::cancellation_type::partial,
                                                                   boost::asio::cancellation_type::total};
        const auto type = types[below(3)];
        emit_after(std::move(ctx), type, chance(0.5) ? 0 : static_cast<unsigned>(1 + below(64)));
    }

    const stress_config config_;
    const std::uint64_t capacity_;  // operation ids available
    boost::asio::io_context io_;
    std::vector<boost::asio::strand<boost::asio::io_context::executor_type>> strands_;
    stress_pool* pool_ = nullptr;
    resource_counters counters_;

    std::vector<std::atomic<std::uint8_t>> completions_;       // by operation id
    std::vector<std::atomic<std::uint8_t>> lease_deliveries_;  // by lease id
    std::vector<std::atomic<std::uint8_t>> dirty_;             // by resource id
    std::vector<std::atomic<std::uint64_t>> holders_;          // by slot: the lease holding it, 0 if none
    std::array<std::atomic<std::uint64_t>, outcome_kinds> outcomes_{};
    std::atomic<std::uint64_t> next_op_{0}, issued_{0}, granted_{0};
    std::atomic<std::uint64_t> cancels_requested_{0}, dirty_releases_{0}, handles_replaced_{0};
    std::array<std::atomic<std::uint64_t>, 2> hook_calls_{};  // checks, resets
    std::atomic<std::int64_t> leases_out_{0};
    std::atomic<bool> stop_{false};
    std::array<std::atomic<std::uint64_t>, 4> release_routes_{};
    static constexpr std::uint64_t closed_rejections_awaited = 2'000;
    std::mutex progress_mutex_;
    std::condition_variable progress_cv_;

    std::vector<std::unique_ptr<producer>> producers_;
    std::thread releaser_;
    std::mutex releaser_mutex_;
    std::condition_variable releaser_cv_;
    std::deque<held> releaser_inbox_;
    bool releaser_stop_ = false;

    std::atomic<std::uint64_t> failures_{0};
    mutable std::mutex failure_mutex_;
    std::string first_failure_;
};

// The checks common to both tests.
void expect_clean_run(const stress_harness& h, const stress_report& r, bool closed_under_load = false) {
    SCOPED_TRACE(r.describe());
    EXPECT_EQ(h.failures(), 0u) << "first failure: " << h.first_failure();
    const auto bad = h.not_completed_once();
    EXPECT_TRUE(bad.empty()) << bad.size() << " operations did not complete exactly once, the first: " << bad.front();

    // Closed, and every slot back.
    ASSERT_TRUE(r.close_completed) << "async_close did not complete";
    EXPECT_FALSE(r.close_ec) << r.close_ec.message();
    EXPECT_TRUE(r.closing.closed);
    EXPECT_EQ(r.closing.leases_out, 0u);
    EXPECT_EQ(r.closing.waiters_queued, 0u);
    EXPECT_EQ(r.stats.slots_leased, 0u);
    EXPECT_EQ(r.stats.slots_spawning, 0u);
    EXPECT_EQ(r.stats.slots_retiring, 0u);
    EXPECT_EQ(r.stats.slots_idle, 0u);
    EXPECT_EQ(r.stats.queued_waiters, 0u);
    EXPECT_GT(r.created, 0u);
    EXPECT_EQ(r.destroyed, r.created);
    EXPECT_TRUE(r.state_expired) << "the pool's state outlived the pool, its handles and its leases";

    // The handlers' view agrees with the scheduler's.
    std::uint64_t completed = 0;
    for (auto n : r.outcomes) completed += n;
    EXPECT_EQ(completed, r.issued);
    EXPECT_EQ(r.stats.acquires + r.outcomes[busy], r.issued);
    EXPECT_EQ(r.stats.rejected_busy, r.outcomes[busy]);
    EXPECT_EQ(r.stats.grants, r.outcomes[ok]);
    EXPECT_EQ(r.stats.grants_immediate + r.stats.grants_after_wait, r.outcomes[ok]);
    EXPECT_EQ(r.stats.rejected_timeout, r.outcomes[timeout]);
    EXPECT_EQ(r.stats.rejected_cancelled, r.outcomes[aborted]);
    EXPECT_EQ(r.stats.rejected_deregistered, r.outcomes[deregistered]);
    EXPECT_EQ(r.stats.rejected_saturated, r.outcomes[saturated]);
    EXPECT_EQ(r.stats.rejected_closed, r.outcomes[closed]);
    if (closed_under_load) EXPECT_GE(r.outcomes[closed], 2'000u);
    else EXPECT_EQ(r.outcomes[closed], 0u) << "nothing was issued after the close";
    EXPECT_EQ(r.stats.retired_dirty, r.dirty_releases);

    // The run exercised what it meant to.
    EXPECT_GT(r.outcomes[aborted], 0u);
    EXPECT_GT(r.outcomes[timeout], 0u);
    EXPECT_GT(r.dirty_releases, 0u);
    for (auto n : r.release_routes) EXPECT_GT(n, 0u);
}

TEST(adapter_stress, many_threads_acquire_cancel_time_out_and_release) {
    stress_config c;
    c.cycles = env_or("FAIRPOOL_STRESS_CYCLES", 200'000);
    stress_harness h(c);
    const stress_report r = h.run();
    std::printf("%s\n", r.describe().c_str());
    expect_clean_run(h, r);
    EXPECT_GE(r.outcomes[ok], c.cycles);
    if (r.outcomes[deregistered] == 0) std::printf("note: no waiter was queued on a handle when it went\n");
}

TEST(adapter_stress, closing_under_load_rejects_the_rest_and_waits_for_every_lease) {
    stress_config c;
    c.cycles = env_or("FAIRPOOL_STRESS_CYCLES", 200'000) / 4;
    c.close_under_load = true;
    stress_harness h(c);
    const stress_report r = h.run();
    std::printf("%s\n", r.describe().c_str());
    expect_clean_run(h, r, true);
    EXPECT_GE(r.outcomes[ok], c.cycles / 2);
}

// --- Recording ---------------------------------------------------------------------------

// Runs the load with the flight recorder writing into a directory, in segments of a
// quarter of the cycles (some 8 to 12 segments), then checks the recording: each segment
// in process from its own snapshot, all of them in lockstep with the reference model from
// the start, and with the tool, segment by segment and as a chain.
void expect_recording_replays_identically(stress_config c, stress_report& report) {
    scratch_directory directory;
    recorder_options r;
    r.directory = directory.path();
    r.segment_events = std::max<std::uint64_t>(c.cycles / 4, 1);
    r.keep_segments = 1000;    // all of them: the chain from segment 0
    r.ring_bytes = 1U << 25;  // the whole run fits even if the writer never woke: no gap
    c.recording = r;
    stress_harness h(c);
    report = h.run();
    const stress_report& run = report;
    std::printf("%s\n", run.describe().c_str());
    expect_clean_run(h, run);
    EXPECT_GE(run.outcomes[ok], c.cycles);
    // The pool's state is gone (expect_clean_run): the recorder's writer has joined.

    auto started = clock_type::now();
    const auto files = segment_files(directory.path());
    ASSERT_GE(files.size(), 4u);
    model::lockstep machines(read_segment(files.front()).config, 1);
    std::size_t events = 0, effects = 0;
    for (std::size_t i = 0; i < files.size(); ++i) {
        SCOPED_TRACE(files[i].string());
        const trace::trace t = read_segment(files[i]);
        ASSERT_TRUE(t.segment);
        EXPECT_EQ(t.segment->number, i);
        EXPECT_EQ(t.segment->events_before, events);
        EXPECT_FALSE(t.gap);
        if (i + 1 < files.size()) {
            EXPECT_EQ(t.steps.size(), r.segment_events);
        }
        replay_segment(t, files[i].string());
        for (const trace::step& s : t.steps) {
            const auto outcome = machines.step(s.event);
            ASSERT_FALSE(outcome.breach) << files[i] << ":" << s.line << ": " << *outcome.breach;
            ASSERT_FALSE(s.error) << files[i] << ":" << s.error_line << ": the actor fed an invalid event";
            ASSERT_EQ(outcome.error, core::event_error::ok) << files[i] << ":" << s.line;
            std::vector<core::effect> recorded;
            for (const auto& e : s.effects) recorded.push_back(e.effect);
            ASSERT_EQ(model::describe(*outcome.effects), model::describe(recorded)) << files[i] << ":" << s.line;
            effects += recorded.size();
        }
        events += t.steps.size();
    }
    EXPECT_GT(events, c.cycles);
    EXPECT_GT(effects, c.cycles);
    const core::stats replayed = machines.core().counters();
    EXPECT_EQ(replayed.acquires, run.stats.acquires);
    EXPECT_EQ(replayed.grants_immediate + replayed.grants_after_wait, run.outcomes[ok]);
    const auto ms = [](clock_type::duration d) {
        return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    std::printf("recording: %zu segments, %zu events, %zu effects; read, restored and lockstep in %lld ms\n",
                files.size(), events, effects, ms(clock_type::now() - started));

    const std::string tool = replay_tool();
    if (tool.empty()) GTEST_SKIP() << "FAIRPOOL_REPLAY does not name fairpool-replay";
    started = clock_type::now();
    for (const auto& f : files) expect_replays_identically(tool, f);
    const auto [status, printed] = run_replay_check(tool, directory.path());
    std::printf("fairpool-replay --check, each segment and the chain, in %lld ms: %s",
                ms(clock_type::now() - started), printed.c_str());
    EXPECT_EQ(status, 0) << printed;
    EXPECT_NE(printed.find(": ok,"), std::string::npos) << printed;
}

TEST(adapter_stress, a_recording_of_a_multithreaded_run_replays_identically) {
    stress_config c;
    c.cycles = env_or("FAIRPOOL_RECORDING_CYCLES", 20'000);
    stress_report r;
    expect_recording_replays_identically(c, r);
}

TEST(adapter_stress, a_recording_with_checks_and_resets_on_many_threads_replays_identically) {
    stress_config c;
    c.cycles = env_or("FAIRPOOL_RECORDING_CYCLES", 20'000) / 2;
    c.health = true;
    c.window = 3;  // 9 outstanding acquires for 6 slots: some wait, some slots go idle and stale
    stress_report r;
    expect_recording_replays_identically(c, r);
    std::printf("checks %llu: %llu alive, %llu dead; resets %llu, %llu failed\n",
                static_cast<unsigned long long>(r.stats.checks_started),
                static_cast<unsigned long long>(r.stats.checks_passed),
                static_cast<unsigned long long>(r.stats.checks_failed),
                static_cast<unsigned long long>(r.stats.resets_started),
                static_cast<unsigned long long>(r.stats.resets_failed));
    EXPECT_GT(r.stats.checks_passed, 0u);
    EXPECT_GT(r.stats.checks_failed, 0u);
    EXPECT_GT(r.stats.resets_started, 0u);
    EXPECT_GT(r.stats.resets_failed, 0u);
    EXPECT_EQ(r.stats.slots_checking, 0u);
    EXPECT_EQ(r.stats.slots_resetting, 0u);
}

}  // namespace
}  // namespace fairpool::testing
