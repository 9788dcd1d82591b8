#include "fixture.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fairpool::demo::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string redis_server_path() {
    const char* p = std::getenv("FAIRPOOL_REDIS_SERVER");
    return p ? p : "";
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
    o.pool.scheduler.max_slots = 4;
    o.pool.scheduler.min_slots = 1;
    o.pool.scheduler.spawn_backoff_initial = 50'000'000;
    o.pool.scheduler.spawn_backoff_max = 400'000'000;
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
