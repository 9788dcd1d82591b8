// Prints the Prometheus exposition of a scheduler driven through a small scenario, for
// tests/prometheus_parse.py. `single`: one pool whose label needs escaping; `multi`:
// two pools in one exposition.
#include <cstdio>
#include <cstring>
#include <string>

#include "fairpool/core/prometheus.hpp"
#include "fairpool/core/scheduler.hpp"

namespace {

using namespace fairpool::core;

// Grants at once and after waits of various lengths, a timeout, a saturation, a dirty
// release: most counters and several histogram buckets end up non-zero.
stats scenario() {
    config c;
    c.max_slots = 1;
    c.max_waiters = 2;
    scheduler pool(c);
    (void)pool.step(event::start(0));
    (void)pool.step(event::acquire(10, 1, 1));      // spawn
    (void)pool.step(event::spawned(2'000, 0));      // grant 1 after 1990 ns
    (void)pool.step(event::acquire(3'000, 2, 2));   // queued
    (void)pool.step(event::acquire(3'000, 3, 3, 4'000));  // queued, deadline
    (void)pool.step(event::acquire(3'000, 4, 4));   // saturated
    (void)pool.step(event::tick(4'000));            // 3 times out
    (void)pool.step(event::release(5'000'000, 0, 1));  // grant 2 after ~5 ms
    (void)pool.step(event::release(6'000'000, 0, 2, release_outcome::dirty));
    return pool.counters();
}

}  // namespace

int main(int argc, char** argv) {
    const stats s = scenario();
    std::string text;
    if (argc > 1 && std::strcmp(argv[1], "multi") == 0) {
        const stats idle{};
        const prometheus_pool pools[] = {{&s, "db"}, {&idle, "cache"}};
        append_prometheus_text(text, pools);
    } else {
        text = prometheus_text(s, "tenant \"a\"\\b\nline two");
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
}
