#include "embedded_backend.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>

#include "resp.hpp"

namespace fairpool::demo {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// BLPOP's timeout: a decimal number of seconds, above 0 and at most an hour here.
constexpr double max_blpop_seconds = 3600;
}

struct embedded_backend::client {
    explicit client(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::int64_t id = 0;
    std::string name;
};

embedded_backend::embedded_backend(const embedded_backend_options& options)
    : options_(options), acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), options.port)) {
    endpoint_ = acceptor_.local_endpoint();
    asio::co_spawn(io_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
}

embedded_backend::~embedded_backend() {
    asio::post(io_, [this] {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        for (auto& [id, weak] : clients_)
            if (auto c = weak.lock()) c->socket.close(ignored);
    });
    thread_.join();  // returns once every session has ended
}

asio::awaitable<void> embedded_backend::accept_loop() {
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) co_return;
        socket.set_option(tcp::no_delay(true));
        auto c = std::make_shared<client>(std::move(socket));
        if (open_.load() >= options_.max_clients) {
            const std::string refusal = resp::error("ERR max number of clients reached");
            (void)co_await asio::async_write(c->socket, asio::buffer(refusal), use_tuple);
            continue;
        }
        c->id = next_id_++;
        clients_[c->id] = c;
        ++open_;
        asio::co_spawn(io_, serve(c), asio::detached);
    }
}

asio::awaitable<void> embedded_backend::serve(std::shared_ptr<client> c) {
    std::string buffer;
    std::array<char, 4096> chunk;
    asio::steady_timer delay(io_);
    for (bool quit = false; !quit;) {
        const auto parsed = resp::parse(buffer);
        if (parsed.status == resp::parse_status::incomplete) {
            auto [ec, n] = co_await c->socket.async_read_some(asio::buffer(chunk), use_tuple);
            if (ec) break;
            buffer.append(chunk.data(), n);
            continue;
        }
        std::string reply;
        std::chrono::microseconds hold{0};
        if (parsed.status == resp::parse_status::complete) {
            buffer.erase(0, parsed.length);
            const auto args = resp::arguments(parsed.frame);
            reply = args.empty() ? resp::error("ERR protocol error") : execute(*c, args, quit, hold);
        } else {
            reply = resp::error("ERR protocol error"), quit = true;
        }
        if (options_.latency.count() > 0 || hold.count() > 0) {
            delay.expires_after(options_.latency + hold);
            (void)co_await delay.async_wait(use_tuple);
        }
        auto [ec, n] = co_await asio::async_write(c->socket, asio::buffer(reply), use_tuple);
        if (ec) break;
    }
    boost::system::error_code ignored;
    c->socket.close(ignored);
    clients_.erase(c->id);
    --open_;
}

std::string embedded_backend::execute(client& c, const std::vector<std::string>& args, bool& quit,
                                      std::chrono::microseconds& hold) {
    const std::string name = resp::upper(args[0]);
    const auto arity = [&](std::size_t n) { return args.size() == n; };
    if (name == "PING") return args.size() > 1 ? resp::bulk(args[1]) : resp::simple("PONG");
    if (name == "ECHO" && arity(2)) return resp::bulk(args[1]);
    if (name == "GET" && arity(2)) {
        const auto it = data_.find(args[1]);
        return it == data_.end() ? resp::null_bulk() : resp::bulk(it->second);
    }
    if (name == "SET" && arity(3)) {
        data_[args[1]] = args[2];
        return resp::simple("OK");
    }
    if (name == "INCR" && arity(2)) {
        auto& v = data_[args[1]];
        std::int64_t n = 0;
        if (!v.empty()) {
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size())
                return resp::error("ERR value is not an integer or out of range");
        }
        v = std::to_string(++n);
        return resp::integer(n);
    }
    if (name == "DEL" && args.size() >= 2) {
        std::int64_t removed = 0;
        for (std::size_t i = 1; i < args.size(); ++i) removed += static_cast<std::int64_t>(data_.erase(args[i]));
        return resp::integer(removed);
    }
    if (name == "CLIENT" && args.size() >= 2) {
        const std::string sub = resp::upper(args[1]);
        if (sub == "ID") return resp::integer(c.id);
        if (sub == "SETNAME" && arity(3)) {
            c.name = args[2];
            return resp::simple("OK");
        }
        if (sub == "LIST") {
            std::string list;
            for (const auto& [id, weak] : clients_)
                if (auto other = weak.lock()) list += "id=" + std::to_string(id) + " name=" + other->name + "\n";
            return resp::bulk(list);
        }
    }
    if (name == "BLPOP" && args.size() >= 3) {
        // No lists here: a key holding a string is the wrong type, any other is empty,
        // so the reply is the null array after the whole timeout.
        for (std::size_t i = 1; i + 1 < args.size(); ++i)
            if (data_.contains(args[i])) return resp::error("WRONGTYPE Operation against a key holding the wrong kind of value");
        const std::string& t = args.back();
        double seconds = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), seconds);
        if (ec != std::errc{} || end != t.data() + t.size() || !(seconds > 0 && seconds <= max_blpop_seconds))
            return resp::error("ERR timeout is not a number of seconds in (0, 3600] (0, forever, is not supported)");
        hold = std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6));
        return "*-1\r\n";
    }
    if (name == "RESET" && arity(1)) {
        c.name.clear();
        return resp::simple("RESET");
    }
    if (name == "QUIT") {
        quit = true;
        return resp::simple("OK");
    }
    return resp::error("ERR unknown command '" + args[0] + "' or wrong number of arguments");
}

}  // namespace fairpool::demo
