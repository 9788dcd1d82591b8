#include "fairpool/budget/client.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "fairpool/budget/refresh_script.hpp"
#include "redis_link.hpp"

namespace fairpool::budget {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using std::chrono::nanoseconds;

std::string_view to_string(member_state s) noexcept {
    switch (s) {
        case member_state::joining: return "joining";
        case member_state::granted: return "granted";
        case member_state::learning: return "learning";
        case member_state::fallback: return "fallback";
        case member_state::forgotten: return "forgotten";
        case member_state::stopped: return "stopped";
    }
    return "?";
}

// Everything below runs on the strand, but for stats()/published_ (the mutex).
struct budget_client::impl : std::enable_shared_from_this<impl> {
    impl(asio::any_io_executor ex, budget_options o, budget_target t)
        : strand(asio::make_strand(std::move(ex))), options(std::move(o)), target(std::move(t)), link(strand),
          timer(strand), rng(std::random_device{}()) {
        if (options.member_id.empty()) options.member_id = default_member_id();
        const std::string tag = "{" + options.name + "}";
        meta_key = tag + ":meta";
        members_key = tag + ":members";
        violations_key = tag + ":violations";
        backoff = options.reconnect_backoff_initial;
    }

    asio::strand<asio::any_io_executor> strand;
    budget_options options;
    budget_target target;
    std::string meta_key, members_key, violations_key;
    detail::redis_link link;
    asio::steady_timer timer;
    std::mt19937_64 rng;

    // Strand state.
    bool stopping = false, leaving = false;
    std::string sha;
    budget_stats now_stats;  // the working copy, published after each step
    std::uint64_t applied_epoch = 0, applied_version = 0;
    std::optional<clock_type::time_point> lease_deadline, forget_deadline;
    clock_type::time_point next_refresh{}, last_send{};
    nanoseconds backoff{};

    mutable std::mutex published_mutex;
    budget_stats published;

    void publish() {
        if (lease_deadline && (now_stats.state == member_state::granted || now_stats.state == member_state::learning))
            now_stats.lease_left = std::max(nanoseconds(0), *lease_deadline - clock_type::now());
        else
            now_stats.lease_left = nanoseconds(0);
        const std::lock_guard lock(published_mutex);
        published = now_stats;
    }

    // Sizes the pool; a pool that refuses (closing) ends the client.
    void set_limit(std::uint64_t n) {
        if (n == now_stats.limit && now_stats.resizes > 0) return;
        if (!target.apply || !target.apply(n)) {
            stopping = true;
            return;
        }
        now_stats.limit = n;
        ++now_stats.resizes;
    }

