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
#include "common/own_file.h"
#include "store/sqlite/sqlite_block_sql.h"
#include "store/sqlite/sqlite_budget_breaches.h"
#include "store/sqlite/sqlite_notes.h"
#include "store/sqlite/sqlite_stage_clocks.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_statement.h"

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

using internal::Statement;

// A finite value, else NULL (the statistics of an empty stage are NaN).
void BindFiniteOrNull(Statement& s, int i, const std::optional<double>& v) {
  if (v.has_value() && std::isfinite(*v)) {
    s.BindDouble(i, *v);
  } else {
    s.BindNull(i);
  }
}

}  // namespace

// The statements Write() steps for every batch, prepared once (Prepare()).
struct SqliteWriter::Statements {
  Statement insert_block;
  Statement insert_order_id;
  Statement blocks_of_page;  // StoredIdsOfPage
  Statement insert_name;
  Statement insert_stage;
  Statement read_interval;
  Statement write_interval;
  Statement add_interval_orders;
  Statement add_interval_kept;
  Statement upsert_process;
  Statement upsert_thread;
  Statement upsert_tag;
  Statement upsert_counter;
  Statement upsert_stage_stats;
  Statement upsert_core;
  Statement update_pipeline;
  Statement insert_anchor;
  Statement update_drift;
};

// A block being filled: its orders' JSON elements and packed details.
struct SqliteWriter::PendingBlock {
  int64_t start_utc_ns = 0;
  int64_t count = 0;
  explicit PendingBlock(int64_t start) : start_utc_ns(start), encoder(start) {}
  CompactBlockEncoder encoder;
  std::string encoded;
  std::vector<int64_t> pages;  // of its orders' ids
};

// One id page: a bit per id of the page the store holds (committed or in the
// open transaction), and, once an id of it came again, every (id, instance,
// first TSC) held.
struct SqliteWriter::IdPageState {
  std::array<uint64_t, (size_t{1} << kIdPageBits) / 64> bits{};
  uint64_t used_batch = 0;
  std::optional<std::vector<BlockId>> known;
};

// An interval row as the store holds it (the sums of every delta written).
struct SqliteWriter::OpenInterval {
  uint64_t samples_all = 0;
  std::array<uint64_t, kFlagNames.size()> flags{};
  Histogram histogram;
};

namespace {

// Which file a path named when it was checked: the store is opened by name
// again by SQLite, so the name is compared with it once SQLite has it open.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
};

// SQLite's companions of a store: it trusts what they hold as much as the
// store itself (a -wal's frames are copied into the store), so each one
// that exists must pass the same checks.
constexpr const char* kCompanionSuffixes[] = {"-wal", "-shm", "-journal"};

absl::Status CheckCompanions(const std::string& path, const ExistingFileRules& rules) {
  for (const char* suffix : kCompanionSuffixes) {
    const std::string companion = path + suffix;
    struct stat st;
    if (::lstat(companion.c_str(), &st) != 0) continue;  // absent: SQLite makes it, ours
    absl::StatusOr<int> fd = OpenExistingFile(companion, O_RDONLY, rules);
    if (!fd.ok()) return fd.status();
    ::close(*fd);
  }
  return absl::OkStatus();
}

// The checks of CheckExisting, on the descriptor; the identity of what passed.
absl::StatusOr<FileIdentity> CheckStoreFile(const std::string& path,
                                            const ExistingFileRules& rules) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": cannot inspect: ", std::strerror(errno)));
    }
    // Nothing yet: a -wal or -journal someone planted would be read into
    // the new store, so they are checked too.
    if (absl::Status s = CheckCompanions(path, rules); !s.ok()) return s;
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": is a symbolic link; refusing to follow it for a store (give the real path)"));
  }
  // A regular file of ours (or root's) that others may not write, opened
  // without blocking and checked on the descriptor (common/own_file.h).
  absl::StatusOr<int> fd = OpenExistingFile(path, O_RDWR, rules);
  if (!fd.ok()) return fd.status();
  char header[16] = {};
  const ssize_t n = ::pread(*fd, header, sizeof(header), 0);
  struct stat opened;
  const bool stat_ok = ::fstat(*fd, &opened) == 0;
  ::close(*fd);
  if (n != static_cast<ssize_t>(sizeof(header)) ||
      std::memcmp(header, kSqliteHeader, sizeof(header)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": exists and is not a ticktrace store (not an SQLite database); left untouched"));
  }
  if (!stat_ok) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot inspect: ", std::strerror(errno)));
  }
  if (absl::Status s = CheckCompanions(path, rules); !s.ok()) return s;
  return FileIdentity{opened.st_dev, opened.st_ino};
}

// OK when `path` still names the file `id` (after SQLite opened it by name).
absl::Status CheckSameFile(const std::string& path, const FileIdentity& id) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || st.st_dev != id.dev || st.st_ino != id.ino) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": was replaced while the store was being opened; refusing it"));
  }
  return absl::OkStatus();
}

ExistingFileRules StoreRules(bool group_may_write) {
  return ExistingFileRules{.must_be_ours = true, .group_may_write = group_may_write};
}

}  // namespace

