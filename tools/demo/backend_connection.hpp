#pragma once
// One connection to a RESP backend (Redis or the embedded one): the pool's resource.
//
// connect() is the pool's factory: TCP connect, then PING and CLIENT ID as the
// handshake, all bounded by a timeout; it throws on failure (a failed spawn).
// round_trip() sends one request and reads its reply. start_pipeline() is the proxy's
// request path: several requests in one write, their replies handed over one by one as
// they are read, with completion handlers (no coroutine, no timer, no allocation once
// its buffers are warm). ping() is the pool's check and reset() its reset (the pool bounds both by its check_timeout and reset_timeout, and
// cancels them past it). close() is the pool's graceful close: QUIT when the connection
// is clean, a plain close when a request, a check or a reset was cut off mid-flight (its
// reply would still be on the way).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "handler_memory.hpp"
#include "resp.hpp"

namespace fairpool::demo {

// Replies from the backend larger than this are refused (the connection is then dirty).
inline constexpr std::size_t max_backend_reply_bytes = 1024 * 1024;

struct backend_reply {
    boost::system::error_code ec;  // set if the request failed: the connection is unusable
    std::string frame;             // the raw reply frame, when !ec
};

// Where start_pipeline's replies go: on_reply once per reply frame, in order (the view is
// valid only during the call), then on_done once: no error when every reply came, else
// the error that ended the exchange (cancel(): operation_aborted; a reply over
// max_backend_reply_bytes or not RESP: message_size) with the replies after the last
// on_reply never to come.
class reply_sink {
public:
    virtual void on_reply(std::string_view frame) = 0;
    virtual void on_done(boost::system::error_code ec) = 0;

protected:
    ~reply_sink() = default;
};

class backend_connection {
public:
    static boost::asio::awaitable<backend_connection> connect(boost::asio::ip::tcp::endpoint endpoint,
                                                              std::chrono::milliseconds timeout);

    backend_connection(backend_connection&&) noexcept = default;
    backend_connection& operator=(backend_connection&&) noexcept = default;

    // Writes `request` (one RESP frame) and reads one reply frame.
    boost::asio::awaitable<backend_reply> round_trip(std::string_view request);

    // Writes `requests`, `count` RESP frames, in one write and reads their `count`
    // replies into `sink`. `requests` and `sink` must outlive the exchange (until
    // on_done), and the connection must not move meanwhile. One exchange at a time.
    void start_pipeline(std::string_view requests, std::size_t count, reply_sink& sink);
    // Ends what start_pipeline is waiting for, with operation_aborted (the replies may
    // still be on the way: the connection is then unfit for reuse).
    void cancel() noexcept;

    // The pool's check: PING, answered +PONG. False on any other answer or an I/O error
    // (a connection the server closed while it was idle reads end of file here).
    boost::asio::awaitable<bool> ping();

    // The pool's reset: RESET (Redis >= 6.2), answered +RESET: the connection's session
    // state (selected database, MULTI, subscriptions, client name, tracking) is a fresh
    // connection's again. False on any other answer (a server without RESET, or one that
    // refuses it) or an I/O error.
    boost::asio::awaitable<bool> reset();

    // QUIT if nothing is on the wire, then close.
    boost::asio::awaitable<void> close();

    // Redis's id of this connection (CLIENT ID at the handshake).
    [[nodiscard]] std::int64_t client_id() const noexcept { return client_id_; }
    [[nodiscard]] std::uint64_t requests() const noexcept { return requests_; }
    // A request was started and did not complete: the reply may still arrive.
    [[nodiscard]] bool in_flight() const noexcept { return in_flight_; }

private:
    explicit backend_connection(boost::asio::ip::tcp::socket socket)
        : socket_(std::move(socket)), memory_(std::make_unique<handler_memory>()) {}

    boost::asio::awaitable<backend_reply> read_reply();
    // start_pipeline's steps: read until `remaining` replies have gone to `sink`.
    void read_replies(std::size_t remaining, reply_sink& sink);
    // Hands the whole frames at the front of the buffer to `sink`, at most `remaining`;
    // false if the buffer starts with something that is not a reply within the limits.
    bool deliver(std::size_t& remaining, reply_sink& sink);
    // Drops the first n buffered bytes (read and handed on).
    void consume(std::size_t n) noexcept;
    // Room for the next read: the free tail of buffer_, at least 16 KiB.
    boost::asio::mutable_buffer read_room();
    // One request and its reply, marked in flight until the whole reply is read.
    boost::asio::awaitable<backend_reply> exchange(std::string_view request);
    // Sends `request`; true if the reply is the simple string `expected`.
    boost::asio::awaitable<bool> answers(std::string request, std::string_view expected);

    boost::asio::ip::tcp::socket socket_;
    std::unique_ptr<handler_memory> memory_;  // start_pipeline's operations' (one at a time); it stays put as the connection moves
    std::string buffer_;       // its first buffered_ bytes are read and not yet consumed
    std::size_t buffered_ = 0;
    std::int64_t client_id_ = 0;
    std::uint64_t requests_ = 0;
    bool in_flight_ = false;
    bool cancelled_ = false;  // cancel() since start_pipeline: no further read is started
};

}  // namespace fairpool::demo
