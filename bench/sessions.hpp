#pragma once
// What the end-to-end session benchmarks share (redis_sessions, pg_sessions): running
// sessions from parallel workers on one io_context, their figures, and the JSON rows.
#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "json_number.hpp"

namespace fairpool::bench {

struct session_result {
    std::string scenario;  // e.g. "redis_sessions"
    std::string design;    // "fairpool", "connect_per_request"
    double sessions_per_second = 0;
    double p50_us = 0, p99_us = 0;
    std::uint64_t connections = 0;  // backend connections opened
    std::uint64_t failures = 0;
};

inline double percentile(std::vector<std::uint32_t>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

// Runs `parallel` workers on `io`, each taking the next session (`session(n)` is an
// awaitable<bool>: false is a failed session) until `sessions` are done; `finish` (an
// awaitable<void>) runs once the last one is done, before the context stops.
template <class Session, class Finish>
session_result run_sessions(std::string scenario, std::string design, unsigned long sessions, unsigned long parallel,
                            boost::asio::io_context& io, Session session, Finish finish) {
    using clock_type = std::chrono::steady_clock;
    std::vector<std::uint32_t> latencies;
    latencies.reserve(sessions);
    unsigned long next = 0;
    unsigned long workers = parallel;
    session_result r{std::move(scenario), std::move(design)};
    double seconds = 0;
    const auto start = clock_type::now();
    for (unsigned long w = 0; w < parallel; ++w)
        boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
            while (next < sessions) {
                const unsigned long n = next++;
                const auto t0 = clock_type::now();
                if (!co_await session(n)) ++r.failures;
                latencies.push_back(static_cast<std::uint32_t>(
                    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0).count()));
            }
            if (--workers == 0) {
                seconds = std::chrono::duration<double>(clock_type::now() - start).count();
                co_await finish();
            }
        }, boost::asio::detached);
    io.run();
    r.sessions_per_second = static_cast<double>(sessions) / seconds;
    r.p50_us = percentile(latencies, 0.5);
    r.p99_us = percentile(latencies, 0.99);
    return r;
}

// A JSON list of bench rows {"scenario", "design", "metric", "value", "unit"}.
inline void write_session_rows(const std::string& file, const std::vector<session_result>& results) {
    std::ofstream out(file);
    out << "[\n";
    bool first = true;
    const auto row = [&](const session_result& r, const char* metric, double value, const char* unit) {
        out << (first ? "  " : ",\n  ") << R"({"scenario": ")" << r.scenario << R"(", "design": ")" << r.design
            << R"(", "metric": ")" << metric << R"(", "value": )" << json_number(value) << R"(, "unit": ")" << unit
            << "\"}";
        first = false;
    };
    for (const auto& r : results) {
        row(r, "sessions_per_second", r.sessions_per_second, "sessions/s");
        row(r, "session_latency_p50", r.p50_us, "us");
        row(r, "session_latency_p99", r.p99_us, "us");
        row(r, "backend_connections_opened", static_cast<double>(r.connections), "connections");
        row(r, "failed_sessions", static_cast<double>(r.failures), "sessions");
    }
    out << "\n]\n";
}

}  // namespace fairpool::bench
