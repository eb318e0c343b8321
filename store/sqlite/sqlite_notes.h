// The run_notes table of the SQLite backend: what the collector said about a
// run (ticktrace/store/rows.h, RunNote). A table of its own, created when a
// writer opens any store (CREATE TABLE IF NOT EXISTS), so that it needs no
// schema version of its own; a reader of a store without it finds no notes.
// Private to the store library.
#ifndef TICKTRACE_STORE_SQLITE_SQLITE_NOTES_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_NOTES_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::store::internal {

// Creates run_notes when it is missing. `context` names the store in errors.
absl::Status EnsureRunNotesTable(sqlite3* db, const std::string& context);

// Stores `notes` of `run_id`, one row per kind (a kind stored again is
// replaced). REQUIRES: inside the caller's transaction.
absl::Status WriteRunNotes(sqlite3* db, int64_t run_id, const std::vector<RunNote>& notes,
                           const std::string& context);

// The notes of `run_id` in the order they were first stored; none when the
// store has no run_notes table.
absl::StatusOr<std::vector<RunNote>> ReadRunNotes(sqlite3* db, int64_t run_id,
                                                  const std::string& context);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_NOTES_H_
