// One row per sample and per stamp, for SQL that wants them: TEMP tables
// `samples` and `stamps` on a connection, decoded from the packed order
// detail that the view `orders` gives (docs/store.md, "Flat rows"). Their
// columns are schema 1's (plus `instance`), so queries written for one row
// per stamp keep working.
// The tests and the benches read stores this way; the SQLite reader and the
// block decoder (sqlite_blocks.h) use only ParseSampleCells (orders.samples).

#ifndef TICKTRACE_STORE_SQLITE_EXPAND_H_
#define TICKTRACE_STORE_SQLITE_EXPAND_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace ticktrace::store {

// One element of orders.samples.
struct SampleCell {
  uint32_t stage_id = 0;
  int64_t latency_ns = 0;
  uint32_t flags = 0;
};

// Parses orders.samples ("[[stage_id,latency_ns,flags],...]"); untrusted:
// InvalidArgument for anything else.
absl::StatusOr<std::vector<SampleCell>> ParseSampleCells(std::string_view json);

// Creates (or replaces) TEMP tables samples and stamps on `db` holding every
// stored order's samples and stamps. Any connection, read-only ones too.
absl::Status ExpandDetail(sqlite3* db);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_SQLITE_EXPAND_H_
