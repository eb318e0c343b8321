// The stage_clocks table of the SQLite backend: which clocks other than the
// TSC read an end of a stage's samples (ticktrace/store/rows.h,
// StageClockRow). Like run_notes, a table of its own, created when a writer
// opens any store, so that it needs no schema version; a reader of a store
// without it finds none. Private to the store library.
#ifndef TICKTRACE_STORE_SQLITE_SQLITE_STAGE_CLOCKS_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_STAGE_CLOCKS_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::store::internal {

// Creates stage_clocks when it is missing. `context` names the store in errors.
absl::Status EnsureStageClocksTable(sqlite3* db, const std::string& context);

// Adds the rows of `run_id` the table does not have (a row it has is left).
// REQUIRES: inside the caller's transaction.
absl::Status WriteStageClocks(sqlite3* db, int64_t run_id, const std::vector<StageClockRow>& rows,
                              const std::string& context);

// The rows of `run_id` by stage, side ("begin" before "end") and clock; none
// when the store has no stage_clocks table.
absl::StatusOr<std::vector<StageClockRow>> ReadStageClocks(sqlite3* db, int64_t run_id,
                                                           const std::string& context);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_STAGE_CLOCKS_H_
