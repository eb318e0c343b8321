#include "store/sqlite/sqlite_notes.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/name_text.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_statement.h"

namespace ticktrace::store::internal {

absl::Status EnsureRunNotesTable(sqlite3* db, const std::string& context) {
  return ExecSql(db,
                 "CREATE TABLE IF NOT EXISTS run_notes(run_id INTEGER NOT NULL, "
                 "kind TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY(run_id, kind))",
                 context);
}

absl::Status WriteRunNotes(sqlite3* db, int64_t run_id, const std::vector<RunNote>& notes,
                           const std::string& context) {
  if (notes.empty()) return absl::OkStatus();
  // ON CONFLICT keeps the row (and so its place among the run's notes).
  absl::StatusOr<Statement> s =
      Statement::Prepare(db,
                         "INSERT INTO run_notes(run_id, kind, text) VALUES(?1, ?2, ?3) "
                         "ON CONFLICT(run_id, kind) DO UPDATE SET text = excluded.text",
                         absl::StrCat(context, ": store run notes"));
  if (!s.ok()) return s.status();
  for (const RunNote& n : notes) {
    s->Bind(1, run_id).BindText(2, n.kind).BindText(3, n.text);
    if (absl::Status st = s->Run(); !st.ok()) return st;
    s->Reset();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunNote>> ReadRunNotes(sqlite3* db, int64_t run_id,
                                                  const std::string& context) {
  std::vector<RunNote> out;
  absl::StatusOr<bool> has = TableExists(db, "run_notes", context);
  if (!has.ok()) return has.status();
  if (!*has) return out;  // a store written before notes were kept
  absl::StatusOr<Statement> s =
      Statement::Prepare(db, "SELECT kind, text FROM run_notes WHERE run_id = ?1 ORDER BY rowid",
                         absl::StrCat(context, ": read run notes"));
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  absl::Status st = s->ForEachRow([&] { out.push_back(RunNote{EscapeName(s->Text(0)), EscapeName(s->Text(1))}); });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<RunNote>> sqlite_reader::SqliteStoreReader::Notes(int64_t run_id) {
  return ReadRunNotes(db_.get(), run_id, path());
}

}  // namespace ticktrace::store::internal
