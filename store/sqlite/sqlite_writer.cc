#include "store/sqlite/sqlite_writer.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "store/sqlite/sqlite_schema.h"

namespace ticktrace::store {

absl::StatusOr<DetailPolicy> ParseDetailPolicy(std::string_view text) {
  if (text == "all") return DetailPolicy::kAll;
  if (text == "tail") return DetailPolicy::kTail;
  if (text == "none") return DetailPolicy::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("--detail must be all, tail or none, not '", std::string(text), "'"));
}

std::string_view DetailPolicyName(DetailPolicy policy) {
  switch (policy) {
    case DetailPolicy::kAll:
      return "all";
    case DetailPolicy::kTail:
      return "tail";
    case DetailPolicy::kNone:
      return "none";
  }
  return "all";
}

// Declared by sqlite_migrate.cc.
absl::Status MigrateToCurrent(SqliteWriter* writer, int from_version, const std::string& path);

namespace {

constexpr char kSqliteHeader[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                    'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

int64_t AsInt(uint64_t v) { return static_cast<int64_t>(v); }  // ids >= 2^63 wrap

void BindText(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void BindOptionalDouble(sqlite3_stmt* s, int i, const std::optional<double>& v) {
  if (v.has_value() && std::isfinite(*v)) {
    sqlite3_bind_double(s, i, *v);
  } else {
    sqlite3_bind_null(s, i);
  }
}

struct DbCloser {
  sqlite3* db;
  ~DbCloser() {
    if (db != nullptr) sqlite3_close(db);
  }
};

// Appends the decimal digits of `v`.
void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}


}  // namespace

struct SqliteWriter::Statements {
  sqlite3_stmt* insert_order = nullptr;
  sqlite3_stmt* insert_name = nullptr;
  sqlite3_stmt* insert_stage = nullptr;
  sqlite3_stmt* read_interval = nullptr;
  sqlite3_stmt* write_interval = nullptr;
  sqlite3_stmt* add_interval_orders = nullptr;
  sqlite3_stmt* add_interval_kept = nullptr;
  sqlite3_stmt* upsert_process = nullptr;
  sqlite3_stmt* upsert_thread = nullptr;
  sqlite3_stmt* upsert_tag = nullptr;
  sqlite3_stmt* upsert_counter = nullptr;
  sqlite3_stmt* upsert_stage_stats = nullptr;
  sqlite3_stmt* upsert_core = nullptr;
  sqlite3_stmt* update_pipeline = nullptr;
  sqlite3_stmt* insert_anchor = nullptr;
  sqlite3_stmt* update_drift = nullptr;

  std::vector<sqlite3_stmt*> all() const {
    return {insert_order,   insert_name,
            insert_stage,   read_interval,        write_interval,    add_interval_orders,
            add_interval_kept, upsert_process,    upsert_thread,     upsert_tag,
            upsert_counter, upsert_stage_stats,   upsert_core,       update_pipeline,
            insert_anchor,  update_drift};
  }
};

absl::Status SqliteWriter::CheckExisting(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot inspect: ", std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": is a symbolic link; refusing to follow it for a store (give the real path)"));
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
  DbCloser c{nullptr};
  if (sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot open as SQLite: ", c.db ? sqlite3_errmsg(c.db) : "out of memory"));
  }
  sqlite3_busy_timeout(c.db, 5000);
  absl::StatusOr<int> version = ReadSchemaVersion(c.db, path);
  if (!version.ok()) return version.status();
  if (*version > kSqliteSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": store schema ", *version, " is newer than this collector's (",
        kSqliteSchemaVersion, "); use a newer ticktrace or another --store"));
  }
  if (*version < kOldestMigratableVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": store schema ", *version, " is too old to migrate"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteWriter>> SqliteWriter::OpenOrCreate(
    const std::string& path, const SqliteOpenOptions& options) {
  absl::Status existing = CheckExisting(path);
  const bool create = absl::IsNotFound(existing);
  if (!existing.ok() && !create) return existing;
  if (create) {
    // Created here so that the mode and the refusal to follow a planted link
    // are ours, not SQLite's; SQLite's -wal and -shm files copy this mode.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          options.group_readable ? 0640 : 0600);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": cannot create the store: ", std::strerror(errno)));
    }
    ::close(fd);
  }
  auto writer = std::unique_ptr<SqliteWriter>(new SqliteWriter());
  writer->path_ = path;
  writer->st_ = std::make_unique<Statements>();
  absl::Status s;
  if (sqlite3_open_v2(path.c_str(), &writer->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    s = writer->Error("cannot open store");
  }
  // First: a reader that opens the store meanwhile must make us wait, not fail.
  if (s.ok()) sqlite3_busy_timeout(writer->db_, 5000);
  if (s.ok()) s = writer->Exec("PRAGMA journal_mode=WAL");
  if (s.ok()) s = writer->Exec("PRAGMA synchronous=NORMAL");
  if (s.ok()) s = writer->Exec("PRAGMA cache_size=-65536");
  if (s.ok() && create) {
    s = writer->Exec("BEGIN");
    if (s.ok()) s = writer->Exec(SqliteSchemaSql());
    if (s.ok()) s = writer->Exec("COMMIT");
  }
  if (s.ok() && !create) {
    absl::StatusOr<int> version = ReadSchemaVersion(writer->db_, path);
    if (!version.ok()) {
      s = version.status();
    } else if (*version < kSqliteSchemaVersion) {
      absl::StatusOr<std::string> backup = BackupBeforeMigration(writer->db_, path, *version);
      if (!backup.ok()) {
        s = backup.status();
      } else {
        if (options.on_migration) {
          options.on_migration(absl::StrCat(path, ": store schema ", *version,
                                            " migrated in place to schema ",
                                            kSqliteSchemaVersion, "; the old store is kept at ",
                                            *backup));
        }
        s = MigrateToCurrent(writer.get(), *version, path);
      }
    }
  }
  if (s.ok() && writer->st_->insert_order == nullptr) s = writer->Prepare();
  if (!s.ok()) {
    writer.reset();
    if (create) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        ::unlink((path + suffix).c_str());
      }
    }
    return s;
  }
  return writer;
}

