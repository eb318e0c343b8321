// A prepared SQLite statement that finalizes itself, with errors as
// absl::Status. Private to the viewer library; only store.cc uses it.
#ifndef TICKTRACE_VIEW_SRC_SQLITE_STATEMENT_H_
#define TICKTRACE_VIEW_SRC_SQLITE_STATEMENT_H_

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::view::internal {

// Turns an SQLite result code into a Status whose message starts with
// `context` and ends with SQLite's own message for `db`.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view context);

class Statement {
 public:
  // Prepares `sql` on `db`. `context` names the query in error messages.
  static absl::StatusOr<Statement> Prepare(sqlite3* db, absl::string_view sql,
                                           absl::string_view context);

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binders; `index` is 1-based as in SQLite.
  void BindInt(int index, int64_t value);
  void BindDouble(int index, double value);
  void BindText(int index, absl::string_view value);

  // Advances to the next row: true when a row is ready, false when done.
  absl::StatusOr<bool> Step();

  // Column readers for the current row; `col` is 0-based.
  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::optional<int64_t> OptionalInt(int col) const;
  std::optional<double> OptionalDouble(int col) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string context)
      : db_(db), stmt_(stmt), context_(std::move(context)) {}

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string context_;
};

}  // namespace ticktrace::view::internal

#endif  // TICKTRACE_VIEW_SRC_SQLITE_STATEMENT_H_
