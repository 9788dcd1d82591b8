#include "connection.hpp"

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "canceller.hpp"

namespace pg {

namespace asio = boost::asio;
using wait_type = asio::posix::descriptor_base::wait_type;

parameters parse_conninfo(const std::string& conninfo) {
    char* message = nullptr;
    PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &message);
    if (options == nullptr) {
        std::string why = message ? message : "out of memory";
        PQfreemem(message);
        throw error("conninfo: " + why);
    }
    parameters out;
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o)
        if (o->val != nullptr) out.emplace_back(o->keyword, o->val);
    PQconninfoFree(options);
    return out;
}

connection::connection(asio::any_io_executor ex, PGconn* conn, canceller& cancels) noexcept
    : socket_(std::move(ex)), conn_(conn), cancels_(&cancels) {}

connection::connection(connection&& other) noexcept
    : socket_(std::move(other.socket_)), conn_(std::exchange(other.conn_, nullptr)), cancels_(other.cancels_),
      interrupted_(other.interrupted_), sending_(other.sending_) {}

connection& connection::operator=(connection&& other) noexcept {
    if (this != &other) {
        finish();
        socket_ = std::move(other.socket_);
        conn_ = std::exchange(other.conn_, nullptr);
        cancels_ = other.cancels_, interrupted_ = other.interrupted_, sending_ = other.sending_;
    }
    return *this;
}

connection::~connection() { finish(); }

void connection::finish() noexcept {
    if (socket_.is_open()) (void)socket_.release();  // the socket is libpq's to close
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
}

std::string connection::message() const {
    std::string m = conn_ ? PQerrorMessage(conn_) : "no connection";
    while (!m.empty() && m.back() == '\n') m.pop_back();
    return m;
}

void connection::track_socket() {
    if (socket_.is_open()) (void)socket_.release();
    const int fd = PQsocket(conn_);
    if (fd >= 0) socket_.assign(fd);
}

asio::awaitable<void> connection::wait(wait_type what) {
    if (!socket_.is_open()) throw error("connection: no socket");
    co_await socket_.async_wait(what, asio::use_awaitable);
}

asio::awaitable<connection> connection::connect(parameters params, canceller& cancels) {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : params) keys.push_back(k.c_str()), values.push_back(v.c_str());
    keys.push_back(nullptr), values.push_back(nullptr);
    // [connect]
    PGconn* raw = PQconnectStartParams(keys.data(), values.data(), 0);
    if (raw == nullptr) throw error("libpq: out of memory");
    connection c(co_await asio::this_coro::executor, raw, cancels);
    if (PQstatus(raw) == CONNECTION_BAD) throw error(c.message());
    // As libpq's documentation says: behave as if PQconnectPoll had asked for writing.
    PostgresPollingStatusType status = PGRES_POLLING_WRITING;
    while (status != PGRES_POLLING_OK) {
        if (status == PGRES_POLLING_FAILED) throw error(c.message());
        c.track_socket();
        co_await c.wait(status == PGRES_POLLING_READING ? wait_type::wait_read : wait_type::wait_write);
        status = PQconnectPoll(raw);
    }
    c.track_socket();
    if (PQsetnonblocking(raw, 1) != 0) throw error(c.message());
    co_return c;
    // [/connect]
}

bool connection::idle() const noexcept {
    return conn_ != nullptr && !interrupted_ && PQstatus(conn_) == CONNECTION_OK &&
           PQtransactionStatus(conn_) == PQTRANS_IDLE;
}

void connection::interrupt() noexcept {
    if (interrupted_) return;
    interrupted_ = true;
    if (conn_ != nullptr && !sending_) cancels_->submit(PQgetCancel(conn_));
}

asio::awaitable<result> connection::query(std::string sql, std::vector<std::string> params) {
    if (!idle()) throw error(interrupted_ ? "connection: a statement on it was interrupted" : "connection: not idle");
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    if (PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0) == 0)
        throw error(message());
    result first_error, last;
    try {
        sending_ = true;
        for (;;) {  // the statement is small: the socket's buffer takes it at once
            const int pending = PQflush(conn_);
            if (pending == 0) break;
            if (pending < 0) throw error(message());
            co_await wait(wait_type::wait_write);
        }
        sending_ = false;
        for (;;) {
            bool done = false;
            while (!done && PQisBusy(conn_) == 0) {
                result r(PQgetResult(conn_));
                if (!r) {
                    done = true;
                    break;
                }
                const auto status = PQresultStatus(r.get());
                if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY)
                    last = std::move(r);
                else if (!first_error)
                    first_error = std::move(r);
            }
            if (done) break;
            co_await wait(wait_type::wait_read);
            if (PQconsumeInput(conn_) == 0) throw error(message());
        }
    } catch (...) {  // cancelled, or the connection failed mid-statement
        interrupt();
        throw;
    }
    if (first_error) {
        std::string m = PQresultErrorMessage(first_error.get());
        while (!m.empty() && m.back() == '\n') m.pop_back();
        throw error(m);
    }
    if (!last) throw error("connection: no result");
    co_return last;
}

asio::awaitable<void> connection::close() {
    // An interrupted statement the server received: read until it has ended (the
    // cancel's error and ReadyForQuery), or the connection fails.
    while (interrupted_ && !sending_ && conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
        if (PQconsumeInput(conn_) == 0) break;
        bool ended = false;
        while (PQisBusy(conn_) == 0) {
            result r(PQgetResult(conn_));
            if (!r) {
                ended = true;
                break;
            }
        }
        if (ended) break;
        co_await wait(wait_type::wait_read);
    }
    finish();
}

}  // namespace pg
