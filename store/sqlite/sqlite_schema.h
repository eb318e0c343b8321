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
// view. 4: blocks may be compact (sqlite_block_codec.h) and the views read
// them through our SQL functions (sqlite_block_sql.h); a program that reads
// only 3 would fail on a compact block, so it must refuse the store instead.
inline constexpr int kSqliteSchemaVersion = 4;
inline constexpr int kOldestMigratableVersion = 1;
// Schema 3's rows are schema 4's (its blocks all in the older encoding,
// which 4 still reads): a reader reads it as it is, and a writer moves it to
// 4 by replacing the two views, no row rewritten (UpgradeSchema3InPlace).
inline constexpr int kOldestReadAsIsVersion = 3;

// The DDL of a new store, with its meta rows.
const char* SqliteSchemaSql();

// Gives a store the views that read compact blocks (sqlite_block_sql.h):
// replaces `orders` and `stage_latencies` when `orders` does not call
// ticktrace_block_orders yet (a store migrated from 1 or 2). A writer's
// connection, once per open.
absl::Status EnsureBlockViews(sqlite3* db, const std::string& path);

// Moves a schema-3 store to schema 4 in one transaction: the two views
// replaced and meta.schema_version set; no row is rewritten, so no backup
// is made. A writer's connection.
absl::Status UpgradeSchema3InPlace(sqlite3* db, const std::string& path);

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
