#include "store/sqlite/sqlite_stage_clocks.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/name_text.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::store::internal {

absl::Status EnsureStageClocksTable(sqlite3* db, const std::string& context) {
  return ExecSql(db,
                 "CREATE TABLE IF NOT EXISTS stage_clocks(run_id INTEGER NOT NULL, "
                 "stage TEXT NOT NULL, side TEXT NOT NULL, clock TEXT NOT NULL, "
                 "PRIMARY KEY(run_id, stage, side, clock))",
                 context);
}

absl::Status WriteStageClocks(sqlite3* db, int64_t run_id, const std::vector<StageClockRow>& rows,
                              const std::string& context) {
  if (rows.empty()) return absl::OkStatus();
  absl::StatusOr<Statement> s = Statement::Prepare(
      db, "INSERT OR IGNORE INTO stage_clocks(run_id, stage, side, clock) VALUES(?1, ?2, ?3, ?4)",
      absl::StrCat(context, ": store stage clocks"));
  if (!s.ok()) return s.status();
  for (const StageClockRow& r : rows) {
    s->Bind(1, run_id).BindText(2, r.stage).BindText(3, r.side).BindText(4, r.clock);
    if (absl::Status st = s->Run(); !st.ok()) return st;
    s->Reset();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StageClockRow>> ReadStageClocks(sqlite3* db, int64_t run_id,
                                                           const std::string& context) {
  std::vector<StageClockRow> out;
  absl::StatusOr<bool> has = TableExists(db, "stage_clocks", context);
  if (!has.ok()) return has.status();
  if (!*has) return out;  // a store written before they were kept
  absl::StatusOr<Statement> s = Statement::Prepare(
      db,
      "SELECT stage, side, clock FROM stage_clocks WHERE run_id = ?1 ORDER BY stage, side, clock",
      absl::StrCat(context, ": read stage clocks"));
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  // Escaped as every name read from a store (common/name_text.h): a
  // store may hold any bytes.
  absl::Status st = s->ForEachRow([&] {
    out.push_back(
        StageClockRow{EscapeName(s->Text(0)), EscapeName(s->Text(1)), EscapeName(s->Text(2))});
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<StageClockRow>> sqlite_reader::SqliteStoreReader::StageClocks(
    int64_t run_id) {
  return ReadStageClocks(db_.get(), run_id, path());
}

}  // namespace ticktrace::store::internal
