#include "collector/store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collector/private_file.h"

namespace ticktrace::collect {
namespace {

// Schema v1 (docs/store.md) plus the additions listed there (samples_all).
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  run_id INTEGER PRIMARY KEY,
  session TEXT NOT NULL,
  host TEXT NOT NULL,
  started_utc_ns INTEGER NOT NULL,
  ended_utc_ns INTEGER,
  tsc_hz REAL NOT NULL,
  calibration_source TEXT NOT NULL,
  spread_ppm REAL,
  kernel_tsc_hz REAL,
  tsc_step_ns REAL,
  anchor_tsc INTEGER NOT NULL,
  anchor_utc_ns INTEGER NOT NULL,
  environment TEXT NOT NULL,
  settings TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  pipeline_learned INTEGER NOT NULL,
  utc_drift_ppm REAL);
CREATE TABLE processes(
  run_id INTEGER NOT NULL, process_id INTEGER NOT NULL,
  pid INTEGER NOT NULL, start_ticks INTEGER NOT NULL, name TEXT NOT NULL,
  segment TEXT NOT NULL, first_seen_utc_ns INTEGER, exited_utc_ns INTEGER,
  tags_rejected INTEGER NOT NULL DEFAULT 0, threads_without_slot INTEGER NOT NULL DEFAULT 0,
  slotless_dropped INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, process_id));
CREATE TABLE threads(
  run_id INTEGER NOT NULL, process_id INTEGER NOT NULL, slot INTEGER NOT NULL,
  generation INTEGER NOT NULL, tid INTEGER NOT NULL, name TEXT NOT NULL,
  drained INTEGER NOT NULL, dropped INTEGER NOT NULL,
  PRIMARY KEY(run_id, process_id, slot, generation));
CREATE TABLE tags(run_id INTEGER NOT NULL, process_id INTEGER NOT NULL,
  tag_id INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY(run_id, process_id, tag_id));
CREATE TABLE orders(
  run_id INTEGER NOT NULL, order_id INTEGER NOT NULL,
  instance INTEGER NOT NULL DEFAULT 0,
  parent_order_id INTEGER,
  first_utc_ns INTEGER NOT NULL,
  total_ns REAL,
  complete INTEGER NOT NULL,
  missing TEXT,
  late INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, order_id, instance));
CREATE TABLE stamps(
  run_id INTEGER NOT NULL, order_id INTEGER NOT NULL,
  instance INTEGER NOT NULL DEFAULT 0, tag TEXT NOT NULL,
  kind TEXT NOT NULL,
  process_id INTEGER NOT NULL, tid INTEGER NOT NULL,
  cpu INTEGER,
  cpu_end INTEGER,
  tsc INTEGER NOT NULL, utc_ns INTEGER NOT NULL,
  duration_ns REAL,
  flags INTEGER NOT NULL DEFAULT 0);
CREATE TABLE samples(
  run_id INTEGER NOT NULL, order_id INTEGER NOT NULL,
  instance INTEGER NOT NULL DEFAULT 0,
  stage TEXT NOT NULL,
  start_utc_ns INTEGER NOT NULL, latency_ns REAL NOT NULL,
  process_begin INTEGER, process_end INTEGER,
  cpu_begin INTEGER, cpu_end INTEGER,
  flags INTEGER NOT NULL DEFAULT 0);
CREATE TABLE stage_stats(
  run_id INTEGER NOT NULL, stage TEXT NOT NULL,
  position INTEGER NOT NULL,
  count INTEGER NOT NULL,
  min_ns REAL, max_ns REAL, mean_ns REAL,
  p50_ns REAL, p90_ns REAL, p99_ns REAL, p999_ns REAL,
  migrated INTEGER NOT NULL, negative INTEGER NOT NULL, cross_core INTEGER NOT NULL,
  include_flagged INTEGER NOT NULL,
  samples_all INTEGER,
  skew INTEGER, out_of_order INTEGER, late INTEGER, uncertainty_ns REAL,
  PRIMARY KEY(run_id, stage));
CREATE TABLE counters(run_id INTEGER NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL,
  PRIMARY KEY(run_id, name));
CREATE TABLE IF NOT EXISTS cores(run_id INTEGER NOT NULL, cpu INTEGER NOT NULL,
  offset_ns REAL NOT NULL, bound_ns REAL NOT NULL, consistent INTEGER NOT NULL,
  measured_utc_ns INTEGER NOT NULL, PRIMARY KEY(run_id, cpu, measured_utc_ns));
