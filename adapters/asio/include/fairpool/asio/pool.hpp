#pragma once
// fairpool::pool<Resource>: a fair, bounded pool of resources for Boost.Asio.
//
//   boost::asio::io_context io;
//   fairpool::pool<connection> pool(io.get_executor(), {.max_slots = 8},
//       []() -> boost::asio::awaitable<connection> { co_return co_await connect(); },
//       [](connection& c) -> boost::asio::awaitable<void> { co_await c.async_quit(); });
//   // or, with health checks and resets (hooks.hpp):
//   fairpool::pool<connection> pool(io.get_executor(), options, fairpool::resource_hooks<connection>{
//       .create = ..., .close = ..., .check = ..., .reset = ...});
//   auto lease = co_await pool.async_acquire();            // waits at most acquire_timeout
//   auto tenant = pool.make_handle();                       // the unit of fairness
//   auto other = co_await tenant.async_acquire(std::chrono::seconds(1));
//   lease->query(...);                                      // released when it goes
//
// Every initiating function takes any completion token, boost::asio::deferred if none
// is given (so `co_await pool.async_acquire()` in an awaitable coroutine); completions
// are void(error_code, lease<Resource>) for acquires and void(error_code, close_report)
// for closes. The pool stays open while a pool or handle object exists (pool objects
// are copies of one shared pool); dropping the last one shuts it down (leases may
// outlive it).
//
// The pool reads time from its Clock (std::chrono::steady_clock by default; any steady
// std::chrono clock) and waits with boost::asio::basic_waitable_timer<Clock, WaitTraits>:
// timeouts stay std::chrono durations, a close deadline is a Clock::time_point. A test
// can give a clock it advances by hand (tests/adapter/manual_clock.hpp).
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include "fairpool/asio/close_report.hpp"
#include "fairpool/asio/detail/pool_state.hpp"
#include "fairpool/asio/detail/saturating_time.hpp"
#include "fairpool/asio/detail/stats_conversion.hpp"
#include "fairpool/asio/diagnostics.hpp"
#include "fairpool/asio/error.hpp"
#include "fairpool/asio/fwd.hpp"
#include "fairpool/asio/handle_observer.hpp"
#include "fairpool/asio/handle_stats.hpp"
#include "fairpool/asio/hooks.hpp"
#include "fairpool/asio/lease.hpp"
#include "fairpool/asio/options.hpp"
#include "fairpool/asio/pool_stats.hpp"

