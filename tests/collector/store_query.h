// Test helper: reads a ticktrace store with plain SQL. The packed order
// detail is expanded into TEMP tables `samples` and `stamps` (one row per
// sample and per stamp, store/sqlite/sqlite_expand.h) as the connection
// opens, so a test sees what the store holds at that moment.

#ifndef TICKTRACE_TESTS_COLLECTOR_STORE_QUERY_H_
#define TICKTRACE_TESTS_COLLECTOR_STORE_QUERY_H_

#include <sqlite3.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_expand.h"

namespace ticktrace::collect::testing {

class StoreQuery {
 public:
  explicit StoreQuery(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      throw std::runtime_error("cannot open " + path);
    }
    sqlite3_busy_timeout(db_, 5000);
    if (absl::Status s = store::ExpandDetail(db_); !s.ok()) {
      throw std::runtime_error(path + ": " + std::string(s.message()));
    }
  }
  ~StoreQuery() { sqlite3_close(db_); }

  // The first column of the first row as int64 (0 when NULL or no row).
  int64_t Int(const std::string& sql) {
    auto rows = Rows(sql);
    return rows.empty() || rows[0].empty() || rows[0][0].empty() ? 0 : std::stoll(rows[0][0]);
  }
  double Real(const std::string& sql) {
    auto rows = Rows(sql);
    return rows.empty() || rows[0].empty() || rows[0][0].empty() ? 0 : std::stod(rows[0][0]);
  }
  std::string Text(const std::string& sql) {
    auto rows = Rows(sql);
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
  }
  std::vector<std::vector<std::string>> Rows(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("bad sql: ") + sqlite3_errmsg(db_));
    }
    std::vector<std::vector<std::string>> out;
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_STORE_QUERY_H_
