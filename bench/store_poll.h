// A read-only look at the SQLite store a collector under test is writing,
// for daemon_bench and visibility_bench: the connection opens once the file
// and its schema exist (busy timeout 100 ms, so a poll never stalls the
// benchmark behind the writer), and one statement is stepped again on every
// poll. Statements go through the store's RAII wrapper
// (store/sqlite/sqlite_statement.h). Header-only; the calling thread only.
#ifndef TICKTRACE_BENCH_STORE_POLL_H_
#define TICKTRACE_BENCH_STORE_POLL_H_

#include <sqlite3.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "store/sqlite/sqlite_block_sql.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::bench {

class StorePoll {
 public:
  // `sql`: the statement each poll steps (no parameters).
  StorePoll(std::string path, std::string sql) : path_(std::move(path)), sql_(std::move(sql)) {}
  ~StorePoll() { Close(); }
  StorePoll(const StorePoll&) = delete;
  StorePoll& operator=(const StorePoll&) = delete;

  // Opens (once): false while the store or its schema does not exist yet.
  bool Ready() {
    if (poll_.has_value()) return true;
    if (db_ == nullptr) {
      if (access(path_.c_str(), R_OK) != 0) return false;
      // `orders` is a view over the blocks that needs the store's SQL
      // functions (sqlite_block_sql.h), registered on this connection.
      if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
          !store::RegisterBlockSqlFunctions(db_).ok()) {
        sqlite3_close(db_);
        db_ = nullptr;
        return false;
      }
    }
    sqlite3_busy_timeout(db_, 100);
    absl::StatusOr<store::internal::Statement> s =
        store::internal::Statement::Prepare(db_, sql_, path_);
    if (!s.ok()) return false;  // schema not there yet
    poll_ = *std::move(s);
    return true;
  }

  // Steps the poll statement through its rows, calling `row(statement)` on
  // each, and rewinds it. False when not ready or a step failed.
  template <typename RowFn>
  bool Poll(RowFn&& row) {
    if (!Ready()) return false;
    const absl::Status s = poll_->ForEachRow([&] { row(*poll_); });
    poll_->Reset();
    return s.ok();
  }

  // The first column of the first row of `sql`, or nullopt (not ready, no
  // row, NULL, or an error).
  std::optional<int64_t> QueryInt(const char* sql) {
    if (!Ready()) return std::nullopt;
    absl::StatusOr<store::internal::Statement> s =
        store::internal::Statement::Prepare(db_, sql, path_);
    if (!s.ok()) return std::nullopt;
    const absl::StatusOr<bool> row = s->Step();
    if (!row.ok() || !*row || s->IsNull(0)) return std::nullopt;
    return s->Int(0);
  }

  void Close() {
    poll_.reset();  // finalized before the connection closes
    if (db_ != nullptr) sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  std::string path_;
  std::string sql_;
  sqlite3* db_ = nullptr;
  std::optional<store::internal::Statement> poll_;
};

}  // namespace ticktrace::bench

#endif  // TICKTRACE_BENCH_STORE_POLL_H_