namespace fairpool {

// The completion token of an initiating function given none.
using default_completion_token = boost::asio::deferred_t;

namespace detail {

// A completion token, as the initiating functions tell it from a timeout or a deadline
// given before it.
template <class T>
inline constexpr bool is_time_v = false;
template <class Rep, class Period>
inline constexpr bool is_time_v<std::chrono::duration<Rep, Period>> = true;
template <class C, class D>
inline constexpr bool is_time_v<std::chrono::time_point<C, D>> = true;
template <class T>
concept completion_token = !is_time_v<std::remove_cvref_t<T>>;

// The deadline of an acquire with this per-call timeout: none for forever (the pool's
// acquire_timeout still bounds it), now for a timeout of 0 or less.
template <class State>
[[nodiscard]] core::nanos acquire_deadline(const State& s, std::chrono::nanoseconds timeout) noexcept {
    return timeout == forever ? core::never : s.deadline_after(timeout);
}

// Starts the pool, and shuts it down when the last pool or handle object goes. The
// start is the last step of the owner's construction, and the order matters: a state
// that never announced its start must never be asked to shut down (the core takes no
// shutdown before a start: an invariant broken, the process aborts). So if the start
// throws (its registration with the execution context allocates: pool_state::start),
// the owner never existed and its destructor, which requests the shutdown, never runs;
// the state goes, registered nowhere, with nothing sent. Once start() returns, nothing
// in the pool's construction can throw.
template <class State>
struct pool_owner {
    explicit pool_owner(std::shared_ptr<State> s) : state(std::move(s)) { state->start(); }
    pool_owner(const pool_owner&) = delete;
    pool_owner& operator=(const pool_owner&) = delete;
    ~pool_owner() { state->request_shutdown(); }
    std::shared_ptr<State> state;
};

// The initiations name the pool's executor as theirs (get_executor), as an Asio I/O
// object's do: a token that takes its executor from the initiation (use_promise,
// use_coro) then completes on the pool's executor, not on the system executor, which
// would deliver the outcome on a thread of its own. The state is passed as an argument
// too: a deferred initiation keeps it alive until it is launched.
template <class State>
struct initiation_on_pool {
    using executor_type = typename State::executor_type;
    State* pool_state;
    [[nodiscard]] executor_type get_executor() const noexcept { return pool_state->get_executor(); }
};

template <class State>
struct acquire_initiation : initiation_on_pool<State> {
    template <class Handler>
    void operator()(Handler&& handler, const std::shared_ptr<State>& state, std::uint64_t handle,
                    const std::shared_ptr<handle_block>& block, core::nanos deadline, std::uint32_t weight,
                    std::optional<std::uint64_t> max_leases) const {
        state->start_acquire(std::decay_t<Handler>(std::forward<Handler>(handler)), state, handle, block, deadline,
                             weight, max_leases);
    }
};

template <class State>
struct close_initiation : initiation_on_pool<State> {
    template <class Handler>
    void operator()(Handler handler, const std::shared_ptr<State>& s,
                    std::optional<typename State::time_point> deadline) const {
        s->start_close(std::move(handler), deadline);
    }
};

}  // namespace detail


template <class Resource, class Clock, class WaitTraits>
class pool {
    using state_type = detail::pool_state<Resource, Clock, WaitTraits>;
    using owner_type = detail::pool_owner<state_type>;

public:
    using executor_type = boost::asio::any_io_executor;
    using resource_type = Resource;
    using clock_type = Clock;
    using time_point = typename Clock::time_point;
    using lease_type = lease<Resource, Clock, WaitTraits>;
    using handle_type = handle<Resource, Clock, WaitTraits>;
    using hooks_type = resource_hooks<Resource>;
    using create_function = decltype(hooks_type::create);
    using close_function = decltype(hooks_type::close);
    using acquire_signature = void(boost::system::error_code, lease_type);
    using close_signature = void(boost::system::error_code, close_report);

    // Throws config_error if the options are invalid, or need a hook that is not
    // given (hooks.hpp: check_after_idle and keepalive_interval need `check`,
    // reset_on_release needs `reset`).
    // Throws std::bad_alloc if an allocation fails, having sent nothing and left nothing
    // to run (the execution context may keep a service created meanwhile: the timers',
    // the pool registry's) and written nothing (a recording's writer touches its
    // directory only once the pool has started: no directory made, no segment file, an
    // earlier recording not moved into previous/). The ordering that ensures it:
    // pool_owner, pool_state::start.
    pool(executor_type ex, const pool_options& options, hooks_type hooks)
        : owner_(std::make_shared<owner_type>(std::make_shared<state_type>(std::move(ex), options, std::move(hooks)))) {}

    // `create` makes a resource (throw to fail: the scheduler backs off); `close`, if
    // given, closes one gracefully before it is dropped (bounded by options.retire_grace).
    pool(executor_type ex, const pool_options& options, create_function create, close_function close = {})
        : pool(std::move(ex), options, hooks_type{.create = std::move(create), .close = std::move(close)}) {}

    // A new handle: the unit of fairness (a tenant, a client connection, a stream), with
    // its weight (1..65535: its turn size in round robin), its lease cap and its name
    // (options.hpp). Throws std::invalid_argument for a bad weight (nothing is sent);
    // std::bad_alloc if an allocation fails, having changed nothing (no id taken).
    [[nodiscard]] handle_type make_handle(const handle_options& options) const {
        if (auto why = validate(options)) throw std::invalid_argument("fairpool::handle_options: " + *why);
        return handle_type(owner_, options);
    }
    [[nodiscard]] handle_type make_handle(std::uint32_t weight = 1) const {
        handle_options options;
        options.weight = weight;
        return make_handle(options);
    }

