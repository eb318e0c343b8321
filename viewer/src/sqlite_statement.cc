#include "sqlite_statement.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace ticktrace::view::internal {

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view context) {
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

absl::StatusOr<Statement> Statement::Prepare(sqlite3* db, absl::string_view sql,
                                             absl::string_view context) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
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

void Statement::BindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::BindDouble(int index, double value) { sqlite3_bind_double(stmt_, index, value); }

void Statement::BindText(int index, absl::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, context_);
}

bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::Double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::Text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
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

}  // namespace ticktrace::view::internal
