#pragma once
// A throwaway PostgreSQL cluster for tests and benchmarks: initdb in a new temporary
// directory, the server on a free loopback port (TCP on 127.0.0.1 only; its Unix socket
// in that directory), trust authentication, fsync off. Removed when destroyed.
//
// initdb and the server refuse to run as root. As root (CI), every PostgreSQL program
// runs through `runuser -u USER --` as an unprivileged user: FAIRPOOL_PG_USER if set,
// else `postgres` (Debian's postgresql-common creates it), else `nobody`; the
// temporary directory is handed to that user (chown). As any other user they run as is.
//
// A process that dies without destroying its cluster (killed, even by SIGKILL or with its
// process group on a test's timeout; aborted; a sanitizer report) leaves no server and no
// directory behind either: a watchdog process, started with the cluster in a session of
// its own, waits for the end of a socket only this process holds; at its end, unless the
// destructor has dismissed it, it stops the server (pg_ctl stop -m immediate, as the same
// user) and removes the directory.
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "connection.hpp"

namespace pg {

class cluster {
public:
    // PostgreSQL's programs: FAIRPOOL_PG_BIN if set, else Debian's /usr/lib/postgresql/15/bin.
    [[nodiscard]] static std::string default_bin_dir();

    // Creates and starts the cluster; throws std::runtime_error with the failing step's
    // output if it cannot.
    explicit cluster(std::string bin_dir = default_bin_dir());
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;
    ~cluster();  // stops the server (immediate) and removes the directory

    void start();
    // mode: "smart", "fast" (ends every session) or "immediate".
    void stop(const std::string& mode = "fast");
    void restart(const std::string& mode = "fast");

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] const std::string& directory() const noexcept { return dir_; }
    // Parameters for connection::connect: host, port, user, dbname.
    [[nodiscard]] parameters connect_parameters() const;
    [[nodiscard]] std::string conninfo() const;

private:
    // Runs a PostgreSQL program (as the unprivileged user when root); throws with its
    // output on a non-zero exit.
    void run(const std::string& what, const std::string& command_line) const;
    void start_on_port();
    // The watchdog (above), for the directory made; `user`: the runuser user, or empty.
    void start_watchdog(const std::string& user);
    // Tells it that all is cleaned up, and reaps it.
    void dismiss_watchdog() noexcept;

    std::string bin_;
    std::string dir_;
    std::string as_user_;  // the runuser prefix, or empty
    std::uint16_t port_ = 0;
    bool running_ = false;
    pid_t watchdog_ = -1;
    int watchdog_socket_ = -1;  // our end (close-on-exec: no child of ours holds it)
};

// A loopback TCP port nobody listens on right now.
[[nodiscard]] std::uint16_t free_loopback_port();

}  // namespace pg