CREATE TABLE IF NOT EXISTS anchors(run_id INTEGER NOT NULL, tsc INTEGER NOT NULL,
  utc_ns INTEGER NOT NULL, PRIMARY KEY(run_id, tsc));
CREATE INDEX samples_by_order ON samples(run_id, order_id);
CREATE INDEX stamps_by_order ON stamps(run_id, order_id);
INSERT INTO meta(key, value) VALUES('app', 'ticktrace'), ('schema_version', '1');
)sql";

constexpr char kSqliteHeader[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                    'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

int64_t AsInt(uint64_t v) { return static_cast<int64_t>(v); }  // order ids >= 2^63 wrap

void BindOptionalInt(sqlite3_stmt* s, int i, int64_t v, bool present) {
  if (present) {
    sqlite3_bind_int64(s, i, v);
  } else {
    sqlite3_bind_null(s, i);
  }
}

void BindText(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

constexpr int kSampleColumns = 11;
constexpr int kStampColumns = 13;

// Binds one samples row at parameter offset `base` (parameters base+1 ...).
void BindSample(sqlite3_stmt* s, int base, int64_t run_id, const SampleRow& r) {
  sqlite3_bind_int64(s, base + 1, run_id);
  sqlite3_bind_int64(s, base + 2, AsInt(r.order_id));
  BindText(s, base + 3, r.stage);
  sqlite3_bind_int64(s, base + 4, r.start_utc_ns);
  sqlite3_bind_double(s, base + 5, r.latency_ns);
  BindOptionalInt(s, base + 6, r.process_begin, r.process_begin >= 0);
  BindOptionalInt(s, base + 7, r.process_end, r.process_end >= 0);
  BindOptionalInt(s, base + 8, r.cpu_begin, r.cpu_begin >= 0);
  BindOptionalInt(s, base + 9, r.cpu_end, r.cpu_end >= 0);
  sqlite3_bind_int(s, base + 10, r.flags);
  sqlite3_bind_int64(s, base + 11, r.instance);
}

// Binds one stamps row at parameter offset `base`.
void BindStamp(sqlite3_stmt* s, int base, int64_t run_id, const StampRow& r) {
  sqlite3_bind_int64(s, base + 1, run_id);
  sqlite3_bind_int64(s, base + 2, AsInt(r.order_id));
  BindText(s, base + 3, r.tag);
  sqlite3_bind_text(s, base + 4, r.is_span ? "span" : "stamp", -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, base + 5, r.process_id);
  sqlite3_bind_int64(s, base + 6, r.tid);
  BindOptionalInt(s, base + 7, r.cpu, r.cpu >= 0);
  BindOptionalInt(s, base + 8, r.cpu_end, r.cpu_end >= 0);
  sqlite3_bind_int64(s, base + 9, AsInt(r.tsc));
  sqlite3_bind_int64(s, base + 10, r.utc_ns);
  if (r.is_span) {
    sqlite3_bind_double(s, base + 11, r.duration_ns);
  } else {
    sqlite3_bind_null(s, base + 11);
  }
  sqlite3_bind_int(s, base + 12, r.flags);
  sqlite3_bind_int64(s, base + 13, r.instance);
}

// "INSERT ... VALUES(?,..),(?,..)...": `rows` groups of `columns` parameters.
std::string MultiRowInsert(const char* head, int columns, int rows) {
  std::string group = "(";
  for (int c = 0; c < columns; ++c) absl::StrAppend(&group, c ? ",?" : "?");
  group += ")";
  std::string sql = absl::StrCat(head, " VALUES", group);
  for (int r = 1; r < rows; ++r) absl::StrAppend(&sql, ",", group);
  return sql;
}

// Closes a connection that is only being inspected.
struct DbCloser {
  sqlite3* db;
  ~DbCloser() {
    if (db != nullptr) sqlite3_close(db);
  }
};

}  // namespace

absl::Status Store::CheckExisting(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot inspect: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": exists and is not a regular file; refusing to use it as a store"));
  }
  if (::access(path.c_str(), R_OK | W_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": cannot open the store for reading and writing: ", std::strerror(errno)));
  }
  char header[16] = {};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(header, sizeof(header));
    if (!in || std::memcmp(header, kSqliteHeader, sizeof(header)) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": exists and is not a ticktrace store (not an SQLite database); left untouched"));
    }
  }
  // Open without SQLITE_OPEN_CREATE and only read: nothing is written.
  DbCloser c{nullptr};
  if (sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot open as SQLite: ", c.db ? sqlite3_errmsg(c.db) : "out of memory"));
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(c.db, "SELECT key, value FROM meta WHERE key IN ('app','schema_version')",
                         -1, &stmt, nullptr) != SQLITE_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": exists and is not a ticktrace store (no meta table); left untouched"));
  }
  std::string app, version;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const char* k = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const char* v = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
    if (k == nullptr || v == nullptr) continue;
    if (std::strcmp(k, "app") == 0) app = v;
    if (std::strcmp(k, "schema_version") == 0) version = v;
  }
  sqlite3_finalize(stmt);
  if (app != "ticktrace") {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": exists and is not a ticktrace store (meta.app is '", app,
                     "'); left untouched"));
  }
  int v = 0;
  if (!absl::SimpleAtoi(version, &v) || v < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ticktrace store with an unreadable schema version '", version, "'"));
  }
  if (v > kStoreSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ticktrace store schema version ", v, " is newer than this collector's (",
                     kStoreSchemaVersion, "); use a newer collector"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> Store::OpenOrCreate(const std::string& path) {
  // A symlink is refused, never followed (collector/private_file.h).
  if (absl::Status s = CheckNotSymlink(path); !s.ok()) return s;
  absl::Status existing = CheckExisting(path);
  const bool create = absl::IsNotFound(existing);
  if (!create && !existing.ok()) return existing;
  if (create) {
    // Created empty, 0600, O_EXCL|O_NOFOLLOW; SQLite takes an empty file as a
    // new database and gives its -wal/-shm/-journal files the db file's mode.
    // TODO(lead): pass --group-readable (CollectorOptions::group_readable) here.
    absl::StatusOr<int> fd = CreatePrivateFile(path, /*group_readable=*/false);
    if (!fd.ok()) return fd.status();
    ::close(*fd);
  }
  std::unique_ptr<Store> store(new Store());
  store->path_ = path;
  // NOMUTEX: one thread at a time uses the connection (see store.h).
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  absl::Status s;
  if (sqlite3_open_v2(path.c_str(), &store->db_, flags, nullptr) != SQLITE_OK) {
    s = store->Error("cannot open store");
  }
  // First: a reader that opens the store meanwhile must make us wait, not fail.
  if (s.ok()) sqlite3_busy_timeout(store->db_, 5000);
  if (s.ok()) s = store->Exec("PRAGMA journal_mode=WAL");
  if (s.ok()) s = store->Exec("PRAGMA synchronous=NORMAL");
  // A page cache large enough for the indexes' working set.
  if (s.ok()) s = store->Exec("PRAGMA cache_size=-131072");
  if (s.ok() && create) {
    s = store->Exec("BEGIN");
    if (s.ok()) s = store->Exec(kSchemaSql);
    if (s.ok()) s = store->Exec("COMMIT");
  }
  // Stores created before the indexes were trimmed (docs/store.md, "Indexes")
  // lose the two latency indexes, which made every insert a random B-tree
  // write. Derived data only: no row changes.
  if (s.ok() && !create) {
    s = store->Exec("DROP INDEX IF EXISTS samples_by_stage; DROP INDEX IF EXISTS orders_by_total");
  }
  if (s.ok() && !create) s = store->AddTruthColumns();
  if (s.ok()) s = store->Prepare();
  if (!s.ok()) {
    store.reset();
    if (create) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        ::unlink((path + suffix).c_str());
      }
    }
    return s;
  }
  return store;
}