SqliteWriter::~SqliteWriter() {
  if (st_ != nullptr) {
    for (sqlite3_stmt* s : st_->all()) {
      if (s != nullptr) sqlite3_finalize(s);
    }
  }
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status SqliteWriter::Error(absl::string_view what) const {
  return absl::InternalError(
      absl::StrCat(path_, ": ", what, ": ", db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

absl::Status SqliteWriter::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat(path_, ": ", err ? err : "sqlite error"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::Prepare() {
  if (st_->insert_order != nullptr) return absl::OkStatus();
  const std::string flag_columns = [] {
    std::vector<std::string> names;
    for (const FlagName& f : kFlagNames) names.emplace_back(f.name);
    return absl::StrJoin(names, ", ");
  }();
  const std::string write_interval = absl::StrCat(
      "INSERT OR REPLACE INTO intervals(run_id, stage_id, start_utc_ns, samples_all, count, ",
      flag_columns, ", min_ns, max_ns, sum_ns, histogram) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const std::string read_interval = absl::StrCat(
      "SELECT samples_all, ", flag_columns,
      ", histogram FROM intervals WHERE run_id = ? AND stage_id = ? AND start_utc_ns = ?");
  const std::string upsert_stage_stats = absl::StrCat(
      "INSERT OR REPLACE INTO stage_stats(run_id, stage, position, count, min_ns, max_ns, "
      "mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, include_flagged, samples_all, uncertainty_ns, ",
      flag_columns, ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  struct {
    sqlite3_stmt** stmt;
    std::string sql;
  } statements[] = {
      {&st_->insert_order,
       "INSERT OR IGNORE INTO orders(run_id, order_id, instance, parent_order_id, first_utc_ns, "
       "first_tsc, total_ns, complete, missing, flags, samples, detail) "
       "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&st_->insert_name, "INSERT INTO names(run_id, name_id, name) VALUES(?,?,?)"},
      {&st_->insert_stage, "INSERT INTO stages(run_id, stage_id, name, kind) VALUES(?,?,?,?)"},
      {&st_->read_interval, read_interval},
      {&st_->write_interval, write_interval},
      {&st_->add_interval_orders,
       "INSERT INTO interval_detail(run_id, start_utc_ns, orders, orders_kept) VALUES(?,?,?,0) "
       "ON CONFLICT(run_id, start_utc_ns) DO UPDATE SET orders = orders + excluded.orders"},
      {&st_->add_interval_kept,
       "INSERT INTO interval_detail(run_id, start_utc_ns, orders, orders_kept, first_order_key, "
       "last_order_key) VALUES(?,?,0,?,?,?) ON CONFLICT(run_id, start_utc_ns) DO UPDATE SET "
       "orders_kept = orders_kept + excluded.orders_kept, "
       "first_order_key = min(coalesce(first_order_key, excluded.first_order_key), "
       "excluded.first_order_key), "
       "last_order_key = max(coalesce(last_order_key, excluded.last_order_key), "
       "excluded.last_order_key)"},
      {&st_->upsert_process,
       "INSERT OR REPLACE INTO processes(run_id, process_id, pid, start_ticks, name, segment, "
       "first_seen_utc_ns, exited_utc_ns, tags_rejected, threads_without_slot, slotless_dropped) "
       "VALUES(?,?,?,?,?,?,?,?,?,?,?)"},
      {&st_->upsert_thread,
       "INSERT OR REPLACE INTO threads(run_id, process_id, slot, generation, tid, name, drained, "
       "dropped) VALUES(?,?,?,?,?,?,?,?)"},
      {&st_->upsert_tag,
       "INSERT OR REPLACE INTO tags(run_id, process_id, tag_id, name) VALUES(?,?,?,?)"},
      {&st_->upsert_counter, "INSERT OR REPLACE INTO counters(run_id, name, value) VALUES(?,?,?)"},
      {&st_->upsert_stage_stats, upsert_stage_stats},
      {&st_->upsert_core,
       "INSERT OR REPLACE INTO cores(run_id, cpu, measured_utc_ns, offset_ns, bound_ns, "
       "consistent) VALUES(?,?,?,?,?,?)"},
      {&st_->insert_anchor, "INSERT OR IGNORE INTO anchors(run_id, tsc, utc_ns) VALUES(?,?,?)"},
      {&st_->update_drift, "UPDATE runs SET utc_drift_ppm = ? WHERE run_id = ?"},
      {&st_->update_pipeline,
       "UPDATE runs SET pipeline = ?, pipeline_learned = ? WHERE run_id = ?"},
  };
  for (auto& [stmt, sql] : statements) {
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) !=
        SQLITE_OK) {
      return Error(absl::StrCat("cannot prepare '", sql.substr(0, 120), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::AddClockErrorColumn() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = "
                              "'clock_error_ns'",
                         -1, &s, nullptr) != SQLITE_OK) {
    return Error("reading runs' columns");
  }
  const bool has = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) > 0;
  sqlite3_finalize(s);
  if (has) return absl::OkStatus();
  return Exec("ALTER TABLE runs ADD COLUMN clock_error_ns REAL");
}

absl::StatusOr<int64_t> SqliteWriter::BeginRun(const RunMeta& run) {
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "INSERT INTO runs(session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
      "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, settings, "
      "pipeline, pipeline_learned, interval_ns, detail) "
      "VALUES(?,?,?,NULL,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return Error("prepare runs");
  BindText(s, 1, run.session);
  BindText(s, 2, run.host);
  sqlite3_bind_int64(s, 3, run.started_utc_ns);
  sqlite3_bind_double(s, 4, run.tsc_hz);
  BindText(s, 5, run.calibration_source);
  BindOptionalDouble(s, 6, run.spread_ppm);
  BindOptionalDouble(s, 7, run.kernel_tsc_hz);
  BindOptionalDouble(s, 8, run.tsc_step_ns);
  sqlite3_bind_int64(s, 9, AsInt(run.anchor_tsc));
  sqlite3_bind_int64(s, 10, run.anchor_utc_ns);
  BindText(s, 11, run.environment_json);
  BindText(s, 12, run.settings_json);
  BindText(s, 13, run.pipeline);
  sqlite3_bind_int(s, 14, run.pipeline_learned ? 1 : 0);
  sqlite3_bind_int64(s, 15, run.interval_ns);
  sqlite3_bind_text(s, 16, DetailPolicyName(run.detail).data(),
                    static_cast<int>(DetailPolicyName(run.detail).size()), SQLITE_STATIC);
  const int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("insert into runs");
  interval_ns_ = run.interval_ns;
  const int64_t run_id = sqlite3_last_insert_rowid(db_);
  if (run.clock_error_ns.has_value()) {
    // runs.clock_error_ns (multi-host); a schema-2 store made before the
    // column gets it here, once (ALTER TABLE ADD COLUMN is additive).
    if (absl::Status st = AddClockErrorColumn(); !st.ok()) return st;
    sqlite3_stmt* u = nullptr;
    if (sqlite3_prepare_v2(db_, "UPDATE runs SET clock_error_ns = ? WHERE run_id = ?", -1, &u,
                           nullptr) != SQLITE_OK) {
      return Error("prepare runs.clock_error_ns");
    }
    sqlite3_bind_double(u, 1, *run.clock_error_ns);
    sqlite3_bind_int64(u, 2, run_id);
    const int urc = sqlite3_step(u);
    sqlite3_finalize(u);
    if (urc != SQLITE_DONE) return Error("update runs.clock_error_ns");
  }
  return run_id;
}

absl::StatusOr<RunState> SqliteWriter::LookupRun(int64_t run_id) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT session, ended_utc_ns, interval_ns FROM runs WHERE run_id = ?",
                         -1, &s, nullptr) != SQLITE_OK) {
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
    interval_ns_ = std::max<int64_t>(1, sqlite3_column_int64(s, 2));
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("run lookup");
  if (!state.exists) return state;
  if (sqlite3_prepare_v2(db_, "SELECT name, value FROM counters WHERE run_id = ?", -1, &s,
                         nullptr) != SQLITE_OK) {
    return Error("prepare counters lookup");
  }
  sqlite3_bind_int64(s, 1, run_id);
  int crc;
  while ((crc = sqlite3_step(s)) == SQLITE_ROW) {
    const char* name = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    if (name != nullptr) state.counters[name] = sqlite3_column_int64(s, 1);
  }
  sqlite3_finalize(s);
  if (crc != SQLITE_DONE) return Error("counters lookup");
  return state;
}

absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> SqliteWriter::LastStoredOrders(
    int64_t run_id, uint64_t count) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT order_id, instance FROM orders WHERE run_id = ? "
                         "ORDER BY order_key DESC LIMIT ?",
                         -1, &s, nullptr) != SQLITE_OK) {
    return Error("prepare last orders");
  }
  sqlite3_bind_int64(s, 1, run_id);
  sqlite3_bind_int64(s, 2, static_cast<int64_t>(std::min<uint64_t>(count, INT64_MAX)));
  std::vector<std::pair<uint64_t, uint32_t>> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    out.emplace_back(static_cast<uint64_t>(sqlite3_column_int64(s, 0)),
                     static_cast<uint32_t>(sqlite3_column_int64(s, 1)));
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("last orders");
  return out;
}

absl::StatusOr<int64_t> SqliteWriter::ResumeRun(int64_t run_id) {
  if (absl::StatusOr<RunState> state = LookupRun(run_id); !state.ok()) return state.status();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "INSERT INTO counters(run_id, name, value) VALUES(?, ?, 1) "
                         "ON CONFLICT(run_id, name) DO UPDATE SET value = value + 1 "
                         "RETURNING value",
                         -1, &s, nullptr) != SQLITE_OK) {
    return Error("prepare restarts");
  }
  sqlite3_bind_int64(s, 1, run_id);
  const std::string_view name = CounterName(Counter::kRestarts);
  sqlite3_bind_text(s, 2, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
  const int rc = sqlite3_step(s);
  const int64_t restarts = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW) return Error("count the restart");
  if (absl::Status st = LoadDictionaries(run_id); !st.ok()) return st;
  return restarts;
}

