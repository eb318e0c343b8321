#include "store/sqlite/sqlite_budget_breaches.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/name_text.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::store::internal {

absl::Status EnsureBudgetBreachesTable(sqlite3* db, const std::string& context) {
  return ExecSql(db,
                 "CREATE TABLE IF NOT EXISTS budget_breaches(run_id INTEGER NOT NULL, "
                 "budget TEXT NOT NULL, interval_start_utc_ns INTEGER NOT NULL, "
                 "stage TEXT NOT NULL, stat TEXT NOT NULL, limit_ns INTEGER NOT NULL, "
                 "measured_ns REAL NOT NULL, samples INTEGER NOT NULL, "
                 "PRIMARY KEY(run_id, budget, interval_start_utc_ns))",
                 context);
}

absl::Status WriteBudgetBreaches(sqlite3* db, int64_t run_id,
                                 const std::vector<BudgetBreachRow>& breaches,
                                 const std::string& context) {
  if (breaches.empty()) return absl::OkStatus();
  absl::StatusOr<Statement> s = Statement::Prepare(
      db,
      "INSERT OR IGNORE INTO budget_breaches(run_id, budget, interval_start_utc_ns, stage, stat, "
      "limit_ns, measured_ns, samples) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
      absl::StrCat(context, ": store budget breaches"));
  if (!s.ok()) return s.status();
  for (const BudgetBreachRow& b : breaches) {
    s->Bind(1, run_id)
        .BindText(2, b.budget)
        .Bind(3, b.interval_start_utc_ns)
        .BindText(4, b.stage)
        .BindText(5, b.stat)
        .Bind(6, b.limit_ns)
        .BindDouble(7, b.measured_ns)
        .Bind(8, b.samples);
    if (absl::Status st = s->Run(); !st.ok()) return st;
    s->Reset();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BudgetBreachRow>> ReadBudgetBreaches(sqlite3* db, int64_t run_id,
                                                                const std::string& context) {
  std::vector<BudgetBreachRow> out;
  absl::StatusOr<bool> has = TableExists(db, "budget_breaches", context);
  if (!has.ok()) return has.status();
  if (!*has) return out;  // a store written before breaches were kept
  absl::StatusOr<Statement> s = Statement::Prepare(
      db,
      "SELECT budget, stage, stat, interval_start_utc_ns, limit_ns, measured_ns, samples "
      "FROM budget_breaches WHERE run_id = ?1 ORDER BY interval_start_utc_ns, budget",
      absl::StrCat(context, ": read budget breaches"));
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  absl::Status st = s->ForEachRow([&] {
    out.push_back(BudgetBreachRow{EscapeName(s->Text(0)), EscapeName(s->Text(1)),
                                  EscapeName(s->Text(2)), s->Int(3), s->Int(4), s->Double(5),
                                  s->Int(6)});
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<BudgetBreachRow>> sqlite_reader::SqliteStoreReader::BudgetBreaches(
    int64_t run_id) {
  return ReadBudgetBreaches(db_.get(), run_id, path());
}

}  // namespace ticktrace::store::internal
