#include "store/sqlite/sqlite_statement.h"

#include <time.h>

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ticktrace::store::internal {
namespace {

int64_t MonotonicMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// When the step now running on this thread began (Step, Run, ExecSql set it
// just before they enter SQLite; the progress handler runs inside that call,
// on the same thread).
thread_local int64_t step_started_ms = 0;

// The progress handler of LimitStepTime: `limit` is the limit in ms, carried
// in the pointer itself so that nothing has to outlive the connection.
int StopLongStep(void* limit) {
  const auto limit_ms = static_cast<int64_t>(reinterpret_cast<intptr_t>(limit));
  return MonotonicMs() - step_started_ms > limit_ms ? 1 : 0;
}

// The error of an interrupted step (the only interrupts are ours).
absl::Status StepError(sqlite3* db, int rc, std::string_view context_in) {
  if ((rc & 0xff) == SQLITE_INTERRUPT) {
    const absl::string_view context(context_in.data(), context_in.size());
    return absl::DeadlineExceededError(
        absl::StrCat(context, ": query stopped after its time limit (TICKTRACE_QUERY_TIMEOUT_MS); "
                              "the store may be damaged or hostile"));
  }
  return SqliteError(db, rc, context_in);
}

}  // namespace

absl::Status DistrustSchema(sqlite3* db, std::string_view context_in) {
  const absl::string_view context(context_in.data(), context_in.size());
  int now_on = 1;
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &now_on) != SQLITE_OK ||
      now_on != 0 ||
      sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, &now_on) != SQLITE_OK ||
      now_on != 0) {
    return absl::InternalError(absl::StrCat(context, ": cannot turn triggers and views off"));
  }
  return ExecSql(db, "PRAGMA trusted_schema=OFF", context_in);
}

void LimitStepTime(sqlite3* db, int64_t limit_ms) {
  // Every 10,000 VM instructions: well under a millisecond of work.
  sqlite3_progress_handler(db, 10000, StopLongStep,
                           reinterpret_cast<void*>(static_cast<intptr_t>(limit_ms)));
}

absl::Status SqliteError(sqlite3* db, int rc, std::string_view context_in) {
  const absl::string_view context(context_in.data(), context_in.size());
  const int primary = rc & 0xff;
  std::string message =
      absl::StrCat(context, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (primary) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return absl::DataLossError(std::move(message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(std::move(message));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_READONLY:
      return absl::PermissionDeniedError(std::move(message));
    default:
      return absl::InternalError(std::move(message));
  }
}

absl::Status ExecSql(sqlite3* db, const char* sql, std::string_view context_in) {
  const absl::string_view context(context_in.data(), context_in.size());
  char* err = nullptr;
  step_started_ms = MonotonicMs();
  if (const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    absl::Status s = (rc & 0xff) == SQLITE_INTERRUPT
                         ? StepError(db, rc, context_in)
                         : absl::InternalError(absl::StrCat(context, ": ", err ? err : "sqlite error"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> TableExists(sqlite3* db, std::string_view table, std::string_view context) {
  absl::StatusOr<Statement> s = Statement::Prepare(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
      absl::StrCat(absl::string_view(context.data(), context.size()), ": look for table ",
                   absl::string_view(table.data(), table.size())));
  if (!s.ok()) return s.status();
  s->BindText(1, table);
  absl::StatusOr<bool> row = s->Step();
  if (!row.ok()) return row.status();
  return *row && s->Int(0) > 0;
}

absl::StatusOr<Statement> Statement::Prepare(sqlite3* db, std::string_view sql,
                                             std::string_view context) {
  return PrepareWith(db, sql, context, 0);
}

absl::StatusOr<Statement> Statement::PreparePersistent(sqlite3* db, std::string_view sql,
                                                       std::string_view context) {
  return PrepareWith(db, sql, context, SQLITE_PREPARE_PERSISTENT);
}

absl::StatusOr<Statement> Statement::PrepareWith(sqlite3* db, std::string_view sql,
                                                 std::string_view context, unsigned flags) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), flags, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, rc, context);
  }
  return Statement(db, stmt, std::string(context));
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)),
      context_(std::move(other.context_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    context_ = std::move(other.context_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Statement& Statement::BindOptional(int index, const std::optional<int64_t>& value) {
  return value.has_value() ? Bind(index, *value) : BindNull(index);
}

Statement& Statement::BindText(int index, std::string_view value) {
  return BindBytes(index, value, /*text=*/true, SQLITE_TRANSIENT);
}

Statement& Statement::BindBlob(int index, std::string_view value) {
  return BindBytes(index, value, /*text=*/false, SQLITE_TRANSIENT);
}

Statement& Statement::BindTextNoCopy(int index, std::string_view value) {
  return BindBytes(index, value, /*text=*/true, SQLITE_STATIC);
}

Statement& Statement::BindBlobNoCopy(int index, std::string_view value) {
  return BindBytes(index, value, /*text=*/false, SQLITE_STATIC);
}

Statement& Statement::BindBytes(int index, std::string_view value, bool text,
                                sqlite3_destructor_type lifetime) {
  const int n = static_cast<int>(value.size());
  if (text) {
    sqlite3_bind_text(stmt_, index, value.data(), n, lifetime);
  } else {
    sqlite3_bind_blob(stmt_, index, value.data(), n, lifetime);
  }
  return *this;
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Statement::Rewind() { sqlite3_reset(stmt_); }

absl::StatusOr<bool> Statement::Step() {
  step_started_ms = MonotonicMs();
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StepError(db_, rc, context_);
}

absl::Status Statement::Run() {
  step_started_ms = MonotonicMs();
  const int rc = sqlite3_step(stmt_);
  absl::Status s = rc == SQLITE_DONE ? absl::OkStatus() : StepError(db_, rc, context_);
  sqlite3_reset(stmt_);
  return s;
}

std::string Statement::Text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string_view Statement::Blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  if (data == nullptr) return std::string_view();
  return std::string_view(static_cast<const char*>(data),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<int64_t> Statement::OptionalInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::optional<double> Statement::OptionalDouble(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Double(col);
}

}  // namespace ticktrace::store::internal
