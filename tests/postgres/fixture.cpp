#include "fixture.hpp"

#include <memory>
#include <stdexcept>

namespace pg::testing {

pg::cluster& server() {
    static const std::unique_ptr<pg::cluster> db = std::make_unique<pg::cluster>();
    return *db;
}

observer::observer(const pg::cluster& db)
    : conn_(PQconnectdb((db.conninfo() + " application_name=fairpool-observer").c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
        const std::string why = PQerrorMessage(conn_);
        PQfinish(conn_);
        conn_ = nullptr;
        throw std::runtime_error("observer: " + why);
    }
}

observer::~observer() {
    if (conn_) PQfinish(conn_);
}

std::vector<std::string> observer::column(const std::string& sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const std::string why = PQresultErrorMessage(r);
        PQclear(r);
        throw std::runtime_error("observer: " + sql + ": " + why);
    }
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(r); ++i) out.emplace_back(PQgetvalue(r, i, 0));
    PQclear(r);
    return out;
}

long long observer::number(const std::string& sql, const std::vector<std::string>& params) {
    const auto rows = column(sql, params);
    if (rows.size() != 1) throw std::runtime_error("observer: " + sql + ": not one row");
    return std::stoll(rows[0]);
}

}  // namespace pg::testing