absl::Status SqliteWriter::LoadDictionaries(int64_t run_id) {
  names_.clear();
  stages_.clear();
  dictionaries_run_ = run_id;
  for (const auto& [sql, map] :
       {std::pair("SELECT name, name_id FROM names WHERE run_id = ?", &names_),
        std::pair("SELECT name, stage_id FROM stages WHERE run_id = ?", &stages_)}) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return Error("prepare names");
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const char* n = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      (*map)[n ? n : ""] = static_cast<uint32_t>(sqlite3_column_int64(s, 1));
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) return Error("read names");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> SqliteWriter::NameId(int64_t run_id, const std::string& name) {
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  sqlite3_stmt* s = st_->insert_name;
  sqlite3_bind_int64(s, 1, run_id);
  sqlite3_bind_int64(s, 2, id);
  BindText(s, 3, name);
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return Error("insert into names");
  names_.emplace(name, id);
  return id;
}

absl::StatusOr<uint32_t> SqliteWriter::StageId(int64_t run_id, const std::string& name,
                                               StageKind kind) {
  if (auto it = stages_.find(name); it != stages_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stages_.size());
  sqlite3_stmt* s = st_->insert_stage;
  sqlite3_bind_int64(s, 1, run_id);
  sqlite3_bind_int64(s, 2, id);
  BindText(s, 3, name);
  const std::string_view kind_name = StageKindName(kind);
  sqlite3_bind_text(s, 4, kind_name.data(), static_cast<int>(kind_name.size()), SQLITE_STATIC);
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return Error("insert into stages");
  stages_.emplace(name, id);
  return id;
}

