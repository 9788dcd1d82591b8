#pragma once
// A libpq connection driven by Boost.Asio: no libpq call here ever blocks the io thread.
// Connecting is PQconnectStartParams + PQconnectPoll, waiting on PQsocket for whatever
// PQconnectPoll asks; a statement is PQsendQueryParams + PQflush, then PQconsumeInput /
// PQisBusy / PQgetResult between waits for the socket to be readable. The socket is
// libpq's: the stream_descriptor only waits on it and gives it back before PQfinish.
//
// Not thread-safe: one coroutine uses a connection at a time (a fairpool lease holder,
// or one of the pool's hooks), on one io thread.
#include <libpq-fe.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pg {

class canceller;

// libpq connection keywords and values: host, port, dbname, user, application_name, ...
using parameters = std::vector<std::pair<std::string, std::string>>;

// Parses a conninfo string ("host=127.0.0.1 port=5432 ...", or a postgresql:// URI);
// throws pg::error with libpq's message if it is malformed.
[[nodiscard]] parameters parse_conninfo(const std::string& conninfo);

// What libpq or the server reported.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct result_deleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result = std::unique_ptr<PGresult, result_deleter>;

class connection {
public:
    // Connects. Throws pg::error if libpq fails to, or system_error(operation_aborted) if
    // the awaiting coroutine is cancelled. `cancels` sends the PQcancel of a statement
    // this connection is interrupted in; it must outlive the connection.
    static boost::asio::awaitable<connection> connect(parameters params, canceller& cancels);

    connection(connection&& other) noexcept;
    connection& operator=(connection&& other) noexcept;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection();

    // Runs one statement with text parameters ($1, $2, ...); returns its last result
    // (rows or a command's status). Throws pg::error if the server refused the statement
    // (the connection stays usable) or the connection failed (it does not: idle() is
    // false). If the awaiting coroutine is cancelled — a per-operation cancellation, or a
    // timeout raced against it with the || operator — the statement is cancelled on the
    // server (PQcancel, on `cancels`' thread), the connection is left interrupted
    // (idle() is false, for good) and this throws system_error(operation_aborted). A
    // lease on a connection that is not idle() must be released dirty.
    boost::asio::awaitable<result> query(std::string sql, std::vector<std::string> params = {});

    // Ready for another statement: connected, not in a transaction block, nothing
    // interrupted or pending.
    [[nodiscard]] bool idle() const noexcept;
    [[nodiscard]] bool interrupted() const noexcept { return interrupted_; }
    // The server process serving this connection (pg_backend_pid()).
    [[nodiscard]] int backend_pid() const noexcept { return conn_ ? PQbackendPID(conn_) : 0; }
    [[nodiscard]] PGconn* native() const noexcept { return conn_; }

    // Ends the connection. An interrupted statement is waited for first, until the server
    // has ended it (the cancel's error reply), so that a pool slot freed by this close is
    // no longer busy on the server: the pool's max_slots then bounds the server's active
    // backends too. Bound it (the pool does, with retire_grace); the destructor finishes
    // the rest.
    boost::asio::awaitable<void> close();

private:
    connection(boost::asio::any_io_executor ex, PGconn* conn, canceller& cancels) noexcept;

    [[nodiscard]] std::string message() const;
    // Points the descriptor at PQsocket again: libpq may open a new socket while it
    // connects (another address, or a retry without SSL).
    void track_socket();
    boost::asio::awaitable<void> wait(boost::asio::posix::descriptor_base::wait_type what);
    // Sends the PQcancel of the statement in progress and marks the connection unusable.
    void interrupt() noexcept;
    void finish() noexcept;

    boost::asio::posix::stream_descriptor socket_;
    PGconn* conn_ = nullptr;
    canceller* cancels_ = nullptr;
    bool interrupted_ = false;
    bool sending_ = false;  // an interrupted statement may not have reached the server whole
};

}  // namespace pg