    // The pool's sizes from now on (docs/CONTRACT.md decision 16): shrinking retires
    // surplus idle resources at once and surplus leased ones when they come back;
    // growing spawns as waiters and min_slots need. max_slots 0 holds no resource:
    // acquires wait (and time out, or are refused saturated when the queue is full) until
    // a later resize gives them room. Checked here, on the caller's thread, before
    // anything is sent: error::bad_size unless
    // 0 <= max_slots <= options.slot_capacity and min_slots <= max_slots; error::closed
    // once the pool is shutting down. Success: the resize is in the mailbox (never
    // dropped; a later resize the pool has not yet taken replaces it).
    [[nodiscard]] boost::system::error_code resize(std::uint64_t max_slots, std::uint64_t min_slots) {
        return state()->request_resize(max_slots, min_slots);
    }

    // Acquire with a fresh handle of its own, waiting at most options.acquire_timeout
    // (error::timeout past it).
    template <detail::completion_token Token = default_completion_token>
    auto async_acquire(Token&& token = {}) {
        return initiate(core::never, std::forward<Token>(token));
    }
    // The same, giving up after `timeout` if that comes first (forever: only
    // options.acquire_timeout bounds it).
    template <detail::completion_token Token = default_completion_token>
    auto async_acquire(std::chrono::nanoseconds timeout, Token&& token = {}) {
        return initiate(detail::acquire_deadline(*state(), timeout), std::forward<Token>(token));
    }
    // Acquire only if a resource is idle now; else error::timeout at once (no wait, no
    // spawn waited for).
    template <detail::completion_token Token = default_completion_token>
    auto async_try_acquire(Token&& token = {}) {
        return initiate(state()->now(), std::forward<Token>(token));
    }

    // Shut down and complete when the pool has closed: every lease back, every resource
    // destroyed. With a deadline (a time of the pool's Clock) or a timeout (from now, as
    // acquires take it), may complete with error::timeout and a report of what is
    // still out; it can be called again. On a pool already closed it completes at once.
    // Throws std::bad_alloc if an allocation fails (the work it counts, its place among
    // the waiters, its timer and the timer's wait, which holds the handler), having
    // changed nothing: no shutdown asked for (the pool still serves, unless shutting
    // down already), the handler never run; a retry may succeed. Once it returns, the
    // handler runs exactly once: delivering its completion, at its deadline or when the
    // pool closes, allocates nothing on the pool's side (detail/closing.hpp). (Its last
    // allocation, the post of the drain that feeds the shutdown, is fatal if it fails,
    // as any drain's post: pool_state::start_close.)
    template <detail::completion_token Token = default_completion_token>
    auto async_close(Token&& token = {}) {
        return close(std::nullopt, std::forward<Token>(token));
    }
    template <detail::completion_token Token = default_completion_token>
    auto async_close(time_point deadline, Token&& token = {}) {
        return close(deadline, std::forward<Token>(token));
    }
    template <detail::completion_token Token = default_completion_token>
    auto async_close(std::chrono::nanoseconds timeout, Token&& token = {}) {
        return close(deadline_after(timeout), std::forward<Token>(token));
    }