absl::Status SqliteWriter::Write(int64_t run_id, const std::vector<IntervalDelta>& intervals,
                                 const std::vector<IntervalOrders>& interval_orders,
                                 const std::vector<OrderDetail>& orders, const Snapshot* snapshot,
                                 uint64_t* already_stored) {
  if (dictionaries_run_ != run_id) {
    if (absl::Status s = LoadDictionaries(run_id); !s.ok()) return s;
  }
  absl::Status st = Exec(in_migration_ ? "SAVEPOINT write_batch" : "BEGIN");
  if (!st.ok()) return st;
  st = WriteIntervals(run_id, intervals);
  for (const IntervalOrders& io : interval_orders) {
    if (!st.ok() || io.orders == 0) continue;
    sqlite3_stmt* s = st_->add_interval_orders;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, io.start_utc_ns);
    sqlite3_bind_int64(s, 3, AsInt(io.orders));
    if (sqlite3_step(s) != SQLITE_DONE) st = Error("count interval orders");
    sqlite3_reset(s);
  }
  if (st.ok()) st = WriteOrders(run_id, orders, already_stored);
  if (st.ok() && snapshot != nullptr) st = WriteSnapshot(run_id, *snapshot);
  if (st.ok()) return Exec(in_migration_ ? "RELEASE write_batch" : "COMMIT");
  Exec(in_migration_ ? "ROLLBACK TO write_batch" : "ROLLBACK").IgnoreError();
  // The dictionaries may hold ids the rollback took back.
  dictionaries_run_ = -1;
  return st;
}