    nanoseconds jittered(nanoseconds d) {
        const double j = options.refresh_jitter;
        std::uniform_real_distribution<double> f(1 - j, 1 + j);
        return nanoseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * f(rng)));
    }

    // The lease and the forget horizon, by this member's clock.
    void enforce_deadlines(clock_type::time_point now) {
        const auto s = now_stats.state;
        if ((s == member_state::granted || s == member_state::learning) && lease_deadline && now >= *lease_deadline) {
            now_stats.state = member_state::fallback;
            set_limit(std::min(now_stats.grant, options.fallback));
        }
        if (now_stats.state == member_state::fallback && forget_deadline && now >= *forget_deadline) {
            now_stats.state = member_state::forgotten;
            set_limit(0);
        }
    }

    void failed(const std::string& why, bool connecting) {
        ++(connecting ? now_stats.connect_failures : now_stats.refresh_failures);
        now_stats.last_error = why;
        next_refresh = clock_type::now() + std::min(jittered(backoff), nanoseconds(options.refresh_interval));
        backoff = std::min(backoff * 2, nanoseconds(options.reconnect_backoff_max));
    }

    static std::optional<std::string> bad_reply(const detail::reply& r) {
        using detail::reply;
        if (r.type == reply::kind::error) return "Redis: " + r.text;
        if (r.type != reply::kind::array || r.elements.size() != 8) return "the script's reply is not 8 integers";
        for (const auto& e : r.elements)
            if (e.type != reply::kind::integer || e.integer < 0) return "the script's reply is not 8 integers";
        return std::nullopt;
    }

    static std::vector<std::string> script_load() {
        std::vector<std::string> args(3);
        args[0] = "SCRIPT", args[1] = "LOAD", args[2] = std::string(refresh_script());
        return args;
    }

    std::vector<std::string> script_args(bool leave) const {
        const auto o = [](auto v) { return std::to_string(v); };
        std::vector<std::string> args;
        args.reserve(19);
        for (std::string a : {std::string("EVALSHA"), sha, std::string("3"), meta_key, members_key, violations_key,
                              std::string(leave ? "leave" : "refresh"), options.member_id, o(options.budget),
                              o(options.lease.count()), o(options.grace.count()), o(options.forget_after.count()),
                              o(options.fallback), o(now_stats.demand), o(now_stats.weight), o(now_stats.held),
                              o(leave ? 0 : now_stats.limit), o(applied_epoch), o(applied_version)})
            args.push_back(std::move(a));
        return args;
    }

    asio::awaitable<void> refresh() {
        using namespace std::chrono;
        if (!link.connected()) {
            try {
                co_await link.connect(options.redis, options.user, options.password, options.connect_timeout);
                const std::vector<std::string> load = script_load();
                const auto loaded = co_await link.call(load, options.call_timeout);
                if (loaded.type != detail::reply::kind::bulk) {
                    link.close();
                    throw std::runtime_error("SCRIPT LOAD: " + loaded.text);
                }
                sha = loaded.text;
                ++now_stats.connects;
                backoff = options.reconnect_backoff_initial;
            } catch (const std::exception& e) {
                failed(e.what(), true);
                co_return;
            }
        }
        const member_sample sample = target.sample ? target.sample() : member_sample{};
        const bool leave = leaving;
        now_stats.demand = leave ? 0 : std::min(sample.demand, target.capacity);
        // The weight of the handles with waiters now. A member whose waiters are all
        // served (its grant covers its demand) has none: it keeps the weight it last
        // sent while it has demand, or its share would shrink for being satisfied, and
        // grow back once it queues again (the grants would swing each refresh).
        if (sample.weight > 0)
            now_stats.weight = sample.weight;
        else if (now_stats.demand == 0 || now_stats.weight == 0)
            now_stats.weight = 1;
        now_stats.held = sample.held;
        // (Built by a function, not a braced list: g++ 12 miscompiles temporaries in a
        // braced list inside a coroutine.)
        std::vector<std::string> args = script_args(leave);
        const auto sent = clock_type::now();
        last_send = sent;
        // A call never outlives the lease it is meant to renew.
        nanoseconds timeout = options.call_timeout;
        const bool trusting = now_stats.state == member_state::granted || now_stats.state == member_state::learning;
        if (trusting && lease_deadline) timeout = std::clamp(*lease_deadline - sent, nanoseconds(milliseconds(1)), timeout);
        detail::reply r;
        try {
            r = co_await link.call(args, timeout);
            if (r.type == detail::reply::kind::error && r.text.starts_with("NOSCRIPT")) {
                args[0] = "EVAL";
                args[1] = std::string(refresh_script());
                r = co_await link.call(args, timeout);
            }
        } catch (const std::exception& e) {
            failed(e.what(), false);
            co_return;
        }
        if (auto why = bad_reply(r)) {
            failed(*why, false);
            co_return;
        }
        const auto latency = clock_type::now() - sent;
        const auto at = [&](int i) { return static_cast<std::uint64_t>(r.elements[static_cast<std::size_t>(i)].integer); };
        ++now_stats.refreshes;
        now_stats.latency_last = latency;
        now_stats.latency_max = std::max(now_stats.latency_max, nanoseconds(latency));
        now_stats.latency_total += latency;
        now_stats.grant = at(0);
        now_stats.epoch = at(1);
        now_stats.version = at(2);
        now_stats.target = at(4);
        now_stats.members_live = at(5);
        now_stats.fleet_committed = at(6);
        now_stats.violations = at(7);
        applied_epoch = at(1);
        applied_version = at(2);
        if (leave) {
            stopping = true;
            co_return;
        }
        now_stats.state = at(3) ? member_state::learning : member_state::granted;
        set_limit(now_stats.grant);
        lease_deadline = sent + options.lease - options.lease_margin;
        forget_deadline = sent + options.forget_after - options.lease_margin;
        next_refresh = clock_type::now() + jittered(options.refresh_interval);
    }

    // Between refreshes (every min_refresh_gap at most): refresh at once, rather than at
    // the next interval, when the demand has risen above the limit and above what Redis
    // last heard; when Redis granted less than the fair share because others have not
    // yet released theirs; when the pool has shed the surplus of a lowered grant (so
    // that the others get it now).
    void refresh_sooner_if_needed() {
        const auto st = now_stats.state;
        if (!target.peek || (st != member_state::granted && st != member_state::learning)) return;
        const member_sample p = target.peek();
        const bool risen = p.demand > now_stats.limit && p.demand > now_stats.demand;
        const bool short_of_share = st == member_state::granted && now_stats.grant < now_stats.target &&
                                    p.demand > now_stats.grant;
        const bool shed = now_stats.held > now_stats.limit && p.held <= now_stats.limit;
        if (risen || short_of_share || shed) next_refresh = std::min(next_refresh, last_send + options.min_refresh_gap);
    }

    asio::awaitable<void> run() {
        auto self = shared_from_this();
        while (!stopping) {
            auto now = clock_type::now();
            enforce_deadlines(now);
            if (!stopping && now >= next_refresh) co_await refresh();
            publish();
            if (stopping) break;
            now = clock_type::now();
            auto wake = std::min(next_refresh, now + options.min_refresh_gap);
            const auto s = now_stats.state;
            if (lease_deadline && (s == member_state::granted || s == member_state::learning))
                wake = std::min(wake, std::max(now, *lease_deadline));
            if (forget_deadline && s == member_state::fallback) wake = std::min(wake, std::max(now, *forget_deadline));
            timer.expires_at(wake);
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            if (!stopping && !leaving) refresh_sooner_if_needed();
        }
        link.close();
        now_stats.state = member_state::stopped;
        publish();
        target = {};  // the pool's copy goes with it
    }
};

