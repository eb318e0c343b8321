// The budget_breaches table of the SQLite backend: the closed intervals whose
// figure broke a latency budget (ticktrace/store/rows.h, BudgetBreachRow).
// Like run_notes (sqlite_notes.h), a table of its own, created when a writer
// opens any store, so that it needs no schema version; a reader of a store
// without it finds no breaches. Private to the store library.
#ifndef TICKTRACE_STORE_SQLITE_SQLITE_BUDGET_BREACHES_H_
#define TICKTRACE_STORE_SQLITE_SQLITE_BUDGET_BREACHES_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::store::internal {

// Creates budget_breaches when it is missing. `context` names the store in errors.
absl::Status EnsureBudgetBreachesTable(sqlite3* db, const std::string& context);

// Stores `breaches` of `run_id`; a (budget, interval) stored already is left
// as it is (a resumed run judging an interval again). REQUIRES: inside the
// caller's transaction.
absl::Status WriteBudgetBreaches(sqlite3* db, int64_t run_id,
                                 const std::vector<BudgetBreachRow>& breaches,
                                 const std::string& context);

// The breaches of `run_id` by interval, then budget; none when the store
// has no budget_breaches table.
absl::StatusOr<std::vector<BudgetBreachRow>> ReadBudgetBreaches(sqlite3* db, int64_t run_id,
                                                                const std::string& context);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_SQLITE_SQLITE_BUDGET_BREACHES_H_
