// The SQLite store's schema: DDL, version and migrations (docs/store.md).
// The only place that knows them; the collector's writer and the viewer's
// reader both come here.

#ifndef TICKTRACE_STORE_SQLITE_SCHEMA_H_
#define TICKTRACE_STORE_SQLITE_SCHEMA_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace ticktrace::store {

// meta.schema_version written by this code. 1: one row per stamp, sample and
// order (before interval statistics). 2: intervals, packed order detail, a
// row per order. 3: orders in blocks (order_blocks, order_ids), `orders` a
// view.
inline constexpr int kSqliteSchemaVersion = 3;
inline constexpr int kOldestMigratableVersion = 1;

// The DDL of a new store, with its meta rows.
const char* SqliteSchemaSql();

// Gives a schema-3 store made before compact order blocks the views that
// read them (sqlite_block_sql.h): replaces `orders` and `stage_latencies`
// when `orders` does not call ticktrace_block_orders yet. A writer's
// connection, once per open.
absl::Status EnsureBlockViews(sqlite3* db, const std::string& path);

// Reads meta.app and meta.schema_version. FailedPrecondition (naming `path`)
// when the database is not a ticktrace store, including one where a name of
// our tables is a view or anything else but a table.
absl::StatusOr<int> ReadSchemaVersion(sqlite3* db, const std::string& path);

// Migrates a store of `from_version` (>= kOldestMigratableVersion) to
// kSqliteSchemaVersion in place, in one transaction. The caller makes the
// backup copy first (BackupBeforeMigration).
absl::Status MigrateSqliteStore(sqlite3* db, int from_version, const std::string& path);

// Copies the store at `path` (a consistent snapshot, via SQLite's backup API)
// to "<path>.schema<version>.bak", a new file (0600, never over an existing
// one). Returns the backup's path.
absl::StatusOr<std::string> BackupBeforeMigration(sqlite3* db, const std::string& path,
                                                  int version);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_SCHEMA_H_