budget_client::budget_client(asio::any_io_executor ex, budget_options options, budget_target target) {
    if (auto why = validate(options)) throw std::invalid_argument("fairpool::budget::budget_options: " + *why);
    if (!target.sample || !target.apply) throw std::invalid_argument("fairpool::budget::budget_client: empty target");
    if (target.capacity == 0) throw std::invalid_argument("fairpool::budget::budget_client: target capacity 0");
    impl_ = std::make_shared<impl>(std::move(ex), std::move(options), std::move(target));
}

budget_client::~budget_client() { stop(); }

void budget_client::start() {
    auto& i = *impl_;
    const std::uint64_t before = i.target.resizes ? i.target.resizes() : 0;
    i.set_limit(i.options.start_at_fallback ? i.options.fallback : 0);
    i.publish();
    // The pool takes a size in its next drain; wait for it, unless this thread is one
    // the pool may need for that drain.
    const asio::any_io_executor inner = i.strand.get_inner_executor();  // a copy: target() points into it
    const auto* io = inner.target<asio::io_context::executor_type>();
    if (i.target.resizes && !(io && io->running_in_this_thread())) {
        const auto until = clock_type::now() + std::chrono::seconds(1);
        while (i.target.resizes() == before && clock_type::now() < until) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    asio::co_spawn(i.strand, [self = impl_] { return self->run(); }, asio::detached);
}

void budget_client::stop() {
    asio::post(impl_->strand, [self = impl_] {
        self->stopping = true;
        self->timer.cancel();
        self->link.close();
    });
}

void budget_client::leave() {
    asio::post(impl_->strand, [self = impl_] {
        self->leaving = true;
        self->next_refresh = clock_type::now();
        self->timer.cancel();
    });
}

budget_stats budget_client::stats() const {
    const std::lock_guard lock(impl_->published_mutex);
    return impl_->published;
}

const budget_options& budget_client::options() const noexcept { return impl_->options; }

}  // namespace fairpool::budget