    // The pool's statistics (pool_stats.hpp), from any thread. The pool never waits for
    // a reader; a reader of a busy pool that fails 16 lock-free attempts asks the pool
    // for a copy (behind a mutex shared only with such readers: docs/CONTRACT.md section 8).
    [[nodiscard]] pool_stats stats() const noexcept {
        const state_type& s = *state();
        const std::uint64_t peak = s.demand_peak();
        return detail::to_pool_stats(s.stats(), peak);
    }
    // The highest pool_stats::demand since the last call (or since the pool was made),
    // at least the demand now, from any thread; starts a new interval, whose
    // pool_stats::demand_peak starts at the demand now. For a budget that samples the
    // pool's demand on a timer, so that a burst between two samples is not missed.
    [[nodiscard]] std::uint64_t take_demand_peak() noexcept { return state()->take_demand_peak(); }
    [[nodiscard]] executor_type get_executor() const noexcept { return state()->get_executor(); }
    // The most slots a resize may ask for (options.slot_capacity, or max_slots if unset).
    [[nodiscard]] std::uint64_t slot_capacity() const noexcept { return state()->resize_capacity(); }

    // The flight recorder (pool_options::recording). dump_recording blocks the caller
    // until the recorder's writer has drained what the pool recorded so far and written
    // the retained segments into `dir` (created if missing): copies of the segment
    // files kept (the current one flushed first), or, memory_only, the last two
    // segments; then `fairpool-replay --check DIR` replays them. Safe from any thread,
    // the pool's own included (it waits for the writer thread, never for the pool), but
    // it blocks that thread for the copy. error::not_recording if recording is off; a
    // filesystem error if writing the copies fails. After the recorder itself failed to
    // write (a full disk) it copies the files kept, each cut back to its last whole
    // step: the recording up to the failure. recording_status: what the recorder did so
    // far, its write errors included (nullopt if recording is off).
    [[nodiscard]] boost::system::error_code dump_recording(const std::filesystem::path& dir) const {
        return state()->dump_recording(dir);
    }
    [[nodiscard]] std::optional<fairpool::recording_status> recording_status() const {
        return state()->recording();
    }

    // What the pool's internals did (diagnostics.hpp): for benchmarks, tests and tools.
    [[nodiscard]] pool_diagnostics diagnostics() const {
        const state_type& s = *state();
        return {s.drains_posted(), s.drains_run(), s.commands_fed(), s.stats(), owner_->state};
    }

private:
    friend handle_type;

    [[nodiscard]] state_type* state() const noexcept { return owner_->state.get(); }

    // Clock::now() + timeout, saturating at the Clock's last time point (a negative
    // timeout is now; a Clock coarser than nanoseconds rounds up to its next tick).
    static time_point deadline_after(std::chrono::nanoseconds timeout) {
        return detail::saturating_after(Clock::now(), timeout);
    }

    // Handle 0: a fresh handle, whose id start_acquire takes once nothing can throw.
    template <class Token>
    auto initiate(core::nanos deadline, Token&& token) {
        return boost::asio::async_initiate<Token, acquire_signature>(
            detail::acquire_initiation<state_type>{{state()}}, token, owner_->state, std::uint64_t{0}, nullptr,
            deadline, std::uint32_t{0}, std::nullopt);
    }

    template <class Token>
    auto close(std::optional<time_point> deadline, Token&& token) {
        // The initiation carries the caller's reference, as an acquire's does: a deferred
        // close may be launched after this object is gone.
        return boost::asio::async_initiate<Token, close_signature>(detail::close_initiation<state_type>{{state()}}, token,
                                                                   owner_->state, deadline);
    }

    std::shared_ptr<owner_type> owner_;
};

// A handle: the unit of fairness. Its waiters are served FIFO, and in round robin with
// the other handles' (its weight is its turn). Destroying or reset()ting it rejects its
// queued waiters with error::deregistered. Movable; holding one keeps the pool open.
// An empty handle (default-constructed, reset or moved from) belongs to no pool: it
// can be assigned a handle from make_handle(); acquiring through it throws
// std::logic_error.
template <class Resource, class Clock, class WaitTraits>
class handle {
    using state_type = detail::pool_state<Resource, Clock, WaitTraits>;
    using owner_type = detail::pool_owner<state_type>;

public:
    using lease_type = lease<Resource, Clock, WaitTraits>;
    using acquire_signature = typename pool<Resource, Clock, WaitTraits>::acquire_signature;