absl::Status SqliteWriter::CheckExisting(const std::string& path, bool group_may_write) {
  absl::StatusOr<FileIdentity> checked = CheckStoreFile(path, StoreRules(group_may_write));
  if (!checked.ok()) return checked.status();
  sqlite3* raw = nullptr;
  const int open_rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  internal::Db db(raw);
  if (open_rc != SQLITE_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot open as SQLite: ", raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  if (absl::Status s = internal::DistrustSchema(db.get(), path); !s.ok()) return s;
  sqlite3_busy_timeout(db.get(), 5000);
  absl::StatusOr<int> version = ReadSchemaVersion(db.get(), path);
  if (!version.ok()) return version.status();
  if (absl::Status s = CheckSameFile(path, *checked); !s.ok()) return s;
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
  absl::Status existing = CheckExisting(path, options.group_may_write);
  const bool create = absl::IsNotFound(existing);
  if (!existing.ok() && !create) return existing;
  FileIdentity identity;
  if (create) {
    // Created here so that the mode and the refusal to follow a planted link
    // are ours, not SQLite's; SQLite's -wal and -shm files copy this mode.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          options.group_readable ? 0640 : 0600);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": cannot create the store: ", std::strerror(errno)));
    }
    struct stat st;
    if (::fstat(fd, &st) == 0) identity = FileIdentity{st.st_dev, st.st_ino};
    ::close(fd);
  } else {
    // Checked by CheckExisting just now; compared again below once SQLite
    // holds it open.
    absl::StatusOr<FileIdentity> checked = CheckStoreFile(path, StoreRules(options.group_may_write));
    if (!checked.ok()) return checked.status();
    identity = *checked;
  }
  RegisterBlockSqlFunctionsEverywhere();
  auto writer = std::unique_ptr<SqliteWriter>(new SqliteWriter());
  writer->path_ = path;
  writer->st_ = std::make_unique<Statements>();
  absl::Status s;
  if (sqlite3_open_v2(path.c_str(), &writer->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    s = writer->Error("cannot open store");
  }
  // Before any statement: the file's own triggers and views never run here.
  if (s.ok()) s = internal::DistrustSchema(writer->db_, path);
  // First: a reader that opens the store meanwhile must make us wait, not fail.
  if (s.ok()) sqlite3_busy_timeout(writer->db_, 5000);
  if (s.ok()) s = writer->Exec("PRAGMA journal_mode=WAL");
  // SQLite has read the file by now: still the one that passed the checks.
  if (s.ok()) s = CheckSameFile(path, identity);
  if (s.ok()) s = writer->Exec("PRAGMA synchronous=NORMAL");
  if (s.ok()) s = writer->Exec("PRAGMA cache_size=-65536");
  // The WAL is cut back to 4 MiB whenever it starts again from the top
  // after a checkpoint (every 1000 pages, SQLite's default), instead of
  // keeping its largest size: its share of a size limit stays small
  // (sqlite_size.h).
  if (s.ok()) s = writer->Exec("PRAGMA journal_size_limit=4194304");
  // Debian builds SQLite with SECURE_DELETE on: every page retention frees
  // would be overwritten with zeros through the WAL, as many bytes again as
  // the detail retired (a 50 MB limit saw a 20 MB WAL after each step).
  // FAST zeroes deleted content only where that costs no extra write (in
  // b-tree pages, not whole freed pages); the freed pages are reused, and so
  // overwritten, by the next writes, and the file is the owner's alone.
  if (s.ok()) s = writer->Exec("PRAGMA secure_delete=FAST");
  if (s.ok() && create) {
    s = writer->Exec("BEGIN");
    if (s.ok()) s = writer->Exec(SqliteSchemaSql());
    if (s.ok()) s = writer->Exec("COMMIT");
  }
  if (s.ok() && !create) {
    absl::StatusOr<int> version = ReadSchemaVersion(writer->db_, path);
    if (!version.ok()) {
      s = version.status();
    } else if (*version == 3) {
      s = UpgradeSchema3InPlace(writer->db_, path);
      if (s.ok() && options.on_migration) {
        options.on_migration(absl::StrCat(path, ": store schema 3 moved to schema ",
                                          kSqliteSchemaVersion,
                                          " in place (its two views replaced; no row rewritten)"));
      }
    } else if (*version < kSqliteSchemaVersion) {
      absl::StatusOr<std::string> backup = BackupBeforeMigration(writer->db_, path, *version);
      if (!backup.ok()) {
        s = backup.status();
      } else {
        s = MigrateToCurrent(writer.get(), *version, path);
        if (s.ok() && options.on_migration) {
          options.on_migration(absl::StrCat(path, ": store schema ", *version,
                                            " migrated in place to schema ",
                                            kSqliteSchemaVersion, "; the old store is kept at ",
                                            *backup));
        }
      }
    }
  }
  if (s.ok()) s = EnsureBlockViews(writer->db_, path);
  if (s.ok()) s = internal::EnsureRunNotesTable(writer->db_, path);
  if (s.ok()) s = internal::EnsureBudgetBreachesTable(writer->db_, path);
  if (s.ok()) s = internal::EnsureStageClocksTable(writer->db_, path);
  if (s.ok() && !writer->st_->insert_block.prepared()) s = writer->Prepare();
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
  st_.reset();  // the statements are finalized before the connection closes
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status SqliteWriter::Error(absl::string_view what) const {
  return absl::InternalError(
      absl::StrCat(path_, ": ", what, ": ", db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

absl::Status SqliteWriter::Check(const absl::Status& status, absl::string_view what) const {
  return status.ok() ? status : Error(what);
}

absl::StatusOr<Statement> SqliteWriter::NewStatement(std::string_view sql,
                                                     absl::string_view what) {
  absl::StatusOr<Statement> s =
      Statement::Prepare(db_, sql, std::string_view(what.data(), what.size()));
  if (!s.ok()) return Error(what);
  return s;
}

absl::Status SqliteWriter::Exec(const char* sql) { return internal::ExecSql(db_, sql, path_); }

absl::Status SqliteWriter::Prepare() {
  if (st_->insert_block.prepared()) return absl::OkStatus();
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
    Statement* stmt;
    std::string sql;
  } statements[] = {
      {&st_->insert_block,
       "INSERT INTO order_blocks(run_id, start_utc_ns, orders, detail) VALUES(?,?,?,?)"},
      {&st_->insert_order_id,
       "INSERT OR IGNORE INTO order_ids(run_id, id_page, block_key) VALUES(?,?,?)"},
      {&st_->blocks_of_page,
       "SELECT b.block_key, b.orders FROM order_ids i JOIN order_blocks b "
       "ON b.block_key = i.block_key WHERE i.run_id = ? AND i.id_page = ?"},
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
    absl::StatusOr<Statement> prepared = Statement::PreparePersistent(db_, sql, "");
    if (!prepared.ok()) return Error(absl::StrCat("cannot prepare '", sql.substr(0, 120), "'"));
    *stmt = *std::move(prepared);
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::AddClockErrorColumn() {
  absl::StatusOr<Statement> s = NewStatement(
      "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'clock_error_ns'",
      "reading runs' columns");
  if (!s.ok()) return s.status();
  const absl::StatusOr<bool> row = s->Step();
  const bool has = row.ok() && *row && s->Int(0) > 0;
  if (has) return absl::OkStatus();
  return Exec("ALTER TABLE runs ADD COLUMN clock_error_ns REAL");
}

absl::StatusOr<int64_t> SqliteWriter::BeginRun(const RunMeta& run) {
  absl::StatusOr<Statement> s = NewStatement(
      "INSERT INTO runs(session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
      "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, settings, "
      "pipeline, pipeline_learned, interval_ns, detail) "
      "VALUES(?,?,?,NULL,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      "prepare runs");
  if (!s.ok()) return s.status();
  s->BindText(1, run.session).BindText(2, run.host).Bind(3, run.started_utc_ns);
  s->BindDouble(4, run.tsc_hz).BindText(5, run.calibration_source);
  BindFiniteOrNull(*s, 6, run.spread_ppm);
  BindFiniteOrNull(*s, 7, run.kernel_tsc_hz);
  BindFiniteOrNull(*s, 8, run.tsc_step_ns);
  s->Bind(9, AsInt(run.anchor_tsc)).Bind(10, run.anchor_utc_ns);
  s->BindText(11, run.environment_json).BindText(12, run.settings_json);
  s->BindText(13, run.pipeline).Bind(14, run.pipeline_learned ? 1 : 0);
  s->Bind(15, run.interval_ns).BindTextNoCopy(16, DetailPolicyName(run.detail));
  if (absl::Status st = Check(s->Run(), "insert into runs"); !st.ok()) return st;
  interval_ns_ = run.interval_ns;
  const int64_t run_id = sqlite3_last_insert_rowid(db_);
  // A new run holds no orders: every id page it gets is in memory.
  id_pages_.clear();
  id_pages_run_ = run_id;
  id_pages_complete_ = true;
  if (run.clock_error_ns.has_value()) {
    // runs.clock_error_ns (multi-host); a schema-2 store made before the
    // column gets it here, once (ALTER TABLE ADD COLUMN is additive).
    if (absl::Status st = AddClockErrorColumn(); !st.ok()) return st;
    absl::StatusOr<Statement> u = NewStatement(
        "UPDATE runs SET clock_error_ns = ? WHERE run_id = ?", "prepare runs.clock_error_ns");
    if (!u.ok()) return u.status();
    u->BindDouble(1, *run.clock_error_ns).Bind(2, run_id);
    if (absl::Status st = Check(u->Run(), "update runs.clock_error_ns"); !st.ok()) return st;
  }
  return run_id;
}

absl::StatusOr<RunState> SqliteWriter::LookupRun(int64_t run_id) {
  RunState state;
  {
    absl::StatusOr<Statement> s = NewStatement(
        "SELECT session, ended_utc_ns, interval_ns FROM runs WHERE run_id = ?",
        "prepare run lookup");
    if (!s.ok()) return s.status();
    s->Bind(1, run_id);
    absl::StatusOr<bool> row = s->Step();
    if (!row.ok()) return Error("run lookup");
    if (*row) {
      state.exists = true;
      state.session = s->Text(0);
      state.ended = !s->IsNull(1);
      interval_ns_ = std::max<int64_t>(1, s->Int(2));
    }
  }
  if (!state.exists) return state;
  absl::StatusOr<Statement> s = NewStatement("SELECT name, value FROM counters WHERE run_id = ?",
                                             "prepare counters lookup");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  absl::Status read = s->ForEachRow([&] {
    if (!s->IsNull(0)) state.counters[s->Text(0)] = s->Int(1);
  });
  if (!read.ok()) return Error("counters lookup");
  return state;
}

absl::StatusOr<std::vector<std::pair<uint64_t, uint32_t>>> SqliteWriter::LastStoredOrders(
    int64_t run_id, uint64_t count) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  if (count == 0) return out;
  absl::StatusOr<Statement> s = NewStatement(
      "SELECT block_key, orders FROM order_blocks WHERE run_id = ? ORDER BY block_key DESC",
      "prepare last orders");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  // Newest block first, and in a block the last order first (order keys).
  for (;;) {
    const absl::StatusOr<bool> row = s->Step();
    if (!row.ok()) return Error("last orders");
    if (!*row) break;
    absl::StatusOr<std::vector<BlockId>> ids = ParseBlockIds(s->Int(0), s->Blob(1));
    if (!ids.ok()) return absl::DataLossError(absl::StrCat(path_, ": ", ids.status().message()));
    for (auto it = ids->rbegin(); it != ids->rend() && out.size() < count; ++it) {
      out.emplace_back(static_cast<uint64_t>(it->order_id), static_cast<uint32_t>(it->instance));
    }
    if (out.size() >= count) break;
  }
  return out;
}

absl::StatusOr<int64_t> SqliteWriter::ResumeRun(int64_t run_id) {
  if (absl::StatusOr<RunState> state = LookupRun(run_id); !state.ok()) return state.status();
  absl::StatusOr<Statement> s = NewStatement(
      "INSERT INTO counters(run_id, name, value) VALUES(?, ?, 1) "
      "ON CONFLICT(run_id, name) DO UPDATE SET value = value + 1 RETURNING value",
      "prepare restarts");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id).BindTextNoCopy(2, CounterName(Counter::kRestarts));
  const absl::StatusOr<bool> row = s->Step();
  if (!row.ok() || !*row) return Error("count the restart");
  const int64_t restarts = s->Int(0);
  if (absl::Status st = LoadDictionaries(run_id); !st.ok()) return st;
  open_intervals_run_ = -1;  // what the store holds is read back, once per interval
  ForgetIdPages();           // the ids stored before the restart are read back, once per page
  return restarts;
}

absl::Status SqliteWriter::LoadDictionaries(int64_t run_id) {
  names_.clear();
  stages_.clear();
  dictionaries_run_ = run_id;
  for (const auto& table :
       {std::pair("SELECT name, name_id FROM names WHERE run_id = ?", &names_),
        std::pair("SELECT name, stage_id FROM stages WHERE run_id = ?", &stages_)}) {
    // Not a structured binding: clang 14 cannot capture one in the lambda.
    auto* const map = table.second;
    absl::StatusOr<Statement> s = NewStatement(table.first, "prepare names");
    if (!s.ok()) return s.status();
    s->Bind(1, run_id);
    absl::Status read =
        s->ForEachRow([&] { (*map)[s->Text(0)] = static_cast<uint32_t>(s->Int(1)); });
    if (!read.ok()) return Error("read names");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> SqliteWriter::NameId(int64_t run_id, const std::string& name) {
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  Statement& s = st_->insert_name;
  s.Bind(1, run_id).Bind(2, id).BindText(3, name);
  if (absl::Status st = Check(s.Run(), "insert into names"); !st.ok()) return st;
  names_.emplace(name, id);
  return id;
}

absl::StatusOr<uint32_t> SqliteWriter::StageId(int64_t run_id, const std::string& name,
                                               StageKind kind) {
  if (auto it = stages_.find(name); it != stages_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stages_.size());
  Statement& s = st_->insert_stage;
  s.Bind(1, run_id).Bind(2, id).BindText(3, name).BindTextNoCopy(4, StageKindName(kind));
  if (absl::Status st = Check(s.Run(), "insert into stages"); !st.ok()) return st;
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
  if (open_intervals_run_ != run_id) {
    open_intervals_.clear();
    open_intervals_run_ = run_id;
    newest_interval_start_ = std::numeric_limits<int64_t>::min();
  }
  absl::Status st = Exec(in_migration_ ? "SAVEPOINT write_batch" : "BEGIN");
  if (!st.ok()) return st;
  st = WriteIntervals(run_id, intervals);
  for (const IntervalOrders& io : interval_orders) {
    if (!st.ok() || io.orders == 0) continue;
    Statement& s = st_->add_interval_orders;
    s.Bind(1, run_id).Bind(2, io.start_utc_ns).Bind(3, AsInt(io.orders));
    st = Check(s.Run(), "count interval orders");
  }
  if (st.ok()) st = WriteOrders(run_id, orders, already_stored);
  if (st.ok() && snapshot != nullptr) st = WriteSnapshot(run_id, *snapshot);
  if (st.ok()) st = Exec(in_migration_ ? "RELEASE write_batch" : "COMMIT");
  if (st.ok()) {
    ForgetOldIntervals();
    return st;
  }
  Exec(in_migration_ ? "ROLLBACK TO write_batch" : "ROLLBACK").IgnoreError();
  // The dictionaries may hold ids the rollback took back, the open
  // intervals sums it did not keep.
  dictionaries_run_ = -1;
  open_intervals_run_ = -1;
  ForgetIdPages();
  return st;
}

absl::Status SqliteWriter::MergeStoredInterval(int64_t run_id, uint32_t stage_id,
                                               const IntervalDelta& d, uint64_t* samples_all,
                                               std::array<uint64_t, kFlagNames.size()>* flags,
                                               Histogram* merged) {
  Statement& r = st_->read_interval;
  r.Bind(1, run_id).Bind(2, stage_id).Bind(3, d.start_utc_ns);
  const absl::StatusOr<bool> row = r.Step();
  absl::Status status;
  if (row.ok() && *row) {
    *samples_all += static_cast<uint64_t>(r.Int(0));
    for (size_t i = 0; i < flags->size(); ++i) {
      (*flags)[i] += static_cast<uint64_t>(r.Int(static_cast<int>(1 + i)));
    }
    absl::StatusOr<Histogram> old = Histogram::Decode(r.Blob(static_cast<int>(1 + flags->size())));
    if (old.ok()) {
      merged->Merge(*old);
    } else {
      status = absl::DataLossError(absl::StrCat(path_, ": interval of stage ", d.stage, ": ",
                                                old.status().message()));
    }
  } else if (!row.ok()) {
    status = Error("read interval");
  }
  r.Rewind();
  return status;
}

absl::StatusOr<SqliteWriter::OpenInterval*> SqliteWriter::FindOpenInterval(int64_t run_id,
                                                                           uint32_t stage_id,
                                                                           const IntervalDelta& d) {
  std::unique_ptr<OpenInterval>& open = open_intervals_[{stage_id, d.start_utc_ns}];
  if (open == nullptr) {
    // Not written lately (a new interval, or one forgotten, or a resumed
    // run): what the store holds, once.
    auto loaded = std::make_unique<OpenInterval>();
    if (absl::Status status = MergeStoredInterval(run_id, stage_id, d, &loaded->samples_all,
                                                  &loaded->flags, &loaded->histogram);
        !status.ok()) {
      open_intervals_.erase({stage_id, d.start_utc_ns});
      return status;
    }
    open = std::move(loaded);
  }
  newest_interval_start_ = std::max(newest_interval_start_, d.start_utc_ns);
  return open.get();
}

void SqliteWriter::ForgetOldIntervals() {
  const int64_t span_ns = kOpenIntervals * std::max<int64_t>(1, interval_ns_);
  if (newest_interval_start_ < std::numeric_limits<int64_t>::min() + span_ns) return;
  const int64_t oldest_kept = newest_interval_start_ - span_ns;
  absl::erase_if(open_intervals_,
                 [&](const auto& entry) { return entry.first.second < oldest_kept; });
}

absl::Status SqliteWriter::WriteIntervals(int64_t run_id,
                                          const std::vector<IntervalDelta>& intervals) {
  for (const IntervalDelta& d : intervals) {
    absl::StatusOr<uint32_t> stage = StageId(run_id, d.stage, d.kind);
    if (!stage.ok()) return stage.status();
    // Merged in memory with what earlier deltas of this (stage, interval)
    // stored; the sum replaces the row.
    absl::StatusOr<OpenInterval*> open = FindOpenInterval(run_id, *stage, d);
    if (!open.ok()) return open.status();
    OpenInterval& o = **open;
    o.samples_all += d.samples_all;
    for (size_t f = 0; f < o.flags.size(); ++f) o.flags[f] += d.flag_counts[f];
    o.histogram.Merge(d.histogram);
    const Histogram& merged = o.histogram;
    Statement& w = st_->write_interval;
    int i = 1;
    for (int64_t v : {run_id, static_cast<int64_t>(*stage), d.start_utc_ns, AsInt(o.samples_all),
                      AsInt(merged.count())}) {
      w.Bind(i++, v);
    }
    for (uint64_t f : o.flags) w.Bind(i++, AsInt(f));
    if (merged.count() > 0) {
      w.BindDouble(i++, merged.min());
      w.BindDouble(i++, merged.max());
      w.BindDouble(i++, merged.sum());
    } else {
      for (int k = 0; k < 3; ++k) w.BindNull(i++);
    }
    w.BindBlob(i++, merged.Encode());
    if (absl::Status st = Check(w.Run(), "write interval"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

const uint32_t* SqliteWriter::IdMemo::Find(size_t i, const std::string& name) const {
  if (i >= at.size()) return nullptr;
  for (const Way& w : at[i].ways) {
    if (w.name != nullptr && *w.name == name) return &w.id;
  }
  return nullptr;
}

void SqliteWriter::IdMemo::Remember(size_t i, const std::string& name, uint32_t id) {
  if (i >= at.size()) at.resize(i + 1);
  Position& p = at[i];
  p.ways[p.next] = Way{&name, id};
  p.next = (p.next + 1) % kWays;
}

absl::StatusOr<uint32_t> SqliteWriter::MemoNameId(int64_t run_id, IdMemo* memo, size_t i,
                                                  const std::string& name) {
  if (const uint32_t* id = memo->Find(i, name)) return *id;
  absl::StatusOr<uint32_t> id = NameId(run_id, name);
  if (id.ok()) memo->Remember(i, name, *id);
  return id;
}

absl::StatusOr<uint32_t> SqliteWriter::MemoStageId(int64_t run_id, IdMemo* memo, size_t i,
                                                   const std::string& name) {
  if (const uint32_t* id = memo->Find(i, name)) return *id;
  absl::StatusOr<uint32_t> id = StageId(run_id, name, StageKindOfName(name));
  if (id.ok()) memo->Remember(i, name, *id);
  return id;
}

absl::Status SqliteWriter::SampleCells(int64_t run_id, const OrderDetail& o, IdMemo* memo,
                                       std::vector<SampleCell>* cells) {
  // orders.samples in seq order (docs/store.md).
  cells->resize(o.samples.size());
  for (size_t n = 0; n < o.samples.size(); ++n) {
    const SampleDetail& sd = o.samples[n];
    absl::StatusOr<uint32_t> stage = MemoStageId(run_id, memo, n, sd.stage);
    if (!stage.ok()) return stage.status();
    (*cells)[n] = {*stage, RoundNs(sd.latency_ns), sd.flags};
  }
  return absl::OkStatus();
}

void SqliteWriter::ForgetIdPages() {
  id_pages_.clear();
  id_pages_run_ = -1;
  id_pages_complete_ = false;
}

absl::StatusOr<std::vector<BlockId>> SqliteWriter::StoredIdsOfPage(int64_t run_id, int64_t page) {
  Statement& q = st_->blocks_of_page;
  q.Bind(1, run_id).Bind(2, page);
  std::vector<BlockId> ids;
  absl::Status parsed;
  const absl::Status read = q.ForEachRow([&] {
    if (!parsed.ok()) return;
    absl::StatusOr<std::vector<BlockId>> block = ParseBlockIds(q.Int(0), q.Blob(1));
    if (!block.ok()) {
      parsed = absl::DataLossError(absl::StrCat(path_, ": ", block.status().message()));
      return;
    }
    for (const BlockId& id : *block) {
      if (IdPage(id.order_id) == page) ids.push_back(id);
    }
  });
  q.Rewind();
  if (!read.ok()) return Error("read an id page");
  if (!parsed.ok()) return parsed;
  return ids;
}

absl::StatusOr<SqliteWriter::IdPageState*> SqliteWriter::FindIdPage(int64_t run_id, int64_t page) {
  std::unique_ptr<IdPageState>& slot = id_pages_[page];
  if (slot != nullptr) return slot.get();
  auto state = std::make_unique<IdPageState>();
  if (!id_pages_complete_) {
    // Held before this writer began (a resumed run) or forgotten since.
    absl::StatusOr<std::vector<BlockId>> stored = StoredIdsOfPage(run_id, page);
    if (!stored.ok()) {
      id_pages_.erase(page);
      return stored.status();
    }
    for (const BlockId& id : *stored) {
      const uint64_t bit = static_cast<uint64_t>(id.order_id) & ((1u << kIdPageBits) - 1);
      state->bits[bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
  slot = std::move(state);
  return slot.get();
}

absl::StatusOr<std::optional<int64_t>> SqliteWriter::Admit(int64_t run_id, const OrderDetail& o) {
  const int64_t id = AsInt(o.order_id);
  const int64_t page = IdPage(id);
  absl::StatusOr<IdPageState*> found = FindIdPage(run_id, page);
  if (!found.ok()) return found.status();
  IdPageState& p = **found;
  p.used_batch = batch_;
  const uint64_t bit = o.order_id & ((1u << kIdPageBits) - 1);
  uint64_t& word = p.bits[bit / 64];
  const uint64_t mask = uint64_t{1} << (bit % 64);
  const BlockId admitted{id, o.instance, AsInt(o.first_tsc)};
  if ((word & mask) == 0) {
    word |= mask;
    if (p.known.has_value()) p.known->push_back(admitted);
    return std::optional<int64_t>(o.instance);
  }
  // The id is held already. Its own instance free: another instance of the
  // id. Taken: the same order re-emitted after a restart (an order of this
  // id with the same first TSC, under whichever instance: kept once), or a
  // reuse of the id the collector no longer remembered (no such first TSC):
  // the next free instance.
  if (!p.known.has_value()) {
    // The page's pending orders go to the store first, so that the blocks
    // hold all of them.
    if (absl::Status st = FlushBlocks(run_id); !st.ok()) return st;
    absl::StatusOr<std::vector<BlockId>> stored = StoredIdsOfPage(run_id, page);
    if (!stored.ok()) return stored.status();
    p.known = *std::move(stored);
  }
  bool taken = false, same = false;
  int64_t last_instance = -1;
  for (const BlockId& k : *p.known) {
    if (k.order_id != id) continue;
    taken = taken || k.instance == admitted.instance;
    same = same || k.first_tsc == admitted.first_tsc;
    last_instance = std::max(last_instance, k.instance);
  }
  if (taken && same) return std::optional<int64_t>();
  BlockId stored = admitted;
  if (taken) stored.instance = last_instance + 1;
  p.known->push_back(stored);
  return std::optional<int64_t>(stored.instance);
}

absl::Status SqliteWriter::FlushBlock(int64_t run_id, PendingBlock* b) {
  if (b->count == 0) return absl::OkStatus();
  b->encoded.clear();
  b->encoder.Finish(&b->encoded);
  Statement& s = st_->insert_block;
  // A compact block holds everything in `orders`; `detail` stays empty.
  s.Bind(1, run_id).Bind(2, b->start_utc_ns).BindBlobNoCopy(3, b->encoded);
  s.BindBlobNoCopy(4, std::string_view("", 0));  // a BLOB of 0 bytes, not NULL
  if (absl::Status st = Check(s.Run(), "insert order block"); !st.ok()) return st;
  const int64_t block_key = sqlite3_last_insert_rowid(db_);
  Kept& k = kept_[b->start_utc_ns];
  k.count += static_cast<uint64_t>(b->count);
  k.first_key = std::min(k.first_key, block_key * kOrdersPerBlock);
  k.last_key = std::max(k.last_key, block_key * kOrdersPerBlock + b->count - 1);
  std::sort(b->pages.begin(), b->pages.end());
  b->pages.erase(std::unique(b->pages.begin(), b->pages.end()), b->pages.end());
  for (const int64_t page : b->pages) {
    Statement& i = st_->insert_order_id;
    i.Bind(1, run_id).Bind(2, page).Bind(3, block_key);
    if (absl::Status st = Check(i.Run(), "insert order id page"); !st.ok()) return st;
  }
  b->count = 0;
  b->encoder.Reset(b->start_utc_ns);
  b->pages.clear();
  return absl::OkStatus();
}

absl::Status SqliteWriter::FlushBlocks(int64_t run_id) {
  for (auto& [start, block] : pending_) {
    if (absl::Status st = FlushBlock(run_id, block.get()); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::WriteOrders(int64_t run_id, const std::vector<OrderDetail>& orders,
                                       uint64_t* already_stored) {
  if (id_pages_run_ != run_id) {
    id_pages_.clear();
    id_pages_run_ = run_id;
    id_pages_complete_ = false;
  }
  ++batch_;
  kept_.clear();
  pending_.clear();
  std::vector<SampleCell> cells;
  CompactOrder compact;
  std::vector<uint32_t> name_ids;
  IdMemo name_memo, stage_memo;  // this batch's: they point into `orders`
  for (const OrderDetail& o : orders) {
    name_ids.resize(o.stamps.size());
    for (size_t i = 0; i < o.stamps.size(); ++i) {
      absl::StatusOr<uint32_t> id = MemoNameId(run_id, &name_memo, i, o.stamps[i].tag);
      if (!id.ok()) return id.status();
      name_ids[i] = *id;
    }
    if (absl::Status s = SampleCells(run_id, o, &stage_memo, &cells); !s.ok()) return s;
    absl::StatusOr<std::optional<int64_t>> instance = Admit(run_id, o);
    if (!instance.ok()) return instance.status();
    if (!instance->has_value()) {
      ++*already_stored;
      continue;
    }
    const int64_t interval = o.first_utc_ns - (((o.first_utc_ns % interval_ns_) + interval_ns_) %
                                               interval_ns_);
    std::unique_ptr<PendingBlock>& slot = pending_[interval];
    if (slot == nullptr) {
      slot = std::make_unique<PendingBlock>(interval);
    }
    PendingBlock& b = *slot;
    CompactOrder& c = compact;
    c.order_id = AsInt(o.order_id);
    c.instance = **instance;
    c.parent_order_id.reset();  // `compact` is reused from order to order
    if (o.parent_order_id.has_value()) c.parent_order_id = AsInt(*o.parent_order_id);
    c.first_utc_ns = o.first_utc_ns;
    c.first_tsc = AsInt(o.first_tsc);
    c.total_ns.reset();
    if (o.total_ns.has_value()) c.total_ns = RoundNs(*o.total_ns);
    c.complete = o.complete;
    c.missing = o.missing;
    c.cells = cells;
    c.detail = MakePackedDetail(o, name_ids);
    b.encoder.Add(c);
    b.pages.push_back(IdPage(AsInt(o.order_id)));
    // Ended by its count (the order keys) or by its size (a page a row).
    if (++b.count == kOrdersPerBlock || b.encoder.bytes() >= kCompactBlockBytes) {
      if (absl::Status st = FlushBlock(run_id, &b); !st.ok()) return st;
    }
  }
  if (absl::Status st = FlushBlocks(run_id); !st.ok()) return st;
  pending_.clear();
  for (const auto& [start, k] : kept_) {
    Statement& s = st_->add_interval_kept;
    s.Bind(1, run_id).Bind(2, start).Bind(3, AsInt(k.count));
    s.Bind(4, k.first_key).Bind(5, k.last_key);
    if (absl::Status st = Check(s.Run(), "count kept detail"); !st.ok()) return st;
  }
  if (id_pages_.size() > kMaxIdPages) {
    // Pages not used in the last few batches go (a sequence of ids moves
    // on and rarely comes back); the store answers for them when it does.
    absl::erase_if(id_pages_, [&](const auto& e) { return e.second->used_batch + 4 < batch_; });
    if (id_pages_.size() > kMaxIdPages / 2) id_pages_.clear();
    id_pages_complete_ = false;
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::RunAndClear(Statement& s, absl::string_view what) {
  const absl::Status status = s.Run();
  s.Reset();  // a snapshot row may leave a column unbound: NULL, not the last row's value
  return Check(status, what);
}

absl::Status SqliteWriter::WriteSnapshot(int64_t run_id, const Snapshot& snapshot) {
  if (absl::Status st = WriteProcesses(run_id, snapshot); !st.ok()) return st;
  for (const auto& [name, value] : snapshot.counters) {
    // `restarts` is counted by ResumeRun in the store itself.
    if (name == CounterName(Counter::kRestarts)) continue;
    Statement& s = st_->upsert_counter;
    s.Bind(1, run_id).BindText(2, name).Bind(3, value);
    if (absl::Status st = RunAndClear(s, "upsert counter"); !st.ok()) return st;
  }
  if (absl::Status st = WriteStageStats(run_id, snapshot); !st.ok()) return st;
  if (absl::Status st = internal::WriteRunNotes(db_, run_id, snapshot.notes, path_); !st.ok()) {
    return st;
  }
  if (absl::Status st =
          internal::WriteBudgetBreaches(db_, run_id, snapshot.budget_breaches, path_);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = internal::WriteStageClocks(db_, run_id, snapshot.stage_clocks, path_);
      !st.ok()) {
    return st;
  }
  for (const CoreRow& c : snapshot.cores) {
    Statement& s = st_->upsert_core;
    s.Bind(1, run_id).Bind(2, c.cpu).Bind(3, c.measured_utc_ns);
    s.BindDouble(4, c.offset_ns).BindDouble(5, c.bound_ns).Bind(6, c.consistent ? 1 : 0);
    if (absl::Status st = RunAndClear(s, "upsert core"); !st.ok()) return st;
  }
  for (const AnchorRow& a : snapshot.anchors) {
    Statement& s = st_->insert_anchor;
    s.Bind(1, run_id).Bind(2, AsInt(a.tsc)).Bind(3, a.utc_ns);
    if (absl::Status st = RunAndClear(s, "insert anchor"); !st.ok()) return st;
  }
  if (snapshot.utc_drift_ppm.has_value()) {
    Statement& s = st_->update_drift;
    s.BindDouble(1, *snapshot.utc_drift_ppm).Bind(2, run_id);
    if (absl::Status st = RunAndClear(s, "update drift"); !st.ok()) return st;
  }
  if (snapshot.pipeline.has_value()) {
    Statement& s = st_->update_pipeline;
    s.BindText(1, snapshot.pipeline->first).Bind(2, snapshot.pipeline->second ? 1 : 0);
    s.Bind(3, run_id);
    if (absl::Status st = RunAndClear(s, "update pipeline"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::WriteProcesses(int64_t run_id, const Snapshot& snapshot) {
  for (const ProcessRow& p : snapshot.processes) {
    Statement& s = st_->upsert_process;
    s.Bind(1, run_id).Bind(2, p.process_id).Bind(3, p.pid).Bind(4, AsInt(p.start_ticks));
    s.BindText(5, p.name).BindText(6, p.segment).Bind(7, p.first_seen_utc_ns);
    if (p.exited_utc_ns.has_value()) s.Bind(8, *p.exited_utc_ns);
    s.Bind(9, AsInt(p.tags_rejected)).Bind(10, AsInt(p.threads_without_slot));
    s.Bind(11, AsInt(p.slotless_dropped));
    if (absl::Status st = RunAndClear(s, "upsert process"); !st.ok()) return st;
  }
  for (const ThreadRow& t : snapshot.threads) {
    Statement& s = st_->upsert_thread;
    s.Bind(1, run_id).Bind(2, t.process_id).Bind(3, t.slot).Bind(4, AsInt(t.generation));
    s.Bind(5, t.tid).BindText(6, t.name).Bind(7, AsInt(t.drained)).Bind(8, AsInt(t.dropped));
    if (absl::Status st = RunAndClear(s, "upsert thread"); !st.ok()) return st;
  }
  for (const TagRow& t : snapshot.tags) {
    Statement& s = st_->upsert_tag;
    s.Bind(1, run_id).Bind(2, t.process_id).Bind(3, t.tag_id).BindText(4, t.name);
    if (absl::Status st = RunAndClear(s, "upsert tag"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status SqliteWriter::WriteStageStats(int64_t run_id, const Snapshot& snapshot) {
  for (const StageStatsRow& r : snapshot.stages) {
    Statement& s = st_->upsert_stage_stats;
    int i = 1;
    s.Bind(i++, run_id);
    s.BindText(i++, r.stage);
    s.Bind(i++, r.position);
    s.Bind(i++, AsInt(r.count));
    for (const auto* v : {&r.min_ns, &r.max_ns, &r.mean_ns, &r.p50_ns, &r.p90_ns, &r.p99_ns,
                          &r.p999_ns}) {
      BindFiniteOrNull(s, i++, *v);
    }
    s.Bind(i++, r.include_flagged ? 1 : 0);
    s.BindOptional(i++, r.samples_all);
    BindFiniteOrNull(s, i++, r.uncertainty_ns);
    for (uint64_t f : r.flag_counts) s.Bind(i++, AsInt(f));
    if (absl::Status st = RunAndClear(s, "upsert stage_stats"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteWriter::DeleteDetail(int64_t run_id, const char* where, int64_t bound,
                                               int limit, uint64_t* deleted,
                                               int64_t* newest_start) {
  const std::string select = absl::StrCat(
      "SELECT start_utc_ns, first_order_key, last_order_key FROM interval_detail "
      "WHERE run_id = ?1 AND detail_deleted = 0 AND ",
      where, " ORDER BY start_utc_ns LIMIT ", limit);
  struct Range {
    int64_t start, first, last;
    bool has_keys;
  };
  std::vector<Range> ranges;
  {
    absl::StatusOr<Statement> s = NewStatement(select, "prepare retention");
    if (!s.ok()) return s.status();
    s->Bind(1, run_id).Bind(2, bound);
    absl::StatusOr<std::vector<Range>> read = s->Collect([](const Statement& q) {
      return Range{q.Int(0), q.Int(1), q.Int(2), !q.IsNull(1)};
    });
    if (!read.ok()) return Error("select retention");
    ranges = *std::move(read);
  }
  if (ranges.empty()) return 0;
  // The blocks of an interval hold its orders alone; its key range may span
  // blocks of neighbouring intervals (written in the same batches).
  absl::StatusOr<Statement> blocks = NewStatement(
      "SELECT block_key, orders FROM order_blocks WHERE block_key BETWEEN ?1 AND ?2 AND "
      "+run_id = ?3 AND start_utc_ns = ?4",
      "prepare retention blocks");
  absl::StatusOr<Statement> drop_block =
      NewStatement("DELETE FROM order_blocks WHERE block_key = ?", "prepare delete block");
  absl::StatusOr<Statement> drop_id =
      NewStatement("DELETE FROM order_ids WHERE run_id = ? AND id_page = ? AND block_key = ?",
                   "prepare delete id page");
  absl::StatusOr<Statement> mark = NewStatement(
      "UPDATE interval_detail SET detail_deleted = 1 WHERE run_id = ? AND start_utc_ns = ?",
      "prepare mark");
  for (const auto* s : {&blocks, &drop_block, &drop_id, &mark}) {
    if (!s->ok()) return s->status();
  }
  if (absl::Status st = Exec("BEGIN"); !st.ok()) return st;
  ForgetIdPages();  // the deleted orders' ids are free again
  absl::Status st;
  for (const Range& r : ranges) {
    if (r.has_keys) {
      struct Doomed {
        int64_t block_key;
        std::vector<int64_t> pages;
      };
      std::vector<Doomed> doomed;
      blocks->Reset();
      blocks->Bind(1, r.first / kOrdersPerBlock).Bind(2, r.last / kOrdersPerBlock);
      blocks->Bind(3, run_id).Bind(4, r.start);
      st = blocks->ForEachRow([&]() -> absl::Status {
        absl::StatusOr<std::vector<BlockId>> ids = ParseBlockIds(blocks->Int(0), blocks->Blob(1));
        if (!ids.ok()) {
          return absl::DataLossError(absl::StrCat(path_, ": ", ids.status().message()));
        }
        Doomed d{blocks->Int(0), {}};
        for (const BlockId& id : *ids) d.pages.push_back(IdPage(id.order_id));
        std::sort(d.pages.begin(), d.pages.end());
        d.pages.erase(std::unique(d.pages.begin(), d.pages.end()), d.pages.end());
        *deleted += ids->size();
        doomed.push_back(std::move(d));
        return absl::OkStatus();
      });
      if (!st.ok()) break;
      for (const Doomed& d : doomed) {
        for (const int64_t page : d.pages) {
          drop_id->Reset();
          drop_id->Bind(1, run_id).Bind(2, page).Bind(3, d.block_key);
          if (st = Check(drop_id->Run(), "delete id page"); !st.ok()) break;
        }
        if (!st.ok()) break;
        drop_block->Reset();
        drop_block->Bind(1, d.block_key);
        if (st = Check(drop_block->Run(), "delete detail"); !st.ok()) break;
      }
      if (!st.ok()) break;
    }
    mark->Reset();
    mark->Bind(1, run_id).Bind(2, r.start);
    if (st = Check(mark->Run(), "mark deleted detail"); !st.ok()) break;
  }
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  if (absl::Status c = Exec("COMMIT"); !c.ok()) return c;
  if (newest_start != nullptr) *newest_start = ranges.back().start;
  return static_cast<int>(ranges.size());
}

uint64_t SqliteWriter::LiveBytes() {
  // The file holds freed pages until they are reused: count live pages.
  int64_t pages = 0, free_pages = 0, page_size = 4096;
  for (auto [sql, out] : {std::pair("PRAGMA page_count", &pages),
                          std::pair("PRAGMA freelist_count", &free_pages),
                          std::pair("PRAGMA page_size", &page_size)}) {
    absl::StatusOr<Statement> s = Statement::Prepare(db_, sql, sql);
    if (!s.ok()) continue;
    if (const absl::StatusOr<bool> row = s->Step(); row.ok() && *row) *out = s->Int(0);
  }
  return static_cast<uint64_t>(std::max<int64_t>(0, pages - free_pages) * page_size);
}

std::optional<StoreSize> SqliteWriter::Size() {
  return StoreSize{.disk_bytes = MeasureSqliteFiles(path_).total(), .live_bytes = LiveBytes()};
}

std::string SqliteWriter::LocalDirectory() const {
  const size_t slash = path_.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path_.substr(0, slash);
}

absl::Status SqliteWriter::RetireForSize(int64_t run_id, uint64_t max_bytes, uint64_t* deleted) {
  size_guard_.Observe(LiveBytes(), MeasureSqliteFiles(path_));
  const uint64_t target = size_guard_.LiveTarget(max_bytes);
  // One interval first, then twice as many each time: an interval of --detail
  // all at a high rate is megabytes, of --detail tail a few kB.
  for (int count = 1; LiveBytes() > target; count = std::min(count * 2, 256)) {
    absl::StatusOr<int> n = RetireOldest(run_id, count, deleted);
    if (!n.ok()) return n.status();
    if (*n == 0) break;  // no detail left: the rest is statistics
  }
  size_guard_.AfterCheck(LiveBytes(), MeasureSqliteFiles(path_));
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteWriter::RetireOldest(int64_t run_id, int count, uint64_t* deleted) {
  // Runs in the order they began: an older run's detail goes before this one's.
  std::vector<int64_t> runs;
  {
    absl::StatusOr<Statement> s =
        NewStatement("SELECT run_id FROM runs ORDER BY run_id", "prepare runs for retention");
    if (!s.ok()) return s.status();
    absl::StatusOr<std::vector<int64_t>> read =
        s->Collect([](const Statement& q) { return q.Int(0); });
    if (!read.ok()) return Error("runs for retention");
    runs = *std::move(read);
  }
  for (const int64_t run : runs) {
    const auto it = retired_through_.try_emplace(run, std::numeric_limits<int64_t>::min()).first;
    int64_t newest = it->second;
    absl::StatusOr<int> n =
        DeleteDetail(run, "start_utc_ns >= ?2", it->second, count, deleted, &newest);
    if (!n.ok()) return n.status();
    if (*n > 0) {
      it->second = newest;
      return n;
    }
    // Another run, ended or written by no one now: it gets no new detail,
    // so it is not searched again.
    if (run != run_id) it->second = std::numeric_limits<int64_t>::max();
  }
  return 0;
}

absl::StatusOr<uint64_t> SqliteWriter::ApplyRetention(
    int64_t run_id, std::optional<int64_t> detail_before_utc_ns, uint64_t max_bytes,
    std::optional<int64_t> intervals_before_utc_ns) {
  uint64_t deleted = 0;
  constexpr int kAll = 1 << 30;
  if (detail_before_utc_ns.has_value()) {
    absl::StatusOr<int> n =
        DeleteDetail(run_id, "start_utc_ns < ?2", *detail_before_utc_ns, kAll, &deleted);
    if (!n.ok()) return n.status();
  }
  if (max_bytes > 0) {
    if (absl::Status s = RetireForSize(run_id, max_bytes, &deleted); !s.ok()) return s;
  }
  if (intervals_before_utc_ns.has_value()) {
    absl::StatusOr<int> n =
        DeleteDetail(run_id, "start_utc_ns < ?2", *intervals_before_utc_ns, kAll, &deleted);
    if (!n.ok()) return n.status();
    if (open_intervals_run_ == run_id) {
      absl::erase_if(open_intervals_, [&](const auto& entry) {
        return entry.first.second < *intervals_before_utc_ns;
      });
    }
    for (const char* sql : {"DELETE FROM intervals WHERE run_id = ? AND start_utc_ns < ?",
                            "DELETE FROM interval_detail WHERE run_id = ? AND start_utc_ns < ?"}) {
      absl::StatusOr<Statement> s = NewStatement(sql, "prepare");
      if (!s.ok()) return s.status();
      s->Bind(1, run_id).Bind(2, *intervals_before_utc_ns);
      if (absl::Status st = Check(s->Run(), "delete intervals"); !st.ok()) return st;
    }
  }
  return deleted;
}

absl::Status SqliteWriter::EndRun(int64_t run_id, int64_t ended_utc_ns) {
  absl::StatusOr<Statement> s = NewStatement(
      "UPDATE runs SET ended_utc_ns = ? WHERE run_id = ?", "prepare end of run");
  if (!s.ok()) return s.status();
  s->Bind(1, ended_utc_ns).Bind(2, run_id);
  if (absl::Status st = Check(s->Run(), "end of run"); !st.ok()) return st;
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