absl::Status SqliteWriter::WriteIntervals(int64_t run_id,
                                          const std::vector<IntervalDelta>& intervals) {
  for (const IntervalDelta& d : intervals) {
    absl::StatusOr<uint32_t> stage = StageId(run_id, d.stage, d.kind);
    if (!stage.ok()) return stage.status();
    // Merge with what an earlier delta of this (stage, interval) stored.
    Histogram merged = d.histogram;
    uint64_t samples_all = d.samples_all;
    std::array<uint64_t, kFlagNames.size()> flags = d.flag_counts;
    sqlite3_stmt* r = st_->read_interval;
    sqlite3_bind_int64(r, 1, run_id);
    sqlite3_bind_int64(r, 2, *stage);
    sqlite3_bind_int64(r, 3, d.start_utc_ns);
    const int rc = sqlite3_step(r);
    absl::Status status;
    if (rc == SQLITE_ROW) {
      samples_all += static_cast<uint64_t>(sqlite3_column_int64(r, 0));
      for (size_t i = 0; i < flags.size(); ++i) {
        flags[i] += static_cast<uint64_t>(sqlite3_column_int64(r, static_cast<int>(1 + i)));
      }
      const int h = static_cast<int>(1 + flags.size());
      absl::StatusOr<Histogram> old = Histogram::Decode(
          std::string_view(static_cast<const char*>(sqlite3_column_blob(r, h)),
                           static_cast<size_t>(sqlite3_column_bytes(r, h))));
      if (old.ok()) {
        merged.Merge(*old);
      } else {
        status = absl::DataLossError(absl::StrCat(path_, ": interval of stage ", d.stage, ": ",
                                                  old.status().message()));
      }
    } else if (rc != SQLITE_DONE) {
      status = Error("read interval");
    }
    sqlite3_reset(r);
    if (!status.ok()) return status;
    sqlite3_stmt* w = st_->write_interval;
    int i = 1;
    sqlite3_bind_int64(w, i++, run_id);
    sqlite3_bind_int64(w, i++, *stage);
    sqlite3_bind_int64(w, i++, d.start_utc_ns);
    sqlite3_bind_int64(w, i++, AsInt(samples_all));
    sqlite3_bind_int64(w, i++, AsInt(merged.count()));
    for (uint64_t f : flags) sqlite3_bind_int64(w, i++, AsInt(f));
    if (merged.count() > 0) {
      sqlite3_bind_double(w, i++, merged.min());
      sqlite3_bind_double(w, i++, merged.max());
      sqlite3_bind_double(w, i++, merged.sum());
    } else {
      for (int k = 0; k < 3; ++k) sqlite3_bind_null(w, i++);
    }
    const std::string blob = merged.Encode();
    sqlite3_bind_blob(w, i++, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    const int wrc = sqlite3_step(w);
    sqlite3_reset(w);
    if (wrc != SQLITE_DONE) return Error("write interval");
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::WriteOrders(int64_t run_id, const std::vector<OrderDetail>& orders,
                                       uint64_t* already_stored) {
  struct Kept {
    uint64_t count = 0;
    int64_t first_key = std::numeric_limits<int64_t>::max();
    int64_t last_key = std::numeric_limits<int64_t>::min();
  };
  std::map<int64_t, Kept> kept;  // by interval start
  std::string blob;
  std::string samples;
  for (const OrderDetail& o : orders) {
    blob.clear();
    if (absl::Status s = PackOrderDetail(
            o, [&](const std::string& tag) { return NameId(run_id, tag); }, &blob);
        !s.ok()) {
      return s;
    }
    sqlite3_stmt* s = st_->insert_order;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, AsInt(o.order_id));
    sqlite3_bind_int64(s, 3, o.instance);
    if (o.parent_order_id.has_value()) {
      sqlite3_bind_int64(s, 4, AsInt(*o.parent_order_id));
    } else {
      sqlite3_bind_null(s, 4);
    }
    sqlite3_bind_int64(s, 5, o.first_utc_ns);
    sqlite3_bind_int64(s, 6, AsInt(o.first_tsc));
    if (o.total_ns.has_value()) {
      sqlite3_bind_int64(s, 7, RoundNs(*o.total_ns));
    } else {
      sqlite3_bind_null(s, 7);
    }
    sqlite3_bind_int(s, 8, o.complete ? 1 : 0);
    if (o.missing.empty()) {
      sqlite3_bind_null(s, 9);
    } else {
      BindText(s, 9, o.missing);
    }
    sqlite3_bind_int64(s, 10, o.flags());
    // samples: [[stage_id, latency_ns, flags], ...] in seq order (docs/store.md).
    samples.assign(1, '[');
    for (const SampleDetail& sd : o.samples) {
      absl::StatusOr<uint32_t> stage = StageId(run_id, sd.stage, StageKindOfName(sd.stage));
      if (!stage.ok()) return stage.status();
      if (samples.size() > 1) samples.push_back(',');
      samples.push_back('[');
      AppendInt(&samples, *stage);
      samples.push_back(',');
      AppendInt(&samples, RoundNs(sd.latency_ns));
      samples.push_back(',');
      AppendInt(&samples, sd.flags);
      samples.push_back(']');
    }
    samples.push_back(']');
    sqlite3_bind_text(s, 11, samples.data(), static_cast<int>(samples.size()), SQLITE_STATIC);
    sqlite3_bind_blob(s, 12, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error("insert order");
    if (sqlite3_changes(db_) == 0) {
      // Its key is taken: the same order re-emitted after a restart (same
      // first TSC: kept once), or a reuse of the id the collector no longer
      // remembered (another first TSC): the next free instance.
      absl::StatusOr<std::optional<uint32_t>> fresh = FreeInstanceIfReused(run_id, o);
      if (!fresh.ok()) return fresh.status();
      if (!fresh->has_value()) {
        ++*already_stored;  // stored before a restart, with its samples
        continue;
      }
      sqlite3_bind_int64(s, 3, **fresh);
      rc = sqlite3_step(s);
      sqlite3_reset(s);
      if (rc != SQLITE_DONE || sqlite3_changes(db_) == 0) return Error("insert reused order id");
    }
    const int64_t key = sqlite3_last_insert_rowid(db_);
    const int64_t interval = o.first_utc_ns - (((o.first_utc_ns % interval_ns_) + interval_ns_) %
                                               interval_ns_);
    Kept& k = kept[interval];
    ++k.count;
    k.first_key = std::min(k.first_key, key);
    k.last_key = std::max(k.last_key, key);
  }
  for (const auto& [start, k] : kept) {
    sqlite3_stmt* s = st_->add_interval_kept;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, start);
    sqlite3_bind_int64(s, 3, AsInt(k.count));
    sqlite3_bind_int64(s, 4, k.first_key);
    sqlite3_bind_int64(s, 5, k.last_key);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error("count kept detail");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint32_t>> SqliteWriter::FreeInstanceIfReused(
    int64_t run_id, const OrderDetail& o) {
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT (SELECT first_tsc FROM orders WHERE run_id = ?1 AND order_id = ?2 "
                         "AND instance = ?3), (SELECT max(instance) FROM orders WHERE run_id = ?1 "
                         "AND order_id = ?2)",
                         -1, &q, nullptr) != SQLITE_OK) {
    return Error("prepare instance lookup");
  }
  sqlite3_bind_int64(q, 1, run_id);
  sqlite3_bind_int64(q, 2, AsInt(o.order_id));
  sqlite3_bind_int64(q, 3, o.instance);
  std::optional<uint32_t> fresh;
  const int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW && sqlite3_column_int64(q, 0) != AsInt(o.first_tsc)) {
    fresh = static_cast<uint32_t>(sqlite3_column_int64(q, 1) + 1);
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW) return Error("instance lookup");
  return fresh;
}

absl::Status SqliteWriter::WriteSnapshot(int64_t run_id, const Snapshot& snapshot) {
  auto step = [&](sqlite3_stmt* s, absl::string_view what) -> absl::Status {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) return Error(what);
    return absl::OkStatus();
  };
  for (const ProcessRow& p : snapshot.processes) {
    sqlite3_stmt* s = st_->upsert_process;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, p.process_id);
    sqlite3_bind_int64(s, 3, p.pid);
    sqlite3_bind_int64(s, 4, AsInt(p.start_ticks));
    BindText(s, 5, p.name);
    BindText(s, 6, p.segment);
    sqlite3_bind_int64(s, 7, p.first_seen_utc_ns);
    if (p.exited_utc_ns.has_value()) sqlite3_bind_int64(s, 8, *p.exited_utc_ns);
    sqlite3_bind_int64(s, 9, AsInt(p.tags_rejected));
    sqlite3_bind_int64(s, 10, AsInt(p.threads_without_slot));
    sqlite3_bind_int64(s, 11, AsInt(p.slotless_dropped));
    if (absl::Status st = step(s, "upsert process"); !st.ok()) return st;
  }
  for (const ThreadRow& t : snapshot.threads) {
    sqlite3_stmt* s = st_->upsert_thread;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, t.process_id);
    sqlite3_bind_int64(s, 3, t.slot);
    sqlite3_bind_int64(s, 4, AsInt(t.generation));
    sqlite3_bind_int64(s, 5, t.tid);
    BindText(s, 6, t.name);
    sqlite3_bind_int64(s, 7, AsInt(t.drained));
    sqlite3_bind_int64(s, 8, AsInt(t.dropped));
    if (absl::Status st = step(s, "upsert thread"); !st.ok()) return st;
  }
  for (const TagRow& t : snapshot.tags) {
    sqlite3_stmt* s = st_->upsert_tag;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, t.process_id);
    sqlite3_bind_int64(s, 3, t.tag_id);
    BindText(s, 4, t.name);
    if (absl::Status st = step(s, "upsert tag"); !st.ok()) return st;
  }
  for (const auto& [name, value] : snapshot.counters) {
    // `restarts` is counted by ResumeRun in the store itself.
    if (name == CounterName(Counter::kRestarts)) continue;
    sqlite3_stmt* s = st_->upsert_counter;
    sqlite3_bind_int64(s, 1, run_id);
    BindText(s, 2, name);
    sqlite3_bind_int64(s, 3, value);
    if (absl::Status st = step(s, "upsert counter"); !st.ok()) return st;
  }
  for (const StageStatsRow& r : snapshot.stages) {
    sqlite3_stmt* s = st_->upsert_stage_stats;
    int i = 1;
    sqlite3_bind_int64(s, i++, run_id);
    BindText(s, i++, r.stage);
    sqlite3_bind_int(s, i++, r.position);
    sqlite3_bind_int64(s, i++, AsInt(r.count));
    for (const auto* v : {&r.min_ns, &r.max_ns, &r.mean_ns, &r.p50_ns, &r.p90_ns, &r.p99_ns,
                          &r.p999_ns}) {
      BindOptionalDouble(s, i++, *v);
    }
    sqlite3_bind_int(s, i++, r.include_flagged ? 1 : 0);
    sqlite3_bind_int64(s, i++, AsInt(r.samples_all));
    BindOptionalDouble(s, i++, r.uncertainty_ns);
    for (uint64_t f : r.flag_counts) sqlite3_bind_int64(s, i++, AsInt(f));
    if (absl::Status st = step(s, "upsert stage_stats"); !st.ok()) return st;
  }
  for (const CoreRow& c : snapshot.cores) {
    sqlite3_stmt* s = st_->upsert_core;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int(s, 2, c.cpu);
    sqlite3_bind_int64(s, 3, c.measured_utc_ns);
    sqlite3_bind_double(s, 4, c.offset_ns);
    sqlite3_bind_double(s, 5, c.bound_ns);
    sqlite3_bind_int(s, 6, c.consistent ? 1 : 0);
    if (absl::Status st = step(s, "upsert core"); !st.ok()) return st;
  }
  for (const AnchorRow& a : snapshot.anchors) {
    sqlite3_stmt* s = st_->insert_anchor;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, AsInt(a.tsc));
    sqlite3_bind_int64(s, 3, a.utc_ns);
    if (absl::Status st = step(s, "insert anchor"); !st.ok()) return st;
  }
  if (snapshot.utc_drift_ppm.has_value()) {
    sqlite3_stmt* s = st_->update_drift;
    sqlite3_bind_double(s, 1, *snapshot.utc_drift_ppm);
    sqlite3_bind_int64(s, 2, run_id);
    if (absl::Status st = step(s, "update drift"); !st.ok()) return st;
  }
  if (snapshot.pipeline.has_value()) {
    sqlite3_stmt* s = st_->update_pipeline;
    BindText(s, 1, snapshot.pipeline->first);
    sqlite3_bind_int(s, 2, snapshot.pipeline->second ? 1 : 0);
    sqlite3_bind_int64(s, 3, run_id);
    if (absl::Status st = step(s, "update pipeline"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SqliteWriter::ApplyRetention(
    int64_t run_id, std::optional<int64_t> detail_before_utc_ns, uint64_t max_bytes,
    std::optional<int64_t> intervals_before_utc_ns) {
  uint64_t deleted = 0;
  // Deletes the detail of interval rows selected by `where` (bound to run_id
  // and `bound`), oldest first, `limit` intervals at most.
  auto delete_detail = [&](const char* where, int64_t bound, int limit) -> absl::StatusOr<int> {
    const std::string select = absl::StrCat(
        "SELECT start_utc_ns, first_order_key, last_order_key FROM interval_detail "
        "WHERE run_id = ?1 AND detail_deleted = 0 AND ",
        where, " ORDER BY start_utc_ns LIMIT ", limit);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      return Error("prepare retention");
    }
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, bound);
    struct Range {
      int64_t start, first, last;
      bool has_keys;
    };
    std::vector<Range> ranges;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      ranges.push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                        sqlite3_column_int64(s, 2), sqlite3_column_type(s, 1) != SQLITE_NULL});
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) return Error("select retention");
    if (ranges.empty()) return 0;
    if (absl::Status st = Exec("BEGIN"); !st.ok()) return st;
    absl::Status st;
    for (const Range& r : ranges) {
      if (r.has_keys) {
        // An order's key range may hold keys of neighbouring intervals
        // (orders finish out of first-stamp order): delete by interval.
        {
          const char* sql =
              "DELETE FROM orders WHERE order_key BETWEEN ?1 AND ?2 AND run_id = ?3 AND "
              "first_utc_ns >= ?4 AND first_utc_ns < ?4 + ?5";
          sqlite3_stmt* d = nullptr;
          if (sqlite3_prepare_v2(db_, sql, -1, &d, nullptr) != SQLITE_OK) {
            st = Error("prepare delete");
            break;
          }
          sqlite3_bind_int64(d, 1, r.first);
          sqlite3_bind_int64(d, 2, r.last);
          sqlite3_bind_int64(d, 3, run_id);
          sqlite3_bind_int64(d, 4, r.start);
          sqlite3_bind_int64(d, 5, interval_ns_);
          const int drc = sqlite3_step(d);
          if (drc == SQLITE_DONE) {
            deleted += static_cast<uint64_t>(sqlite3_changes(db_));
          }
          sqlite3_finalize(d);
          if (drc != SQLITE_DONE) {
            st = Error("delete detail");
            break;
          }
        }
      }
      if (!st.ok()) break;
      sqlite3_stmt* m = nullptr;
      if (sqlite3_prepare_v2(db_,
                             "UPDATE interval_detail SET detail_deleted = 1 WHERE run_id = ? AND "
                             "start_utc_ns = ?",
                             -1, &m, nullptr) != SQLITE_OK) {
        st = Error("prepare mark");
        break;
      }
      sqlite3_bind_int64(m, 1, run_id);
      sqlite3_bind_int64(m, 2, r.start);
      const int mrc = sqlite3_step(m);
      sqlite3_finalize(m);
      if (mrc != SQLITE_DONE) {
        st = Error("mark deleted detail");
        break;
      }
    }
    if (!st.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return st;
    }
    if (absl::Status c = Exec("COMMIT"); !c.ok()) return c;
    return static_cast<int>(ranges.size());
  };
  if (detail_before_utc_ns.has_value()) {
    absl::StatusOr<int> n = delete_detail("start_utc_ns < ?2", *detail_before_utc_ns, 1 << 30);
    if (!n.ok()) return n.status();
  }
  if (max_bytes > 0) {
    // The file holds freed pages until they are reused: count live pages.
    auto live_bytes = [&]() -> uint64_t {
      int64_t pages = 0, free_pages = 0, page_size = 4096;
      for (auto [sql, out] : {std::pair("PRAGMA page_count", &pages),
                              std::pair("PRAGMA freelist_count", &free_pages),
                              std::pair("PRAGMA page_size", &page_size)}) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW) {
          *out = sqlite3_column_int64(s, 0);
        }
        sqlite3_finalize(s);
      }
      return static_cast<uint64_t>(std::max<int64_t>(0, pages - free_pages) * page_size);
    };
    while (live_bytes() > max_bytes) {
      absl::StatusOr<int> n =
          delete_detail("start_utc_ns >= ?2", std::numeric_limits<int64_t>::min(), 16);
      if (!n.ok()) return n.status();
      if (*n == 0) break;  // no detail left: the rest is statistics
    }
  }
  if (intervals_before_utc_ns.has_value()) {
    absl::StatusOr<int> n = delete_detail("start_utc_ns < ?2", *intervals_before_utc_ns, 1 << 30);
    if (!n.ok()) return n.status();
    for (const char* sql : {"DELETE FROM intervals WHERE run_id = ? AND start_utc_ns < ?",
                            "DELETE FROM interval_detail WHERE run_id = ? AND start_utc_ns < ?"}) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return Error("prepare");
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int64(s, 2, *intervals_before_utc_ns);
      const int rc = sqlite3_step(s);
      sqlite3_finalize(s);
      if (rc != SQLITE_DONE) return Error("delete intervals");
    }
  }
  return deleted;
}

absl::Status SqliteWriter::EndRun(int64_t run_id, int64_t ended_utc_ns) {
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
  // Everything into the main file, the WAL emptied: a copy of the .db alone
  // is the whole store. Readers that hold a snapshot make this wait (busy
  // timeout); if it still cannot truncate, the data is safe in the WAL.
  int log_frames = 0, checkpointed = 0;
  const int crc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &log_frames,
                                            &checkpointed);
  if (crc != SQLITE_OK && crc != SQLITE_BUSY) return Error("checkpoint at the end of the run");
  return absl::OkStatus();
}

}  // namespace ticktrace::store