    handle() noexcept = default;
    // The moved-from handle is empty, as reset() leaves it (id() 0).
    handle(handle&& other) noexcept
        : owner_(std::move(other.owner_)),
          block_(std::move(other.block_)),
          id_(std::exchange(other.id_, 0)),
          weight_(std::exchange(other.weight_, 1)),
          max_leases_(std::exchange(other.max_leases_, std::nullopt)) {}
    handle& operator=(handle&& other) noexcept {
        if (this != &other) {
            deregister();
            owner_ = std::move(other.owner_), block_ = std::move(other.block_), id_ = std::exchange(other.id_, 0),
            weight_ = std::exchange(other.weight_, 1), max_leases_ = std::exchange(other.max_leases_, std::nullopt);
        }
        return *this;
    }
    handle(const handle&) = delete;
    handle& operator=(const handle&) = delete;
    ~handle() { deregister(); }

    // Deregisters (its queued waiters are rejected with error::deregistered; leases
    // already granted stay valid) and lets go of the pool: the handle is empty.
    void reset() noexcept {
        deregister();
        owner_.reset();
        block_.reset();
        id_ = 0;
        weight_ = 1;
        max_leases_.reset();
    }
    [[nodiscard]] explicit operator bool() const noexcept { return owner_ != nullptr; }

    // As pool::async_acquire, async_try_acquire, through this handle.
    template <detail::completion_token Token = default_completion_token>
    auto async_acquire(Token&& token = {}) {
        expect_pool();
        return initiate(core::never, std::forward<Token>(token));
    }
    template <detail::completion_token Token = default_completion_token>
    auto async_acquire(std::chrono::nanoseconds timeout, Token&& token = {}) {
        expect_pool();
        return initiate(detail::acquire_deadline(*owner_->state, timeout), std::forward<Token>(token));
    }
    template <detail::completion_token Token = default_completion_token>
    auto async_try_acquire(Token&& token = {}) {
        expect_pool();
        return initiate(owner_->state->now(), std::forward<Token>(token));
    }

    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }  // 0 when empty

    // Its statistics since make_handle (handle_stats.hpp), from any thread, without a
    // lock; all zero when empty. Its name (handle_options::name; "" when empty). An
    // observer of both that stays valid after the handle is gone (handle_observer.hpp).
    [[nodiscard]] handle_stats stats() const noexcept { return block_ ? block_->read() : handle_stats{}; }
    [[nodiscard]] std::string_view name() const noexcept { return block_ ? std::string_view(block_->name) : ""; }
    [[nodiscard]] handle_observer observer() const noexcept { return handle_observer(block_); }

private:
    friend class pool<Resource, Clock, WaitTraits>;
    using block_type = typename state_type::handle_block;

    handle(std::shared_ptr<owner_type> owner, const handle_options& options)
        : owner_(std::move(owner)),
          block_(std::make_shared<block_type>(options.name)),
          id_(owner_->state->new_handle_id()),
          weight_(options.weight),
          max_leases_(options.max_leases) {}

    template <class Token>
    auto initiate(core::nanos deadline, Token&& token) {
        return boost::asio::async_initiate<Token, acquire_signature>(
            detail::acquire_initiation<state_type>{{owner_->state.get()}}, token, owner_->state, id_, block_, deadline,
            weight_, max_leases_);
    }
    void expect_pool() const {
        if (!owner_)
            throw std::logic_error("fairpool::handle: async_acquire on an empty handle (default-constructed, reset "
                                   "or moved from)");
    }

    // Only a handle with an acquire still out has anything to deregister.
    void deregister() noexcept {
        if (owner_ && block_->outstanding.load(std::memory_order_acquire) > 0) owner_->state->deregister(id_, *block_);
    }

    std::shared_ptr<owner_type> owner_;
    std::shared_ptr<block_type> block_;
    std::uint64_t id_ = 0;
    std::uint32_t weight_ = 1;
    std::optional<std::uint64_t> max_leases_;
};

}  // namespace fairpool
