// The ClickHouse backend of StoreReader (ticktrace/store/reader.h). Private to
// the store library: store/open.cc (OpenReader) is its only caller.
//
// What this reader relies on in the writer (clickhouse_writer.cc):
//   - runs: one live row per (run_id, claim) (FINAL); where several claims
//     share a run_id the smallest claim is the run (ORDER BY claim LIMIT 1 BY
//     run_id);
//   - intervals / interval_detail as delta rows (summed, histograms merged);
//   - orders unique per (run_id, order_id, instance) (read with LIMIT 1 BY).
#ifndef TICKTRACE_VIEW_SRC_CLICKHOUSE_STORE_READER_H_
#define TICKTRACE_VIEW_SRC_CLICKHOUSE_STORE_READER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ticktrace/store/uri.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::store::internal {

// Opens the ClickHouse store `uri` (clickhouse://HOST:PORT/DATABASE, user and
// password from TICKTRACE_CLICKHOUSE_USER / _PASSWORD) for reading.
// Unavailable when the server does not answer, NotFound when the database
// holds no ticktrace store, FailedPrecondition for another application's
// database or a newer schema. Never writes.
absl::StatusOr<std::unique_ptr<StoreReader>> OpenClickHouseStoreReader(const store::StoreUri& uri);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_VIEW_SRC_CLICKHOUSE_STORE_READER_H_
