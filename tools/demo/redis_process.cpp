#include "redis_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
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
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawnp(&pid_, path_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        pid_ = -1;
        throw std::runtime_error("cannot start " + path_ + ": " + std::strerror(rc));
    }
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
