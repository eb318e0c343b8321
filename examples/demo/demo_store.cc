#include "demo_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"

namespace ticktrace::examples {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

absl::StatusOr<Db> OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(absl::StrCat(
        path, ": cannot open: ", raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(db.get(), 5000);  // the collector may be writing
  return db;
}

absl::StatusOr<Stmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return absl::FailedPreconditionError(
        absl::StrCat("store query failed: ", sqlite3_errmsg(db), " [", sql, "]"));
  }
  return Stmt(raw);
}

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t != nullptr ? reinterpret_cast<const char*>(t) : "";
}

std::optional<double> OptionalDouble(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, col);
}

constexpr char kRunColumns[] =
    "run_id, session, tsc_hz, calibration_source, spread_ppm, kernel_tsc_hz, tsc_step_ns, "
    "environment, pipeline, ended_utc_ns IS NOT NULL";

RunInfo ReadRunRow(sqlite3_stmt* s) {
  RunInfo r;
  r.run_id = sqlite3_column_int64(s, 0);
  r.session = Text(s, 1);
  r.tsc_hz = sqlite3_column_double(s, 2);
  r.calibration_source = Text(s, 3);
  r.spread_ppm = OptionalDouble(s, 4);
  r.kernel_tsc_hz = OptionalDouble(s, 5);
  r.tsc_step_ns = OptionalDouble(s, 6);
  r.environment_json = Text(s, 7);
  r.pipeline = Text(s, 8);
  r.ended = sqlite3_column_int(s, 9) != 0;
  return r;
}

}  // namespace

StoreFileKind ClassifyStoreFile(const std::string& path, std::string* why) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return StoreFileKind::kAbsent;
  if (!S_ISREG(st.st_mode)) {
    *why = "it is not a regular file";
    return StoreFileKind::kOther;
  }
  char header[16] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(header, sizeof(header)) || std::memcmp(header, "SQLite format 3", 16) != 0) {
    *why = "it is not an SQLite file";
    return StoreFileKind::kOther;
  }
  absl::StatusOr<Db> db = OpenReadOnly(path);
  if (!db.ok()) {
    *why = std::string(db.status().message());
    return StoreFileKind::kOther;
  }
  absl::StatusOr<Stmt> s = Prepare(db->get(), "SELECT value FROM meta WHERE key = 'app'");
  if (!s.ok() || sqlite3_step(s->get()) != SQLITE_ROW || Text(s->get(), 0) != "ticktrace") {
    *why = "it is an SQLite database but not a ticktrace store";
    return StoreFileKind::kOther;
  }
  return StoreFileKind::kTicktraceStore;
}

absl::StatusOr<std::optional<RunInfo>> FindRun(const std::string& path,
                                               const std::string& session) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::optional<RunInfo>();
  absl::StatusOr<Db> db = OpenReadOnly(path);
  if (!db.ok()) return std::optional<RunInfo>();
  const std::string sql = absl::StrCat("SELECT ", kRunColumns,
                                       " FROM runs WHERE session = ?1 ORDER BY run_id DESC LIMIT 1");
  absl::StatusOr<Stmt> s = Prepare(db->get(), sql.c_str());
  if (!s.ok()) return std::optional<RunInfo>();  // tables not created yet
  sqlite3_bind_text(s->get(), 1, session.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(s->get());
  if (rc == SQLITE_ROW) return std::optional<RunInfo>(ReadRunRow(s->get()));
  if (rc == SQLITE_DONE || rc == SQLITE_BUSY) return std::optional<RunInfo>();
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": reading runs: ", sqlite3_errmsg(db->get())));
}

absl::StatusOr<RunSummary> ReadRunSummary(const std::string& path, int64_t run_id) {
  absl::StatusOr<Db> db = OpenReadOnly(path);
  if (!db.ok()) return db.status();
  RunSummary summary;
  {
    const std::string sql = absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE run_id = ?1");
    absl::StatusOr<Stmt> s = Prepare(db->get(), sql.c_str());
    if (!s.ok()) return s.status();
    sqlite3_bind_int64(s->get(), 1, run_id);
    if (sqlite3_step(s->get()) != SQLITE_ROW) {
      return absl::NotFoundError(absl::StrCat(path, ": no run ", run_id));
    }
    summary.run = ReadRunRow(s->get());
  }
  {
    absl::StatusOr<Stmt> s = Prepare(
        db->get(),
        "SELECT stage, position, count, min_ns, max_ns, mean_ns, p50_ns, p90_ns, p99_ns, "
        "p999_ns, migrated, negative, cross_core, skew, out_of_order, uncertainty_ns "
        "FROM stage_stats WHERE run_id = ?1 "
        "ORDER BY position, stage");
    if (!s.ok()) return s.status();
    sqlite3_bind_int64(s->get(), 1, run_id);
    while (sqlite3_step(s->get()) == SQLITE_ROW) {
      StageStats st;
      st.stage = Text(s->get(), 0);
      st.position = sqlite3_column_int64(s->get(), 1);
      st.count = sqlite3_column_int64(s->get(), 2);
      st.min_ns = sqlite3_column_double(s->get(), 3);
      st.max_ns = sqlite3_column_double(s->get(), 4);
      st.mean_ns = sqlite3_column_double(s->get(), 5);
      // NULL: too few samples for that percentile's rank (NaN, printed "-").
      const auto percentile = [&s](int column) {
        return sqlite3_column_type(s->get(), column) == SQLITE_NULL
                   ? std::numeric_limits<double>::quiet_NaN()
                   : sqlite3_column_double(s->get(), column);
      };
      st.p50_ns = percentile(6);
      st.p90_ns = percentile(7);
      st.p99_ns = percentile(8);
      st.p999_ns = percentile(9);
      st.migrated = sqlite3_column_int64(s->get(), 10);
      st.negative = sqlite3_column_int64(s->get(), 11);
      st.cross_core = sqlite3_column_int64(s->get(), 12);
      st.skew = sqlite3_column_int64(s->get(), 13);
      st.out_of_order = sqlite3_column_int64(s->get(), 14);
      st.uncertainty_ns = percentile(15);
      summary.stages.push_back(std::move(st));
    }
  }
  {
    absl::StatusOr<Stmt> s =
        Prepare(db->get(), "SELECT name, value FROM counters WHERE run_id = ?1 ORDER BY name");
    if (!s.ok()) return s.status();
    sqlite3_bind_int64(s->get(), 1, run_id);
    while (sqlite3_step(s->get()) == SQLITE_ROW) {
      summary.counters[Text(s->get(), 0)] = sqlite3_column_int64(s->get(), 1);
    }
  }
  return summary;
}

absl::StatusOr<uint64_t> SlowestOrder(const std::string& path, int64_t run_id) {
  absl::StatusOr<Db> db = OpenReadOnly(path);
  if (!db.ok()) return db.status();
  absl::StatusOr<Stmt> s = Prepare(
      db->get(),
      "SELECT order_id FROM orders WHERE run_id = ?1 AND total_ns IS NOT NULL "
      "ORDER BY total_ns DESC LIMIT 1");
  if (!s.ok()) return s.status();
  sqlite3_bind_int64(s->get(), 1, run_id);
  if (sqlite3_step(s->get()) != SQLITE_ROW) return uint64_t{0};
  return static_cast<uint64_t>(sqlite3_column_int64(s->get(), 0));
}

}  // namespace ticktrace::examples
