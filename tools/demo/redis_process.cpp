#include "redis_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// One blocking PING; true on "+PONG".
bool answers_ping(const tcp::endpoint& at) {
    asio::io_context io;
    tcp::socket socket(io);
    boost::system::error_code ec;
    socket.connect(at, ec);
    if (ec) return false;
    asio::write(socket, asio::buffer(std::string_view("PING\r\n")), ec);
    if (ec) return false;
    std::array<char, 7> reply{};
    asio::read(socket, asio::buffer(reply), ec);
    return !ec && std::string_view(reply.data(), reply.size()) == "+PONG\r\n";
}

// The file execvp would run for `name`: itself if it has a slash, else the first
// executable DIR/name for DIR in PATH; empty if none.
std::string find_program(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    const char* path = std::getenv("PATH");
    const std::string_view dirs = path && *path ? path : "/usr/local/bin:/bin:/usr/bin";
    for (std::size_t at = 0;;) {
        const std::size_t end = std::min(dirs.find(':', at), dirs.size());
        std::string candidate(dirs.substr(at, end - at));
        candidate = (candidate.empty() ? "." : candidate) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        if (end == dirs.size()) return {};
        at = end + 1;
    }
}

}  // namespace

std::uint16_t free_port() {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    return a.local_endpoint().port();
}

redis_process::redis_process(std::string path, std::vector<std::string> extra)
    : path_(std::move(path)), extra_(std::move(extra)), port_(free_port()) {
    start();
}

tcp::endpoint redis_process::endpoint() const { return {asio::ip::address_v4::loopback(), port_}; }

void redis_process::start() {
    const std::string port = std::to_string(port_);
    std::vector<std::string> args = {path_,        "--port", port,          "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no",   "--daemonize", "no",     "--loglevel", "warning"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string program = find_program(path_);
    if (program.empty()) throw std::runtime_error("cannot start " + path_ + ": " + std::strerror(ENOENT));
    // The child reports a failed exec through this pipe (close-on-exec: a successful
    // exec closes it, and the read below sees its end).
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        throw std::runtime_error("cannot start " + path_ + ": pipe: " + std::strerror(errno));
    // Everything the child needs is made above: between fork and exec it makes only
    // async-signal-safe calls (the tests fork while other threads run).
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // Killed when this process dies (crash, abort, SIGKILL), without a destructor to
        // stop it; strictly, when the thread that forks it ends: start() is called from
        // a thread that lives as long as the server is wanted. If we died before the
        // prctl, getppid() is no longer ours.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        // Not our stdout and stderr: a test runner reads those to their end, which an
        // orphan holding them would put off.
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) {
            ::dup2(null, STDOUT_FILENO);
            ::dup2(null, STDERR_FILENO);
        }
        ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);  // none of our descriptors past the exec
        ::execve(program.c_str(), argv.data(), environ);
        const int error = errno;
        (void)!::write(report[1], &error, sizeof error);
        ::_exit(127);
    }
    const int fork_error = errno;
    ::close(report[1]);
    if (pid < 0) {
        ::close(report[0]);
        throw std::runtime_error("cannot start " + path_ + ": fork: " + std::strerror(fork_error));
    }
    int exec_error = 0;
    ssize_t n = 0;
    do n = ::read(report[0], &exec_error, sizeof exec_error);
    while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof exec_error)) {
        ::waitpid(pid, nullptr, 0);
        throw std::runtime_error("cannot start " + path_ + ": " + std::strerror(exec_error));
    }
    pid_ = pid;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!answers_ping(endpoint())) {
        if (std::chrono::steady_clock::now() >= until) {
            stop();
            throw std::runtime_error(path_ + " did not answer PING on port " + port + " within 10 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

void redis_process::stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

}  // namespace fairpool::demo