Store::~Store() {
  for (sqlite3_stmt* s : {insert_order_, insert_sample_, insert_samples_, insert_stamp_,
                          insert_stamps_, upsert_process_,
                          upsert_thread_, upsert_tag_, upsert_counter_, upsert_stage_,
                          update_pipeline_, insert_core_, insert_anchor_, update_drift_}) {
    if (s != nullptr) sqlite3_finalize(s);
  }
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status Store::Error(absl::string_view what) const {
  return absl::InternalError(
      absl::StrCat(path_, ": ", what, ": ", db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

absl::Status Store::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat(path_, ": ", err ? err : "sqlite error"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

bool Store::HasColumn(const char* table, const char* column) {
  sqlite3_stmt* s = nullptr;
  bool found = false;
  if (sqlite3_prepare_v2(db_, absl::StrCat("PRAGMA table_info(", table, ")").c_str(), -1, &s,
                         nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char* name = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
      if (name != nullptr && std::strcmp(name, column) == 0) found = true;
    }
  }
  sqlite3_finalize(s);
  return found;
}

absl::Status Store::AddTruthColumns() {
  std::string sql;
  if (!HasColumn("orders", "instance")) {
    // The key grows by the instance: SQLite cannot alter a key, so the table
    // is copied (every old order is instance 0).
    absl::StrAppend(
        &sql,
        "CREATE TABLE orders_v1i(run_id INTEGER NOT NULL, order_id INTEGER NOT NULL, "
        "instance INTEGER NOT NULL DEFAULT 0, parent_order_id INTEGER, "
        "first_utc_ns INTEGER NOT NULL, total_ns REAL, complete INTEGER NOT NULL, missing TEXT, "
        "late INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(run_id, order_id, instance));"
        "INSERT INTO orders_v1i(run_id, order_id, parent_order_id, first_utc_ns, total_ns, "
        "complete, missing) SELECT run_id, order_id, parent_order_id, first_utc_ns, total_ns, "
        "complete, missing FROM orders;"
        "DROP TABLE orders; ALTER TABLE orders_v1i RENAME TO orders;");
  }
  for (const char* table : {"samples", "stamps"}) {
    if (!HasColumn(table, "instance")) {
      absl::StrAppend(&sql, "ALTER TABLE ", table,
                      " ADD COLUMN instance INTEGER NOT NULL DEFAULT 0;");
    }
  }
  for (const char* column : {"skew INTEGER", "out_of_order INTEGER", "late INTEGER",
                             "uncertainty_ns REAL"}) {
    const std::string name(column, std::strchr(column, ' ') - column);
    if (!HasColumn("stage_stats", name.c_str())) {
      absl::StrAppend(&sql, "ALTER TABLE stage_stats ADD COLUMN ", column, ";");
    }
  }
  if (!HasColumn("runs", "utc_drift_ppm")) {
    absl::StrAppend(&sql, "ALTER TABLE runs ADD COLUMN utc_drift_ppm REAL;");
  }
  absl::StrAppend(
      &sql,
      "CREATE TABLE IF NOT EXISTS cores(run_id INTEGER NOT NULL, cpu INTEGER NOT NULL, "
      "offset_ns REAL NOT NULL, bound_ns REAL NOT NULL, consistent INTEGER NOT NULL, "
      "measured_utc_ns INTEGER NOT NULL, PRIMARY KEY(run_id, cpu, measured_utc_ns));"
      "CREATE TABLE IF NOT EXISTS anchors(run_id INTEGER NOT NULL, tsc INTEGER NOT NULL, "
      "utc_ns INTEGER NOT NULL, PRIMARY KEY(run_id, tsc));");
  absl::Status s = Exec("BEGIN");
  if (s.ok()) s = Exec(sql.c_str());
  if (s.ok()) return Exec("COMMIT");
  Exec("ROLLBACK").IgnoreError();
  return s;
}

absl::Status Store::Prepare() {
  struct {
    sqlite3_stmt** stmt;
    const char* sql;
  } statements[] = {
      {&insert_order_,
       "INSERT OR IGNORE INTO orders(run_id, order_id, parent_order_id, first_utc_ns, total_ns, "
       "complete, missing, instance, late) VALUES(?,?,?,?,?,?,?,?,?)"},
      {&upsert_process_,
       "INSERT OR REPLACE INTO processes(run_id, process_id, pid, start_ticks, name, segment, "
       "first_seen_utc_ns, exited_utc_ns, tags_rejected, threads_without_slot, slotless_dropped) "
       "VALUES(?,?,?,?,?,?,?,?,?,?,?)"},
      {&upsert_thread_,
       "INSERT OR REPLACE INTO threads(run_id, process_id, slot, generation, tid, name, drained, "
       "dropped) VALUES(?,?,?,?,?,?,?,?)"},
      {&upsert_tag_,
       "INSERT OR REPLACE INTO tags(run_id, process_id, tag_id, name) VALUES(?,?,?,?)"},
      {&upsert_counter_, "INSERT OR REPLACE INTO counters(run_id, name, value) VALUES(?,?,?)"},
      {&upsert_stage_,
       "INSERT OR REPLACE INTO stage_stats(run_id, stage, position, count, min_ns, max_ns, "
       "mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, migrated, negative, cross_core, "
       "include_flagged, samples_all, skew, out_of_order, late, uncertainty_ns) "
       "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&update_pipeline_, "UPDATE runs SET pipeline = ?, pipeline_learned = ? WHERE run_id = ?"},
      {&insert_core_,
       "INSERT OR IGNORE INTO cores(run_id, cpu, offset_ns, bound_ns, consistent, "
       "measured_utc_ns) VALUES(?,?,?,?,?,?)"},
      {&insert_anchor_, "INSERT OR IGNORE INTO anchors(run_id, tsc, utc_ns) VALUES(?,?,?)"},
      {&update_drift_, "UPDATE runs SET utc_drift_ppm = ? WHERE run_id = ?"},
  };
  auto prepare = [this](sqlite3_stmt** stmt, const std::string& sql) -> absl::Status {
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) !=
        SQLITE_OK) {
      return Error(absl::StrCat("cannot prepare '", sql.substr(0, 120), "'"));
    }
    return absl::OkStatus();
  };
  for (auto& st : statements) {
    if (absl::Status s = prepare(st.stmt, st.sql); !s.ok()) return s;
  }
  constexpr const char* kSampleInsert =
      "INSERT INTO samples(run_id, order_id, stage, start_utc_ns, latency_ns, process_begin, "
      "process_end, cpu_begin, cpu_end, flags, instance)";
  constexpr const char* kStampInsert =
      "INSERT INTO stamps(run_id, order_id, tag, kind, process_id, tid, cpu, cpu_end, tsc, "
      "utc_ns, duration_ns, flags, instance)";
  for (const auto& [stmt, head, columns, rows] :
       {std::tuple(&insert_sample_, kSampleInsert, kSampleColumns, 1),
        std::tuple(&insert_samples_, kSampleInsert, kSampleColumns, kRowsPerInsert),
        std::tuple(&insert_stamp_, kStampInsert, kStampColumns, 1),
        std::tuple(&insert_stamps_, kStampInsert, kStampColumns, kRowsPerInsert)}) {
    if (absl::Status s = prepare(stmt, MultiRowInsert(head, columns, rows)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::BeginRun(const RunRow& run) {
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "INSERT INTO runs(session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
      "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, settings, "
      "pipeline, pipeline_learned) VALUES(?,?,?,NULL,?,?,?,?,?,?,?,?,?,?,?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return Error("prepare runs");
  BindText(s, 1, run.session);
  BindText(s, 2, run.host);
  sqlite3_bind_int64(s, 3, run.started_utc_ns);
  sqlite3_bind_double(s, 4, run.tsc_hz);
  BindText(s, 5, run.calibration_source);
  auto bind_opt = [&](int i, const std::optional<double>& v) {
    if (v.has_value()) {
      sqlite3_bind_double(s, i, *v);
    } else {
      sqlite3_bind_null(s, i);
    }
  };
  bind_opt(6, run.spread_ppm);
  bind_opt(7, run.kernel_tsc_hz);
  bind_opt(8, run.tsc_step_ns);
  sqlite3_bind_int64(s, 9, AsInt(run.anchor_tsc));
  sqlite3_bind_int64(s, 10, run.anchor_utc_ns);
  BindText(s, 11, run.environment_json);
  BindText(s, 12, run.settings_json);
  BindText(s, 13, run.pipeline);
  sqlite3_bind_int(s, 14, run.pipeline_learned ? 1 : 0);
  const int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("insert into runs");
  return sqlite3_last_insert_rowid(db_);
}

absl::StatusOr<RunState> Store::LookupRun(int64_t run_id) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT session, ended_utc_ns FROM runs WHERE run_id = ?", -1, &s,
                         nullptr) != SQLITE_OK) {
    return Error("prepare run lookup");
  }
  sqlite3_bind_int64(s, 1, run_id);
  RunState state;
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    state.exists = true;
    const char* session = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    state.session = session ? session : "";
    state.ended = sqlite3_column_type(s, 1) != SQLITE_NULL;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("run lookup");
  return state;
}

absl::Status Store::EndRun(int64_t run_id, int64_t ended_utc_ns) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "UPDATE runs SET ended_utc_ns = ? WHERE run_id = ?", -1, &s,
                         nullptr) != SQLITE_OK) {
    return Error("prepare end of run");
  }
  sqlite3_bind_int64(s, 1, ended_utc_ns);
  sqlite3_bind_int64(s, 2, run_id);
  const int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("end of run");
  return absl::OkStatus();
}

absl::Status Store::WriteBatch(int64_t run_id, const std::vector<FinishedOrder>& orders,
                               const StoreSnapshot* snapshot, uint64_t* already_stored) {
  absl::Status st = Exec("BEGIN");
  if (!st.ok()) return st;
  // `rebinds_all`: every parameter is bound again before the next step, so
  // clearing the bindings would be wasted work.
  auto step = [&](sqlite3_stmt* s, absl::string_view what,
                  bool rebinds_all = false) -> absl::Status {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (!rebinds_all) sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) return Error(what);
    return absl::OkStatus();
  };
  // Orders one by one (an order stored before a restart is skipped with its
  // rows); then their samples and stamps, kRowsPerInsert rows per statement.
  std::vector<const SampleRow*> samples;
  std::vector<const StampRow*> stamps;
  for (const FinishedOrder& f : orders) {
    sqlite3_stmt* s = insert_order_;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, AsInt(f.order.order_id));
    BindOptionalInt(s, 3, AsInt(f.order.parent_order_id), f.order.has_parent);
    sqlite3_bind_int64(s, 4, f.order.first_utc_ns);
    if (f.order.has_total) {
      sqlite3_bind_double(s, 5, f.order.total_ns);
    } else {
      sqlite3_bind_null(s, 5);
    }
    sqlite3_bind_int(s, 6, f.order.complete ? 1 : 0);
    if (f.order.missing.empty()) {
      sqlite3_bind_null(s, 7);
    } else {
      BindText(s, 7, f.order.missing);
    }
    sqlite3_bind_int64(s, 8, f.order.instance);
    sqlite3_bind_int(s, 9, f.order.late ? 1 : 0);
    if (st = step(s, "insert order"); !st.ok()) break;
    if (sqlite3_changes(db_) == 0) {
      ++*already_stored;  // stored before a restart: its samples are there too
      continue;
    }
    for (const SampleRow& r : f.samples) samples.push_back(&r);
    for (const StampRow& r : f.stamps) stamps.push_back(&r);
  }
  // Rows [0, n) of `rows` through the multi-row statement, the rest one by one.
  auto insert_rows = [&](const auto& rows, sqlite3_stmt* one, sqlite3_stmt* many, int columns,
                         auto bind, absl::string_view what) -> absl::Status {
    size_t i = 0;
    for (; i + kRowsPerInsert <= rows.size(); i += kRowsPerInsert) {
      for (int k = 0; k < kRowsPerInsert; ++k) bind(many, k * columns, run_id, *rows[i + k]);
      if (absl::Status s = step(many, what, /*rebinds_all=*/true); !s.ok()) return s;
    }
    for (; i < rows.size(); ++i) {
      bind(one, 0, run_id, *rows[i]);
      if (absl::Status s = step(one, what, /*rebinds_all=*/true); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  if (st.ok()) {
    st = insert_rows(samples, insert_sample_, insert_samples_, kSampleColumns, BindSample,
                     "insert samples");
  }
  if (st.ok()) {
    st = insert_rows(stamps, insert_stamp_, insert_stamps_, kStampColumns, BindStamp,
                     "insert stamps");
  }
  if (st.ok() && snapshot != nullptr) {
    for (const ProcessRow& p : snapshot->processes) {
      sqlite3_stmt* s = upsert_process_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, p.process_id);
      sqlite3_bind_int64(s, 3, p.pid);
      sqlite3_bind_int64(s, 4, AsInt(p.start_ticks));
      BindText(s, 5, p.name);
      BindText(s, 6, p.segment);
      sqlite3_bind_int64(s, 7, p.first_seen_utc_ns);
      BindOptionalInt(s, 8, p.exited_utc_ns, p.exited);
      sqlite3_bind_int64(s, 9, AsInt(p.tags_rejected));
      sqlite3_bind_int64(s, 10, AsInt(p.threads_without_slot));
      sqlite3_bind_int64(s, 11, AsInt(p.slotless_dropped));
      if (st = step(s, "upsert process"); !st.ok()) break;
    }
    for (const ThreadRow& t : snapshot->threads) {
      if (!st.ok()) break;
      sqlite3_stmt* s = upsert_thread_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, t.process_id);
      sqlite3_bind_int64(s, 3, t.slot);
      sqlite3_bind_int64(s, 4, AsInt(t.generation));
      sqlite3_bind_int64(s, 5, t.tid);
      BindText(s, 6, t.name);
      sqlite3_bind_int64(s, 7, AsInt(t.drained));
      sqlite3_bind_int64(s, 8, AsInt(t.dropped));
      st = step(s, "upsert thread");
    }
    for (const TagRow& t : snapshot->tags) {
      if (!st.ok()) break;
      sqlite3_stmt* s = upsert_tag_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, t.process_id);
      sqlite3_bind_int64(s, 3, t.tag_id);
      BindText(s, 4, t.name);
      st = step(s, "upsert tag");
    }
    for (const auto& [name, value] : snapshot->counters) {
      if (!st.ok()) break;
      sqlite3_stmt* s = upsert_counter_;
      sqlite3_bind_int64(s, 1, run_id);
      BindText(s, 2, name);
      sqlite3_bind_int64(s, 3, value);
      st = step(s, "upsert counter");
    }
    for (const StageSummary& m : snapshot->stages) {
      if (!st.ok()) break;
      sqlite3_stmt* s = upsert_stage_;
      sqlite3_bind_int64(s, 1, run_id);
      BindText(s, 2, m.stage);
      sqlite3_bind_int(s, 3, m.position);
      sqlite3_bind_int64(s, 4, AsInt(m.count));
      if (m.count > 0) {
        sqlite3_bind_double(s, 5, m.min_ns);
        sqlite3_bind_double(s, 6, m.max_ns);
        sqlite3_bind_double(s, 7, m.mean_ns);
        // A percentile with too few samples for its rank is NaN: NULL.
        const double percentiles[] = {m.p50_ns, m.p90_ns, m.p99_ns, m.p999_ns};
        for (int i = 0; i < 4; ++i) {
          if (std::isnan(percentiles[i])) {
            sqlite3_bind_null(s, 8 + i);
          } else {
            sqlite3_bind_double(s, 8 + i, percentiles[i]);
          }
        }
      }
      sqlite3_bind_int64(s, 12, AsInt(m.migrated));
      sqlite3_bind_int64(s, 13, AsInt(m.negative));
      sqlite3_bind_int64(s, 14, AsInt(m.cross_core));
      sqlite3_bind_int(s, 15, snapshot->include_flagged ? 1 : 0);
      sqlite3_bind_int64(s, 16, AsInt(m.samples_all));
      sqlite3_bind_int64(s, 17, AsInt(m.skew));
      sqlite3_bind_int64(s, 18, AsInt(m.out_of_order));
      sqlite3_bind_int64(s, 19, AsInt(m.late));
      sqlite3_bind_double(s, 20, m.uncertainty_ns);
      st = step(s, "upsert stage stats");
    }
    for (const CoreSkew& c : snapshot->cores) {
      if (!st.ok()) break;
      sqlite3_stmt* s = insert_core_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, c.cpu);
      sqlite3_bind_double(s, 3, c.offset_ns);
      sqlite3_bind_double(s, 4, c.bound_ns);
      sqlite3_bind_int(s, 5, c.consistent ? 1 : 0);
      sqlite3_bind_int64(s, 6, c.measured_at_utc_ns);
      st = step(s, "insert core");
    }
    for (const UtcAnchor& a : snapshot->anchors) {
      if (!st.ok()) break;
      sqlite3_stmt* s = insert_anchor_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, AsInt(a.tsc));
      sqlite3_bind_int64(s, 3, a.utc_ns);
      st = step(s, "insert anchor");
    }
    if (st.ok() && snapshot->utc_drift_ppm.has_value()) {
      sqlite3_stmt* s = update_drift_;
      sqlite3_bind_double(s, 1, *snapshot->utc_drift_ppm);
      sqlite3_bind_int64(s, 2, run_id);
      st = step(s, "update drift");
    }
    if (st.ok() && snapshot->pipeline.has_value()) {
      sqlite3_stmt* s = update_pipeline_;
      BindText(s, 1, snapshot->pipeline->first);
      sqlite3_bind_int(s, 2, snapshot->pipeline->second ? 1 : 0);
      sqlite3_bind_int64(s, 3, run_id);
      st = step(s, "update pipeline");
    }
  }
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

}  // namespace ticktrace::collect
