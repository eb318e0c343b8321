// The ClickHouse store's schema: DDL, version and checks (docs/clickhouse.md).
// The only place that knows them; the collector's ClickHouseWriter and the
// viewer's ClickHouse reader both come here. The table and column names, the
// flag columns (ticktrace/store/flags.h), the counter names (ticktrace/store/names.h),
// the histogram (ticktrace/store/histogram.h) and the packed detail (store/common/detail.h) are
// the same as SQLite's (docs/store.md); docs/clickhouse.md says where the two
// differ (delta rows, arrays for samples, ReplacingMergeTree snapshots).

#ifndef TICKTRACE_STORE_CLICKHOUSE_SCHEMA_H_
#define TICKTRACE_STORE_CLICKHOUSE_SCHEMA_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/clickhouse/http_client.h"

namespace ticktrace::store {

// meta.schema_version written by this code. 1: the first ClickHouse schema
// (the content of SQLite's schema 2). 2: intervals_minute, the per-minute
// rollup (clickhouse_rollup.h); readers take a schema-1 store as it is.
inline constexpr int kClickHouseSchemaVersion = 2;

// The DDL statements of a new store, in order (one per HTTP request, run
// against the store's database). Each may run again over an existing store.
const std::vector<std::string_view>& ClickHouseSchemaStatements();

// Reads meta.app and meta.schema_version of `database`. NotFound: no such
// database or no meta table (a new store). FailedPrecondition (naming the
// store) when meta says it is not a ticktrace store. Unavailable: the server
// did not answer.
absl::StatusOr<int> ReadClickHouseSchemaVersion(HttpClient& client, const std::string& database);

// Creates `database` and its tables when absent (meta rows included) and
// checks an existing one: FailedPrecondition for another application's
// database or a newer schema (left untouched). Unavailable: no server.
// Migrates an older schema: 1 -> 2 creates intervals_minute and rolls up
// every run's intervals (BackfillMinuteRollup), then writes version 2 (an
// interrupted migration runs again at the next open). The writer's Open is
// the caller; readers never write.
absl::Status EnsureClickHouseSchema(HttpClient& client, const std::string& database);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_CLICKHOUSE_SCHEMA_H_
