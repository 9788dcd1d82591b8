#include "common.hpp"

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <thread>

#include "../json_number.hpp"

namespace fairpool_bench {

fairpool::pool_options fairpool_design::options(std::size_t size, const fairpool::recorder_options* recording,
                                                std::chrono::nanoseconds check_after_idle,
                                                std::size_t max_leases_per_handle) {
    fairpool::pool_options o;  // acquire_timeout, create_timeout: the defaults (30 s)
    o.max_slots = size;
    o.min_slots = size;
    o.check_after_idle = check_after_idle;
    o.max_leases_per_handle = max_leases_per_handle;
    if (recording != nullptr) o.recording = *recording;
    return o;
}

std::unique_ptr<fairpool_design::pool_type> fairpool_design::make(asio::io_context& io, std::size_t size,
                                                                  const fairpool::recorder_options* recording,
                                                                  std::chrono::nanoseconds check_after_idle,
                                                                  std::size_t max_leases_per_handle) {
    const fairpool::pool_options o = options(size, recording, check_after_idle, max_leases_per_handle);
    auto next = std::make_shared<int>(0);
    fairpool::resource_hooks<connection> hooks{
        .create = [next]() -> asio::awaitable<connection> { co_return connection{(*next)++}; },
    };
    if (check_after_idle != fairpool::forever) hooks.check = [](connection&) -> asio::awaitable<bool> { co_return true; };
    auto p = std::make_unique<pool_type>(io.get_executor(), o, std::move(hooks));
    io.restart();
    io.run();  // prewarm: every slot spawned
    io.restart();
    return p;
}

const std::filesystem::path& recording_directory() {
    static const std::filesystem::path dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fairpool-bench-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            std::perror("mkdtemp");
            std::exit(1);
        }
        std::atexit([] { std::filesystem::remove_all(recording_directory()); });
        return std::filesystem::path(pattern);
    }();
    return dir;
}

fairpool::recorder_options bench_recorder_options() {
    fairpool::recorder_options r;
    r.directory = recording_directory() / "recording";
    return r;
}

std::unique_ptr<fairpool_design::pool_type> fairpool_recording_design::make(asio::io_context& io, std::size_t size) {
    const fairpool::recorder_options r = bench_recorder_options();
    return fairpool_design::make(io, size, &r);
}

std::vector<connection> make_connections(std::size_t n) {
    std::vector<connection> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(connection{static_cast<int>(i)});
    return v;
}

void row(const std::string& scenario, const char* design, const char* metric, double value, const char* unit) {
    std::printf("{\"scenario\": \"%s\", \"design\": \"%s\", \"metric\": \"%s\", \"value\": %s, \"unit\": \"%s\"}\n",
                scenario.c_str(), design, metric, fairpool::bench::json_number(value).c_str(), unit);
    std::fflush(stdout);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

double quantile_sorted(const std::vector<std::int64_t>& v, double q) {
    if (v.empty()) return 0;
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size()));
    return static_cast<double>(v[std::min(i, v.size() - 1)]);
}

handlers_run run_on(asio::io_context& io, int threads) {
    std::vector<std::thread> extra;
    std::vector<std::size_t> ran(static_cast<std::size_t>(std::max(threads, 1)), 0);
    for (int i = 1; i < threads; ++i) extra.emplace_back([&io, &ran, i] { ran[static_cast<std::size_t>(i)] = io.run(); });
    ran[0] = io.run();
    for (auto& t : extra) t.join();
    handlers_run r;
    for (const std::size_t n : ran) r.total += n;
    r.every_thread = std::all_of(ran.begin(), ran.end(), [&](std::size_t n) { return n * 10 >= r.total; });
    return r;
}

void spin_for(std::chrono::nanoseconds d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

}  // namespace fairpool_bench
