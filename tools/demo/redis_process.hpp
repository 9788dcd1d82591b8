#pragma once
// A real redis-server as a child process on a free loopback port, for the redis test
// suite and bench/redis_sessions: no persistence, killed and reaped on destruction;
// killed too when this process dies without destroying it (PR_SET_PDEATHSIG), so a
// crashed test leaves no redis-server behind. Its stdout and stderr go to /dev/null.
#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace fairpool::demo {

// A loopback port free at the time of asking (bound to port 0, then released).
[[nodiscard]] std::uint16_t free_port();

// redis-server --port P --bind 127.0.0.1 --save '' --appendonly no, then `extra`
// (more configuration, e.g. {"--rename-command", "RESET", ""}).
class redis_process {
public:
    // Starts `path` (a path or a name looked up in PATH); throws std::runtime_error if
    // it cannot be started or does not answer PING within 10 s.
    explicit redis_process(std::string path, std::vector<std::string> extra = {});
    redis_process(const redis_process&) = delete;
    redis_process& operator=(const redis_process&) = delete;
    ~redis_process() { stop(); }

    // On the same port as before; returns once it answers PING. The server is killed when
    // the thread that calls start() ends (PR_SET_PDEATHSIG): call it from one that lives
    // as long as the server is wanted (the constructor's caller, or main).
    void start();
    void stop();   // SIGKILL, then reaped: a crash, as far as its clients can tell
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] boost::asio::ip::tcp::endpoint endpoint() const;

private:
    std::string path_;
    std::vector<std::string> extra_;
    std::uint16_t port_;
    pid_t pid_ = -1;
};

}  // namespace fairpool::demo
