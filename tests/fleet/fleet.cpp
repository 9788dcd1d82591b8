#include "fleet.hpp"

#include <fcntl.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fairpool::fleet {

using namespace std::chrono_literals;

// --- replica_process -----------------------------------------------------------------

replica_process::replica_process(const std::string& program, const std::vector<std::string>& args,
                                 std::string status_file)
    : status_file_(std::move(status_file)) {
    std::filesystem::remove(status_file_);
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves no replica behind
        if (::getppid() != parent) ::_exit(1);
        ::dup2(in[0], STDIN_FILENO);
        std::vector<char*> argv;
        argv.push_back(const_cast<char*>(program.c_str()));
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(program.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(in[0]);
    stdin_ = in[1];
}

replica_process::~replica_process() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (stdin_ >= 0) ::close(stdin_);
}

void replica_process::command(const std::string& line) {
    const std::string l = line + "\n";
    if (stdin_ >= 0) (void)!::write(stdin_, l.data(), l.size());
}

void replica_process::signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
}

int replica_process::wait(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return -1;
    const auto until = clock_type::now() + limit;
    int status = 0;
    for (;;) {
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) break;
        if (clock_type::now() >= until) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
            break;
        }
        std::this_thread::sleep_for(5ms);
    }
    pid_ = -1;
    return status;
}

