#include "cluster.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace pg {

namespace {

// The watchdog's program: sh -c WATCHDOG fairpool-pg-watchdog DIR BIN USER, its stdin
// the watchdog's end of the socket. `done` from the destructor: nothing to do. The end
// of the socket without it: the process that made the cluster died. The second's wait
// first: a pg_ctl start of ours may have forked a server that has yet to write its
// postmaster.pid.
constexpr const char* watchdog_script = R"(dir=$1 bin=$2 user=$3
read -r word
[ "$word" = done ] && exit 0
sleep 1
if [ -f "$dir/data/postmaster.pid" ]; then
  if [ -n "$user" ]; then runuser -u "$user" -- "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m immediate stop
  else "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m immediate stop; fi
fi
rm -rf "$dir")";

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Who runs PostgreSQL's programs when we are root.
const passwd* unprivileged_user() {
    if (const char* name = std::getenv("FAIRPOOL_PG_USER"); name && *name) return ::getpwnam(name);
    if (const passwd* p = ::getpwnam("postgres")) return p;
    return ::getpwnam("nobody");
}

}  // namespace

std::uint16_t free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("free_loopback_port: socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("free_loopback_port: bind");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string cluster::default_bin_dir() {
    const char* bin = std::getenv("FAIRPOOL_PG_BIN");
    return bin && *bin ? bin : "/usr/lib/postgresql/15/bin";
}

cluster::cluster(std::string bin_dir) : bin_(std::move(bin_dir)) {
    if (!std::filesystem::exists(bin_ + "/initdb"))
        throw std::runtime_error("no PostgreSQL at " + bin_ + " (install Debian's postgresql: tools/install-deps)");
    std::string pattern = (std::filesystem::temp_directory_path() / "fairpool-pg-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("cluster: mkdtemp failed");
    dir_ = buffer.data();
    std::string pg_user;  // as root: the user running PostgreSQL's programs
    if (::geteuid() == 0) {
        const passwd* user = unprivileged_user();
        if (user == nullptr || user->pw_uid == 0)
            throw std::runtime_error("cluster: running as root and no unprivileged user for initdb (set FAIRPOOL_PG_USER)");
        if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0)
            throw std::runtime_error("cluster: chown " + dir_ + " failed");
        pg_user = user->pw_name;
        as_user_ = "runuser -u " + pg_user + " -- ";
    }
    try {
        start_watchdog(pg_user);
        run("initdb", bin_ + "/initdb -D " + dir_ + "/data -U fairpool -A trust -E UTF8 --no-sync");
        start();
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dismiss_watchdog();
        throw;
    }
}

cluster::~cluster() {
    if (running_) {
        try {
            stop("immediate");
        } catch (...) {
        }
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dismiss_watchdog();
}

void cluster::start_watchdog(const std::string& user) {
    // Everything the child needs is made before fork: between fork and exec it makes only
    // async-signal-safe calls (this process may have other threads).
    std::vector<std::string> args = {"/bin/sh", "-c", watchdog_script, "fairpool-pg-watchdog", dir_, bin_, user};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // A socket, not a pipe: writing `done` to a watchdog that is gone fails (MSG_NOSIGNAL)
    // instead of raising SIGPIPE. Both ends close-on-exec: no pg_ctl or server of ours
    // inherits ours, which would keep the watchdog waiting after we die.
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        throw std::runtime_error(std::string("cluster: socketpair: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid == 0) {
        // A session of its own: a kill of our process group (Meson's, on a timeout) does
        // not reach it. Its stdout and stderr are not ours: a test's runner waits for
        // the end of those.
        ::setsid();
        if (ends[1] == STDIN_FILENO)
            ::fcntl(STDIN_FILENO, F_SETFD, 0);
        else
            ::dup2(ends[1], STDIN_FILENO);
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) {
            ::dup2(null, STDOUT_FILENO);
            ::dup2(null, STDERR_FILENO);
        }
        ::close_range(3, ~0U, 0);
        ::execve("/bin/sh", argv.data(), environ);
        ::_exit(127);
    }
    const int fork_error = errno;
    ::close(ends[1]);
    if (pid < 0) {
        ::close(ends[0]);
        throw std::runtime_error(std::string("cluster: fork: ") + std::strerror(fork_error));
    }
    watchdog_ = pid;
    watchdog_socket_ = ends[0];
}

void cluster::dismiss_watchdog() noexcept {
    if (watchdog_socket_ >= 0) {
        (void)::send(watchdog_socket_, "done\n", 5, MSG_NOSIGNAL);
        ::close(watchdog_socket_);
        watchdog_socket_ = -1;
    }
    if (watchdog_ > 0) {
        while (::waitpid(watchdog_, nullptr, 0) < 0 && errno == EINTR) {
        }
        watchdog_ = -1;
    }
}

void cluster::run(const std::string& what, const std::string& command_line) const {
    const std::string log = dir_ + "/" + what + ".out";
    const std::string full = as_user_ + command_line + " >" + log + " 2>&1";
    if (std::system(full.c_str()) != 0) {
        std::string server_log = read_file(dir_ + "/server.log");
        throw std::runtime_error("cluster: " + what + " failed: " + full + "\n" + read_file(log) +
                                 (server_log.empty() ? "" : "server log:\n" + server_log));
    }
}

void cluster::start() {
    // A port free a moment ago may be taken by the time the server binds it: retry.
    for (int attempt = 1;; ++attempt) {
        port_ = free_loopback_port();
        try {
            start_on_port();
            return;
        } catch (const std::runtime_error&) {
            if (attempt == 3) throw;
        }
    }
}

void cluster::start_on_port() {
    const std::string options = "-p " + std::to_string(port_) + " -k " + dir_ +
                                " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200";
    run("start", bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log -w -t 60 -o '" + options + "' start");
    running_ = true;
}

void cluster::stop(const std::string& mode) {
    run("stop", bin_ + "/pg_ctl -D " + dir_ + "/data -w -t 60 -m " + mode + " stop");
    running_ = false;
}

// Same port: the pool's connection parameters stay valid.
void cluster::restart(const std::string& mode) {
    stop(mode);
    start_on_port();
}

parameters cluster::connect_parameters() const {
    return {{"host", "127.0.0.1"}, {"port", std::to_string(port_)}, {"user", "fairpool"}, {"dbname", "postgres"},
            {"gssencmode", "disable"}, {"sslmode", "disable"}};
}

std::string cluster::conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(port_) +
           " user=fairpool dbname=postgres gssencmode=disable sslmode=disable";
}

}  // namespace pg
