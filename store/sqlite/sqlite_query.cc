#include "store/sqlite/sqlite_query.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace ticktrace::store::internal {

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

absl::StatusOr<Query> Query::Prepare(sqlite3* db, std::string_view sql,
                                     std::string_view context) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, rc, context);
  }
  return Query(db, stmt, std::string(context));
}

Query::Query(Query&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)),
      context_(std::move(other.context_)) {}

Query& Query::operator=(Query&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    context_ = std::move(other.context_);
  }
  return *this;
}

Query::~Query() { sqlite3_finalize(stmt_); }

Query& Query::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Query& Query::BindText(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

void Query::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

absl::StatusOr<bool> Query::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, context_);
}

std::string Query::Text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string_view Query::Blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  if (data == nullptr) return std::string_view();
  return std::string_view(static_cast<const char*>(data),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<int64_t> Query::OptionalInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::optional<double> Query::OptionalDouble(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Double(col);
}

}  // namespace ticktrace::store::internal
