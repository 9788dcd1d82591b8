#include "fixture.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/http/parser.hpp>
#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fairpool::demo::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

std::string redis_server_path() {
    const char* p = std::getenv("FAIRPOOL_REDIS_SERVER");
    return p ? p : "";
}

void start_redis_server(std::unique_ptr<redis_process>& into, std::vector<std::string> args) {
    const std::string path = redis_server_path();
    ASSERT_FALSE(path.empty() || ::access(path.c_str(), X_OK) != 0)
        << "redis-server is required by the redis suite and was not found (install the Debian package "
           "redis-server, e.g. tools/install-deps, and reconfigure); FAIRPOOL_REDIS_SERVER='"
        << path << "'";
    into = std::make_unique<redis_process>(path, std::move(args));
}

client::client(std::uint16_t port, std::chrono::milliseconds timeout) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        close();
        throw std::runtime_error(std::string("connect: ") + std::strerror(e));
    }
}

void client::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void client::send(const std::vector<std::string>& args) { send_raw(resp::command(args)); }

void client::send_raw(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error("send failed");
        done += static_cast<std::size_t>(n);
    }
}

std::optional<resp::value> client::receive() {
    std::array<char, 4096> chunk;
    for (;;) {
        auto parsed = resp::parse(buffer_, {1024 * 1024, 1024 * 1024, 8});
        if (parsed.status == resp::parse_status::complete) {
            buffer_.erase(0, parsed.length);
            return std::move(parsed.frame);
        }
        if (parsed.status != resp::parse_status::incomplete) throw std::runtime_error("malformed reply");
        const ssize_t n = ::recv(fd_, chunk.data(), chunk.size(), 0);
        if (n == 0) return std::nullopt;
        if (n < 0) {
            if (errno == ECONNRESET) return std::nullopt;
            throw std::runtime_error(errno == EAGAIN ? "no reply within the client's timeout" : "recv failed");
        }
        buffer_.append(chunk.data(), static_cast<std::size_t>(n));
    }
}

resp::value client::call(const std::vector<std::string>& args) {
    send(args);
    auto reply = receive();
    if (!reply) throw std::runtime_error("connection closed instead of a reply");
    return std::move(*reply);
}

http_connection::http_connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket");
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd_);
        throw std::runtime_error("connect");
    }
}

http_connection::~http_connection() { ::close(fd_); }

bool http_connection::send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::string http_connection::read_until_closed(bool& closed) {
    std::string out;
    std::array<char, 4096> chunk;
    for (;;) {
        const ssize_t n = ::recv(fd_, chunk.data(), chunk.size(), 0);
        if (n > 0) {
            out.append(chunk.data(), static_cast<std::size_t>(n));
            continue;
        }
        closed = n == 0 || errno == ECONNRESET;
        return out;
    }
}

bool http_connection::closed_by_server() {
    char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

http::response<http::string_body> http_exchange(std::uint16_t port, std::string_view request) {
    http_connection c(port);
    EXPECT_TRUE(c.send(request));
    bool closed = false;
    const std::string raw = c.read_until_closed(closed);
    EXPECT_TRUE(closed) << "the server did not close the connection after its response";
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t used = 0;
    while (!ec && !parser.is_done() && used < raw.size())
        used += parser.put(asio::buffer(raw.data() + used, raw.size() - used), ec);
    EXPECT_FALSE(ec) << ec.message() << " in: " << raw;
    EXPECT_TRUE(parser.is_done()) << "not one whole response: " << raw;
    EXPECT_EQ(used, raw.size()) << "bytes after the response: " << raw;
    return parser.release();
}

std::optional<std::uint64_t> prometheus_sample(std::string_view text, std::string_view series) {
    // Appended, not `"\n" + ... + " "`: GCC 12 at -O3 warns falsely (-Wrestrict) there.
    std::string line = "\n";
    line += series;
    line += ' ';
    const auto at = text.find(line);
    if (at == std::string_view::npos) return std::nullopt;
    std::uint64_t v = 0;
    const char* first = text.data() + at + line.size();
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (ec != std::errc{} || end == text.data() + text.size() || *end != '\n') return std::nullopt;
    return v;
}

std::vector<client_info> client_list(client& admin) {
    const auto list = admin.call({"CLIENT", "LIST"});
    std::vector<client_info> out;
    std::istringstream lines(list.text);
    for (std::string line; std::getline(lines, line);) {
        client_info info;
        std::istringstream fields(line);
        for (std::string field; fields >> field;) {
            if (field.starts_with("id=")) info.id = std::stoll(field.substr(3));
            if (field.starts_with("cmd=")) info.cmd = field.substr(4);
        }
        if (info.id) out.push_back(info);
    }
    return out;
}

proxy_options test_options(tcp::endpoint backend) {
    proxy_options o;
    o.backend = backend;
    o.pool.max_slots = 4;
    o.pool.min_slots = 1;
    o.pool.spawn_backoff_initial = std::chrono::milliseconds(50);
    o.pool.spawn_backoff_max = std::chrono::milliseconds(400);
    o.request_timeout = std::chrono::milliseconds(1000);
    o.connect_timeout = std::chrono::milliseconds(500);
    return o;
}

proxy_harness::proxy_harness(proxy_options options)
    : proxy_(std::make_unique<proxy_server>(io_.get_executor(), std::move(options))),
      thread_([this] { io_.run(); }) {}

fairpool::close_report proxy_harness::close(std::chrono::milliseconds grace) {
    if (!report_) {
        report_ = asio::co_spawn(io_, proxy_->close(grace), asio::use_future).get();
        thread_.join();  // io_.run() returns: nothing is left to do once the pool closed
    }
    return *report_;
}

proxy_harness::~proxy_harness() { close(); }

}  // namespace fairpool::demo::testing
