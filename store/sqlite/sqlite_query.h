// A prepared SQLite statement for the schema-2 reader (sqlite_store_reader.cc):
// finalizes itself, can be reset and stepped again (the interval walks run
// one statement per interval), reads BLOBs without a copy, and turns errors
// into absl::Status with the query's context. Private to the viewer library.
#ifndef TICKTRACE_VIEW_SRC_SQLITE_QUERY_H_
#define TICKTRACE_VIEW_SRC_SQLITE_QUERY_H_

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::store::internal {

// An SQLite error as absl::Status, with `context` first: DataLoss for a
// corrupt or non-database file, Unavailable for busy/locked, PermissionDenied
// for open and permission errors, Internal otherwise.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view context);

class Query {
 public:
  // Prepares `sql` on `db`; `context` names the query in error messages.
  static absl::StatusOr<Query> Prepare(sqlite3* db, std::string_view sql,
                                       std::string_view context);

  Query(Query&& other) noexcept;
  Query& operator=(Query&& other) noexcept;
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  // Binders; `index` is 1-based as in SQLite.
  Query& Bind(int index, int64_t value);
  Query& BindText(int index, std::string_view value);
  // Clears the bindings and rewinds, for the next Bind()s and Step()s.
  void Reset();
  // Advances to the next row: true when a row is ready, false when done.
  absl::StatusOr<bool> Step();

  // Column readers for the current row; `col` is 0-based. Blob() is valid
  // until the next Step() or Reset().
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const;
  std::string_view Blob(int col) const;
  std::optional<int64_t> OptionalInt(int col) const;
  std::optional<double> OptionalDouble(int col) const;

 private:
  Query(sqlite3* db, sqlite3_stmt* stmt, std::string context)
      : db_(db), stmt_(stmt), context_(std::move(context)) {}

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string context_;
};

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_SQLITE_QUERY_H_