std::map<std::string, std::string> replica_process::status() const {
    std::ifstream f(status_file_);
    std::map<std::string, std::string> out;
    std::string pair;
    while (f >> pair) {
        const auto eq = pair.find('=');
        if (eq != std::string::npos) out[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
    return out;
}

std::uint64_t replica_process::status_number(const std::string& key) const {
    const auto s = status();
    const auto it = s.find(key);
    return it == s.end() ? 0 : std::stoull(it->second);
}

// --- world ---------------------------------------------------------------------------

namespace {

// A blocking libpq connection as the cluster's superuser (the watcher's and setup's).
class superuser {
public:
    explicit superuser(const pg::cluster& db)
        : conn_(PQconnectdb((db.conninfo() + " application_name=fleet-watcher").c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK) {
            const std::string why = PQerrorMessage(conn_);
            PQfinish(conn_);
            throw std::runtime_error("fleet watcher: " + why);
        }
    }
    ~superuser() { PQfinish(conn_); }
    superuser(const superuser&) = delete;
    superuser& operator=(const superuser&) = delete;

    std::string value(const std::string& sql) {
        PGresult* r = PQexec(conn_, sql.c_str());
        const auto status = PQresultStatus(r);
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
            const std::string why = PQresultErrorMessage(r);
            PQclear(r);
            throw std::runtime_error("fleet: " + sql + ": " + why);
        }
        std::string v = status == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
        PQclear(r);
        return v;
    }

private:
    PGconn* conn_;
};

std::string redis_server_program() {
    const char* p = std::getenv("FAIRPOOL_REDIS_SERVER");
    if (!p || !*p) throw std::runtime_error("the fleet suite needs redis-server (FAIRPOOL_REDIS_SERVER; tools/install-deps)");
    return p;
}

}  // namespace

world::world(std::string replica_program, std::uint64_t budget)
    : program_(std::move(replica_program)), budget_(budget) {
    db_ = std::make_unique<pg::cluster>();
    {
        superuser su(*db_);
        su.value("CREATE ROLE fleet LOGIN NOSUPERUSER CONNECTION LIMIT -1");
    }
    redis_ = std::make_unique<fairpool::demo::redis_process>(redis_server_program());
    redis_admin_ = std::make_unique<fairpool::demo::testing::client>(redis_->port());
    dir_ = std::filesystem::temp_directory_path() / ("fairpool-fleet-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    watcher_ = std::thread([this] { watch_loop(); });
}

world::~world() {
    replicas_.clear();
    stop_ = true;
    watcher_.join();
    std::filesystem::remove_all(dir_);
}

void world::fence(bool on) {
    superuser su(*db_);
    su.value("ALTER ROLE fleet CONNECTION LIMIT " + (on ? std::to_string(budget_) : std::string("-1")));
}

void world::reset() {
    by_member_.clear();
    replicas_.clear();
    // Every backend of the killed replicas gone before the next scenario.
    const auto until = clock_type::now() + 10s;
    while (connections_now() != 0 && clock_type::now() < until) std::this_thread::sleep_for(10ms);
    started_ = 0;
    redis_admin_ = std::make_unique<fairpool::demo::testing::client>(redis_->port());
    redis_admin_->call({"FLUSHALL"});
    redis_admin_->call({"CONFIG", "RESETSTAT"});
}

replica_process& world::start(const replica_settings& r) {
    const auto n = [](std::uint64_t v) { return std::to_string(v); };
    std::vector<std::string> args{"--conninfo",
                                  "host=127.0.0.1 port=" + std::to_string(db_->port()) +
                                      " user=fleet dbname=postgres gssencmode=disable sslmode=disable",
                                  "--app", "fp-" + r.member, "--status", dir_ + "/" + r.member + ".status",
                                  "--member", r.member, "--budget-name", "fleet", "--budget", n(budget_),
                                  "--redis-port", n(redis_->port()), "--workers", n(r.workers), "--hold-ms",
                                  n(r.hold_ms), "--lease-ms", n(static_cast<std::uint64_t>(lease.count())),
                                  "--grace-ms", n(static_cast<std::uint64_t>(grace.count())), "--refresh-ms",
                                  n(static_cast<std::uint64_t>(refresh.count())), "--fallback", n(r.fallback)};
    if (r.static_slots > 0) args.insert(args.end(), {"--static", n(r.static_slots)});
    if (r.report_grant_as_held) args.emplace_back("--report-grant-as-held");
    replicas_.push_back(std::make_unique<replica_process>(program_, args, dir_ + "/" + r.member + ".status"));
    by_member_[r.member] = replicas_.back().get();
    ++started_;
    return *replicas_.back();
}

void world::reset_admin() { redis_admin_ = std::make_unique<fairpool::demo::testing::client>(redis_->port()); }

void world::watch_from_now() {
    max_ = last_.load();
    samples_ = 0;
    sum_ = 0;
}

double world::mean_connections() const {
    const auto s = samples_.load();
    return s == 0 ? 0 : static_cast<double>(sum_.load()) / static_cast<double>(s);
}

void world::watch_loop() {
    superuser su(*db_);
    while (!stop_) {
        const std::uint64_t n = std::stoull(su.value(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name LIKE 'fp-%'"));
        last_ = n;
        if (n > max_) max_ = n;
        sum_ += n;
        ++samples_;
        std::this_thread::sleep_for(2ms);
    }
}

std::map<std::string, world::member_view> world::members() {
    std::map<std::string, member_view> out;
    const auto all = redis_admin_->call({"HGETALL", "{fleet}:members"});
    for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2) {
        std::istringstream f(all.elements[i + 1].text);
        member_view v;
        std::uint64_t grant_version, applied_version;
        f >> v.grant >> grant_version >> applied_version >> v.held >> v.limit >> v.demand >> v.weight;
        out[all.elements[i].text] = v;
    }
    return out;
}

std::uint64_t world::violations() {
    const auto v = redis_admin_->call({"GET", "{fleet}:violations"});
    return v.text.empty() ? 0 : std::stoull(v.text);
}

std::uint64_t world::script_calls() {
    const auto info = redis_admin_->call({"INFO", "commandstats"}).text;
    std::uint64_t calls = 0;
    for (const char* cmd : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
        const auto at = info.find(cmd);
        if (at != std::string::npos) calls += std::stoull(info.substr(at + std::string(cmd).size()));
    }
    return calls;
}

std::uint64_t world::limit_of(const std::string& id) const {
    const auto it = by_member_.find(id);
    return it == by_member_.end() ? 0 : it->second->status_number("limit");
}

std::uint64_t world::refused_logins() const {
    std::uint64_t n = 0;
    for (const auto& r : replicas_) n += r->status_number("spawn_failures");
    return n;
}

std::map<std::string, std::uint64_t> fair_shares(
    std::uint64_t budget, const std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>& demand_weight) {
    std::map<std::string, std::uint64_t> share;
    std::vector<std::string> open;
    for (const auto& [id, dw] : demand_weight) {
        share[id] = 0;
        if (dw.first > 0) open.push_back(id);
    }
    std::uint64_t remaining = budget;
    while (!open.empty() && remaining > 0) {
        std::uint64_t w = 0;
        for (const auto& id : open) w += demand_weight.at(id).second;
        std::vector<std::string> still;
        std::uint64_t used = 0;
        for (const auto& id : open) {
            const auto [d, wi] = demand_weight.at(id);
            if (d * w <= remaining * wi) {
                share[id] = d;
                used += d;
            } else {
                still.push_back(id);
            }
        }
        if (still.size() == open.size()) {
            std::vector<std::pair<std::uint64_t, std::string>> fractions;  // (fraction, id)
            std::uint64_t rest = remaining;
            for (const auto& id : open) {
                const auto wi = demand_weight.at(id).second;
                share[id] = remaining * wi / w;
                rest -= share[id];
                fractions.emplace_back(remaining * wi % w, id);
            }
            std::stable_sort(fractions.begin(), fractions.end(), [](const auto& a, const auto& b) {
                return a.first != b.first ? a.first > b.first : a.second < b.second;
            });
            for (std::uint64_t i = 0; i < rest; ++i) ++share[fractions[i].second];
            break;
        }
        remaining -= used;
        open = std::move(still);
    }
    return share;
}

}  // namespace fairpool::fleet
