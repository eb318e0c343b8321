// The one prepared-statement wrapper of the SQLite backend: the writer's
// persistent inserts, the migration, the flat-rows expansion and the reader
// all prepare, bind, step and read through it. It finalizes itself, can be
// rewound and stepped again (the writer's hot-path statements, the reader's
// one-statement-per-interval walks), reads BLOBs without a copy, and turns
// errors into absl::Status with the statement's context. Private to the
// store library.
#ifndef TICKTRACE_STORE_SQLITE_SQLITE_STATEMENT_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_STATEMENT_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ticktrace::store::internal {

// An open connection, closed when it goes (reader and writer alike).
struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

// An SQLite error as absl::Status, with `context` first: DataLoss for a
// corrupt or non-database file, Unavailable for busy/locked, PermissionDenied
// for open and permission errors, Internal otherwise.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view context);

// Runs `sql` (one or more statements, no rows wanted) with sqlite3_exec;
// an error is Internal, "<context>: <sqlite's message>".
absl::Status ExecSql(sqlite3* db, const char* sql, std::string_view context);

// Whether `db` has a table named `table` (sqlite_master). A table kept
// outside the schema version (run_notes, budget_breaches, stage_clocks) is
// missing from a store written before it: its reader then finds no rows.
absl::StatusOr<bool> TableExists(sqlite3* db, std::string_view table, std::string_view context);

// Makes `db` treat the schema inside the file as somebody else's: triggers
// and views never run (SQLITE_DBCONFIG_ENABLE_TRIGGER/_VIEW off: none of our
// own statements uses either; the `orders` and `stage_latencies` views stay in
// the DDL for users' own SQL, docs/store.md), and PRAGMA trusted_schema=OFF
// (a function with side effects or a virtual table named in the schema is
// refused). Every connection of the store library to an existing file,
// reader and writer alike, calls it right after opening, before any query,
// so a planted or edited store cannot run its SQL inside the collector or
// the viewer (docs/security.md).
absl::Status DistrustSchema(sqlite3* db, std::string_view context);

// Stops any one step of a statement on `db` (Statement::Step, Run, ExecSql)
// that runs longer than `limit_ms`: it fails DeadlineExceeded, "<context>:
// query stopped after its time limit of N ms (TICKTRACE_QUERY_TIMEOUT_MS)".
// A progress handler checks the clock every few thousand VM instructions, so
// the cost is nil for a query that returns at once. The viewer's connections
// use it (sqlite_reader.cc); a step is one row, so an export of many rows is
// not limited as a whole, only a step that computes for long.
void LimitStepTime(sqlite3* db, int64_t limit_ms);

class Statement {
 public:
  // Prepares `sql` on `db`; `context` names the statement in error messages.
  static absl::StatusOr<Statement> Prepare(sqlite3* db, std::string_view sql,
                                           std::string_view context);
  // As Prepare, for a statement kept for the connection's lifetime and
  // stepped many times (SQLITE_PREPARE_PERSISTENT).
  static absl::StatusOr<Statement> PreparePersistent(sqlite3* db, std::string_view sql,
                                                     std::string_view context);

  Statement() = default;  // empty until a prepared one is moved in
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  bool prepared() const { return stmt_ != nullptr; }

  // Binders; `index` is 1-based as in SQLite. Text and blobs are copied,
  // except by the *NoCopy ones. REQUIRES (NoCopy): `value` outlives the
  // next Step(), Run() or Reset().
  Statement& Bind(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindNull(int index);
  Statement& BindOptional(int index, const std::optional<int64_t>& value);  // NULL when empty
  Statement& BindText(int index, std::string_view value);
  Statement& BindBlob(int index, std::string_view value);
  Statement& BindTextNoCopy(int index, std::string_view value);
  Statement& BindBlobNoCopy(int index, std::string_view value);
  // Clears the bindings and rewinds, for the next Bind()s and Step()s.
  void Reset();
  // Rewinds and keeps the bindings (to step again with one of them changed).
  void Rewind();
  // Advances to the next row: true when a row is ready, false when done.
  absl::StatusOr<bool> Step();
  // Steps a statement that answers no row to its end, then Rewind()s it.
  absl::Status Run();
  // Steps through every row, calling `row()` on each; `row` returns void or
  // absl::Status (an error stops the walk and is returned).
  template <typename RowFn>
  absl::Status ForEachRow(RowFn&& row);
  // Every row, as read by `read(*this)`, in order.
  template <typename ReadFn>
  auto Collect(ReadFn&& read) -> absl::StatusOr<std::vector<decltype(read(*this))>>;

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
  // SQLITE_TRANSIENT copies `value`; SQLITE_STATIC keeps a pointer to it.
  Statement& BindBytes(int index, std::string_view value, bool text,
                       sqlite3_destructor_type lifetime);
  static absl::StatusOr<Statement> PrepareWith(sqlite3* db, std::string_view sql,
                                               std::string_view context, unsigned flags);
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string context)
      : db_(db), stmt_(stmt), context_(std::move(context)) {}

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string context_;
};

template <typename RowFn>
absl::Status Statement::ForEachRow(RowFn&& row) {
  for (;;) {
    absl::StatusOr<bool> more = Step();
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    if constexpr (std::is_void_v<decltype(row())>) {
      row();
    } else if (absl::Status s = row(); !s.ok()) {
      return s;
    }
  }
}

template <typename ReadFn>
auto Statement::Collect(ReadFn&& read) -> absl::StatusOr<std::vector<decltype(read(*this))>> {
  std::vector<decltype(read(*this))> out;
  absl::Status s = ForEachRow([&] { out.push_back(read(*this)); });
  if (!s.ok()) return s;
  return out;
}

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_STATEMENT_H_
