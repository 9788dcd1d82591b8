#include "scenarios.hpp"

#include <signal.h>

#include <algorithm>
#include <sstream>

namespace fairpool::fleet {

using namespace std::chrono_literals;
using wants_map = std::map<std::string, std::uint64_t>;

namespace {

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string describe(world& w) {
    std::ostringstream out;
    for (const auto& [id, m] : w.members())
        out << id << ": grant " << m.grant << " limit " << m.limit << " held " << m.held << " demand " << m.demand
            << " weight " << m.weight << "; ";
    out << "connections now " << w.connections_now();
    return out.str();
}

// Whether every member in `wants` has the grant the fair shares give it, and applies it.
bool fair_now(world& w, const wants_map& wants) {
    const auto m = w.members();
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> dw;
    for (const auto& [id, want] : wants) {
        const auto it = m.find(id);
        if (it == m.end()) return false;
        dw[id] = {want, std::max<std::uint64_t>(it->second.weight, 1)};
    }
    const auto shares = fair_shares(w.budget(), dw);
    for (const auto& [id, share] : shares) {
        if (m.at(id).grant != share || w.limit_of(id) != share) return false;
    }
    return true;
}

// Seconds from t0 until done() holds (polled every 10 ms), or -1 past the limit.
template <class Done>
double wait_until(Done done, clock_type::time_point t0, std::chrono::milliseconds limit) {
    while (!done()) {
        if (clock_type::now() - t0 > limit) return -1;
        std::this_thread::sleep_for(10ms);
    }
    return seconds_since(t0);
}

// Seconds until fair_now, or -1 past the limit.
double wait_fair(world& w, const wants_map& wants, clock_type::time_point t0, std::chrono::milliseconds limit) {
    return wait_until([&] { return fair_now(w, wants); }, t0, limit);
}

figures begin(world& w, std::string name, bool fence) {
    w.reset();
    w.fence(fence);
    w.watch_from_now();
    figures f;
    f.scenario = std::move(name);
    f.fence = fence;
    f.budget = w.budget();
    return f;
}

void finish(world& w, figures& f) {
    f.max_connections = std::max(f.max_connections, w.max_connections());
    f.samples += w.samples();
    f.violations = w.violations();
    f.refused_logins = w.refused_logins();
    f.detail = describe(w);
}

}  // namespace

std::vector<figures> run_s1_s2_s3(world& w, bool fence, scenario_timing t) {
    figures s1 = begin(w, "S1", fence);
    auto t0 = clock_type::now();
    w.start({.member = "a", .workers = 20});
    w.start({.member = "b", .workers = 4});
    w.start({.member = "c", .workers = 2});
    wants_map wants{{"a", 20}, {"b", 4}, {"c", 2}};
    s1.seconds_to_fair = wait_fair(w, wants, t0, t.converge_limit);
    s1.converged = s1.seconds_to_fair >= 0;
    // Steady state: the fleet uses the budget, at one script call per member per R.
    std::this_thread::sleep_for(w.refresh * 2);
    s1.max_connections = w.max_connections();
    s1.samples = w.samples();
    w.watch_from_now();
    const auto calls0 = w.script_calls();
    const auto window0 = clock_type::now();
    std::this_thread::sleep_for(t.steady_window);
    s1.script_calls_per_second = static_cast<double>(w.script_calls() - calls0) / seconds_since(window0);
    s1.utilisation = w.mean_connections() / static_cast<double>(std::min<std::uint64_t>(w.budget(), 26));
    s1.converged = s1.converged && fair_now(w, wants);
    finish(w, s1);

    figures s2;
    s2.scenario = "S2", s2.fence = fence, s2.budget = w.budget();
    w.watch_from_now();
    t0 = clock_type::now();
    w.start({.member = "d", .workers = 6});
    wants["d"] = 6;
    // The demand step: d's first refresh, once its process has started.
    while (!w.members().count("d") && clock_type::now() - t0 < t.converge_limit) std::this_thread::sleep_for(2ms);
    t0 = clock_type::now();
    s2.seconds_to_fair = wait_fair(w, wants, t0, t.converge_limit);
    s2.converged = s2.seconds_to_fair >= 0;
    std::this_thread::sleep_for(w.refresh * 2);
    finish(w, s2);

    figures s3;
    s3.scenario = "S3", s3.fence = fence, s3.budget = w.budget();
    w.watch_from_now();
    t0 = clock_type::now();
    w.replicas()[0]->signal(SIGKILL);  // a, the largest
    w.replicas()[0]->wait();
    wants.erase("a");
    // b, c and d want 12 in all: each gets what it wants once a's share is free.
    s3.seconds_to_reuse = wait_fair(w, wants, t0, t.converge_limit);
    s3.converged = s3.seconds_to_reuse >= 0;
    s3.seconds_to_fair = s3.seconds_to_reuse;
    std::this_thread::sleep_for(w.refresh * 2);
    finish(w, s3);
    return {s1, s2, s3};
}

figures run_s4_pause(world& w, bool fence, scenario_timing t) {
    figures f = begin(w, "S4", fence);
    const auto t0 = clock_type::now();
    for (const char* id : {"a", "b", "c"}) w.start({.member = id, .workers = 20});
    const wants_map wants{{"a", 20}, {"b", 20}, {"c", 20}};
    f.seconds_to_fair = wait_fair(w, wants, t0, t.converge_limit);
    f.converged = f.seconds_to_fair >= 0;
    auto& paused = *w.replicas()[2];
    paused.signal(SIGSTOP);
    // c's lease runs out (L + G), a and b are granted its share and spawn into it while
    // c, stopped, still holds its connections: past B without the fence, refused logins
    // with it. The stop lasts 2 (L + G), and on a loaded machine, where the spawns come
    // later, until they have come (bounded): waited for, not only slept for.
    const auto stopped = clock_type::now();
    f.converged = f.converged && wait_fair(w, {{"a", 20}, {"b", 20}}, stopped, t.converge_limit) >= 0;
    const auto into_the_share = [&] { return fence ? w.refused_logins() > 0 : w.max_connections() > w.budget(); };
    wait_until(into_the_share, stopped, t.converge_limit);  // past the limit, the test's expectation fails
    std::this_thread::sleep_until(std::max(stopped + 2 * (w.lease + w.grace), clock_type::now() + w.refresh));
    paused.signal(SIGCONT);
    // It wakes past its lease: it falls back (to 0) and lets its connections go.
    std::this_thread::sleep_for(w.lease + w.grace);
    finish(w, f);
    return f;
}

figures run_s5_redis_restart(world& w, bool fence, scenario_timing t) {
    figures f = begin(w, "S5", fence);
    const std::uint64_t fallback = w.budget() / 4;  // N_max = 4: N_max x fallback <= B
    auto t0 = clock_type::now();
    w.start({.member = "a", .workers = 20, .fallback = fallback});
    w.start({.member = "b", .workers = 4, .fallback = fallback});
    w.start({.member = "c", .workers = 2, .fallback = fallback});
    const wants_map wants{{"a", 20}, {"b", 4}, {"c", 2}};
    f.converged = wait_fair(w, wants, t0, t.converge_limit) >= 0;
    w.redis().stop();
    // Past the lease every member is at min(its grant, fallback).
    const auto until = clock_type::now() + w.lease + 2s;
    while (clock_type::now() < until && !f.saw_fallback) {
        f.saw_fallback = std::all_of(w.replicas().begin(), w.replicas().end(), [&](const auto& r) {
            const auto s = r->status();
            return s.count("state") && s.at("state") == "fallback" && r->status_number("limit") <= fallback;
        });
        std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(w.refresh * 2);
    w.redis().start();  // empty: a new epoch, learning for L + G
    t0 = clock_type::now();
    w.reset_admin();
    f.seconds_to_fair = wait_fair(w, wants, t0, t.converge_limit);
    f.converged = f.converged && f.seconds_to_fair >= 0;
    finish(w, f);
    return f;
}

figures run_s6_rolling_deploy(world& w, bool fence, scenario_timing t) {
    figures f = begin(w, "S6", fence);
    auto t0 = clock_type::now();
    for (const char* id : {"a", "b", "c"}) w.start({.member = id, .workers = 10});
    wants_map wants{{"a", 10}, {"b", 10}, {"c", 10}};
    f.converged = wait_fair(w, wants, t0, t.converge_limit) >= 0;
    t0 = clock_type::now();
    for (const char* id : {"d", "e", "f"}) w.start({.member = id, .workers = 10});
    for (const char* id : {"d", "e", "f"}) wants[id] = 10;
    f.seconds_to_fair = wait_fair(w, wants, t0, t.converge_limit);
    f.converged = f.converged && f.seconds_to_fair >= 0;
    for (int i = 0; i < 3; ++i) w.replicas()[static_cast<std::size_t>(i)]->command("quit");
    for (int i = 0; i < 3; ++i) w.replicas()[static_cast<std::size_t>(i)]->wait();
    for (const char* id : {"a", "b", "c"}) wants.erase(id);
    f.converged = f.converged && wait_fair(w, wants, clock_type::now(), t.converge_limit) >= 0;
    finish(w, f);
    return f;
}

figures run_s7a_static_split(world& w, scenario_timing) {
    figures f = begin(w, "S7a", false);
    const std::uint64_t share = w.budget() / 3;
    for (const char* id : {"a", "b", "c"}) w.start({.member = id, .workers = 10, .static_slots = share});
    std::this_thread::sleep_for(1s);
    // The deploy surge: three more, each with the same static share.
    for (const char* id : {"d", "e", "f"}) w.start({.member = id, .workers = 10, .static_slots = share});
    std::this_thread::sleep_for(2s);
    finish(w, f);
    return f;
}

figures run_s7b_immediate_shrink(world& w, scenario_timing t) {
    figures f = begin(w, "S7b", false);
    const auto t0 = clock_type::now();
    // Statements of 2 s: a's surplus leases stay out for up to 2 s after its grant is
    // lowered, well past b's grant (a refresh or two later) and b's logins.
    w.start({.member = "a", .workers = 12, .hold_ms = 2000, .report_grant_as_held = true});
    f.converged = wait_fair(w, {{"a", 12}}, t0, t.converge_limit) >= 0;
    std::this_thread::sleep_for(w.refresh * 2);
    w.start({.member = "b", .workers = 12, .hold_ms = 2000, .report_grant_as_held = true});
    std::this_thread::sleep_for(2500ms);
    finish(w, f);
    return f;
}

}  // namespace fairpool::fleet
