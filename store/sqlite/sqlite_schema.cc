#include "store/sqlite/sqlite_schema.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::store {

const char* SqliteSchemaSql() {
  return
#include "store/sqlite/sqlite_schema_sql.inc"
      ;
}

namespace {

// The tables of every schema version that our statements name. A store in
// which one of them is something else (a view: it would run its own SQL,
// perhaps for ever, where we expect rows) is not one of ours.
constexpr const char* kOwnTables =
    "'meta', 'runs', 'processes', 'threads', 'tags', 'counters', 'stages', 'names', "
    "'stage_stats', 'intervals', 'interval_detail', 'order_blocks', 'order_ids', 'cores', "
    "'anchors', 'samples', 'stamps'";

absl::Status CheckOwnTablesAreTables(sqlite3* db, const std::string& path) {
  absl::StatusOr<internal::Statement> stmt = internal::Statement::Prepare(
      db,
      absl::StrCat("SELECT name, type FROM sqlite_master WHERE name IN (", kOwnTables,
                   ") AND type <> 'table' ORDER BY name LIMIT 1"),
      path);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (*row) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": `", stmt->Text(0), "` is a ", stmt->Text(1),
                     ", not a table; not a ticktrace store's schema, refusing it"));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// Replaces the two views with the schema's own text, and runs `then` (more
// SQL, or nothing) in the same transaction.
absl::Status ReplaceBlockViews(sqlite3* db, const std::string& path, const std::string& then) {
  const std::string schema = SqliteSchemaSql();
  const size_t begin = schema.find("CREATE VIEW IF NOT EXISTS orders");
  const size_t end = schema.find("INSERT OR IGNORE INTO meta");
  const std::string sql =
      absl::StrCat("BEGIN IMMEDIATE; DROP VIEW IF EXISTS stage_latencies; DROP VIEW IF EXISTS orders; ",
                   schema.substr(begin, end - begin), then, " COMMIT;");
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error != nullptr ? error : sqlite3_errmsg(db);
    sqlite3_free(error);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return absl::InternalError(absl::StrCat(path, ": cannot replace the views: ", message));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EnsureBlockViews(sqlite3* db, const std::string& path) {
  {
    // Finalized before the views change.
    absl::StatusOr<internal::Statement> q = internal::Statement::Prepare(
        db,
        "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'orders' AND "
        "sql LIKE '%ticktrace_block_orders%'",
        path);
    if (!q.ok()) return q.status();
    absl::StatusOr<bool> row = q->Step();
    if (!row.ok()) return row.status();
    if (*row && q->Int(0) > 0) return absl::OkStatus();
  }
  return ReplaceBlockViews(db, path, "");
}

absl::Status UpgradeSchema3InPlace(sqlite3* db, const std::string& path) {
  return ReplaceBlockViews(
      db, path,
      absl::StrCat(" UPDATE meta SET value = '", kSqliteSchemaVersion,
                   "' WHERE key = 'schema_version' AND value = '3';"));
}

absl::StatusOr<int> ReadSchemaVersion(sqlite3* db, const std::string& path) {
  const auto not_ours = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a ticktrace store (", why, "); left untouched"));
  };
  if (absl::Status s = CheckOwnTablesAreTables(db, path); !s.ok()) return s;
  absl::StatusOr<internal::Statement> stmt = internal::Statement::Prepare(
      db, "SELECT key, value FROM meta WHERE key IN ('app','schema_version')", path);
  if (!stmt.ok()) return not_ours("no meta table");
  std::string app;
  std::string version;
  const absl::Status read = stmt->ForEachRow([&] {
    if (stmt->IsNull(0) || stmt->IsNull(1)) return;
    (stmt->Text(0) == "app" ? app : version) = stmt->Text(1);
  });
  if (!read.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot read meta: ", sqlite3_errmsg(db)));
  }
  if (app != "ticktrace") return not_ours("meta.app is not 'ticktrace'");
  int v = 0;
  if (!absl::SimpleAtoi(version, &v) || v < 1) return not_ours("no schema_version");
  return v;
}

absl::StatusOr<std::string> BackupBeforeMigration(sqlite3* db, const std::string& path,
                                                  int version) {
  const std::string backup_path = absl::StrCat(path, ".schema", version, ".bak");
  // Created here, exclusively and without following links, so that the
  // backup never lands on somebody else's file; SQLite then writes into it.
  const int fd = ::open(backup_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the backup ", backup_path, " before migrating: ", std::strerror(errno),
        errno == EEXIST ? " (an earlier backup is there: move it away first)" : ""));
  }
  ::close(fd);
  sqlite3* out = nullptr;
  absl::Status status;
  if (sqlite3_open_v2(backup_path.c_str(), &out, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    status = absl::InternalError(absl::StrCat(backup_path, ": ", sqlite3_errmsg(out)));
  } else if (sqlite3_backup* b = sqlite3_backup_init(out, "main", db, "main"); b == nullptr) {
    status = absl::InternalError(absl::StrCat(backup_path, ": ", sqlite3_errmsg(out)));
  } else {
    const int rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
      status = absl::InternalError(absl::StrCat(backup_path, ": backup failed: ",
                                                sqlite3_errstr(rc)));
    }
  }
  sqlite3_close(out);
  if (!status.ok()) {
    ::unlink(backup_path.c_str());
    return status;
  }
  return backup_path;
}

}  // namespace ticktrace::store
