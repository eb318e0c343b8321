// The SQLite StoreReader: opening a store (file checks, a schema-1 store
// migrated or copied first), the run tables (runs, counters, stage_stats,
// processes, threads, cores) and the run dictionaries. Every name it hands
// out is escaped (common/name_text.h): a store may hold any bytes. The map of which file
// answers what is in sqlite_reader.h.

#include "store/sqlite/sqlite_reader.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/name_text.h"
#include "common/own_file.h"
#include "common/status_macros.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "store/sqlite/sqlite_block_sql.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_statement.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace sqlite_reader {

constexpr char kSqliteMagic[] = "SQLite format 3";
constexpr size_t kSqliteHeaderSize = 100;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// An SQLite URI for a file name: percent-encodes what the URI syntax gives a
// meaning to.
std::string ReadOnlyUri(const std::string& path, bool immutable) {
  std::string uri = "file:";
  size_t begin = 0;
  // "file://x" would name an authority; one leading slash means the same path.
  while (path.size() - begin >= 2 && path[begin] == '/' && path[begin + 1] == '/') ++begin;
  for (size_t i = begin; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    } else {
      uri += static_cast<char>(c);
    }
  }
  uri += "?mode=ro";
  if (immutable) uri += "&immutable=1";
  return uri;
}

// The viewer's limit on one step of a query (LimitStepTime):
// TICKTRACE_QUERY_TIMEOUT_MS, else 60 s, far above what a step over a
// genuine store takes (each is an index lookup or one interval's rows).
int64_t QueryTimeLimitMs() {
  constexpr int64_t kDefaultMs = 60000;
  const char* text = std::getenv("TICKTRACE_QUERY_TIMEOUT_MS");
  int64_t ms = 0;
  if (text == nullptr || !absl::SimpleAtoi(text, &ms) || ms <= 0) return kDefaultMs;
  return ms;
}

// Checks the file before SQLite sees it (sqlite3_open says only "unable to
// open"); tells whether it is in WAL mode (header bytes 18 and 19).
absl::StatusOr<bool> CheckFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a store"));
  }
  if (S_ISREG(st.st_mode) && st.st_size == 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": empty file, not a ticktrace store"));
  }
  // Any owner's store may be read, through a symlink too (the user names
  // it), but only a regular file, and never by waiting on a FIFO or device
  // (common/own_file.h).
  TICKTRACE_ASSIGN_OR_RETURN(const int fd,
                             OpenExistingFile(path, O_RDONLY, {.must_be_ours = false}));
  unsigned char header[kSqliteHeaderSize] = {};
  const ssize_t n = ::read(fd, header, sizeof(header));
  const int read_errno = errno;
  ::close(fd);
  if (n < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot read: ", std::strerror(read_errno)));
  }
  if (static_cast<size_t>(n) < kSqliteHeaderSize ||
      std::memcmp(header, kSqliteMagic, sizeof(kSqliteMagic)) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not an SQLite database, so not a ticktrace store"));
  }
  return header[18] == 2 && header[19] == 2;
}

absl::StatusOr<Db> OpenReadOnly(const std::string& path, OpenMode mode) {
  TICKTRACE_ASSIGN_OR_RETURN(const bool wal, CheckFile(path));
  // A read-only connection to a WAL store creates -wal and -shm when they
  // are missing and leaves them behind. Without a -wal file no writer has
  // the store open, so a one-shot query may treat it as immutable.
  const bool immutable = mode == OpenMode::kSnapshot && wal && !Exists(path + "-wal");
  RegisterBlockSqlFunctionsEverywhere();  // the views read compact blocks through them
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(ReadOnlyUri(path, immutable).c_str(), &raw,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, rc, absl::StrCat(path, ": cannot open"));
  // A store may be anybody's: its triggers and views never run here, and no
  // step of a query computes for longer than the limit.
  TICKTRACE_RETURN_IF_ERROR(DistrustSchema(raw, path));
  LimitStepTime(raw, QueryTimeLimitMs());
  // Readers never block the writer's checkpoints for long: WAL readers do
  // not block writers; a busy timeout covers a checkpoint's brief lock.
  sqlite3_busy_timeout(raw, 5000);
  // A one-shot query beside a live writer reads one commit throughout: the
  // read transaction begins with the first SELECT, so the counters and the
  // rows a command shows were written together.
  if (mode == OpenMode::kSnapshot && !immutable && wal) {
    if (const int b = sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr); b != SQLITE_OK) {
      return SqliteError(raw, b, absl::StrCat(path, ": cannot begin a read"));
    }
  }
  return db;
}

// meta.schema_version, with the viewer's wording for what is not a store.
absl::StatusOr<int> SchemaVersion(sqlite3* db, const std::string& path) {
  absl::StatusOr<Statement> has_meta = Statement::Prepare(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
      absl::StrCat(path, ": reading the schema"));
  absl::StatusOr<bool> row = has_meta.ok() ? has_meta->Step() : has_meta.status();
  if (!row.ok()) {
    if (absl::IsDataLoss(row.status())) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": not a readable SQLite database (", row.status().message(), ")"));
    }
    return row.status();
  }
  if (!*row || has_meta->Int(0) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": an SQLite file but not a ticktrace store (no meta table)"));
  }
  return store::ReadSchemaVersion(db, path);
}

// A private directory for a migrated copy of a read-only schema-1 store;
// removed with everything in it when the reader goes.
class TempDir {
 public:
  static absl::StatusOr<std::unique_ptr<TempDir>> Make() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        absl::StrCat(base != nullptr && *base ? base : "/tmp", "/ticktrace-view-XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make a temporary directory ", tmpl, ": ", std::strerror(errno)));
    }
    return std::unique_ptr<TempDir>(new TempDir(tmpl));
  }
  ~TempDir() {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(path_.c_str());
  }
  // A path inside; removed with the directory (with SQLite's companions).
  std::string File(const std::string& name) {
    const std::string f = absl::StrCat(path_, "/", name);
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".schema1.bak", ".schema2.bak"}) {
      files_.push_back(f + suffix);
    }
    return f;
  }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<std::string> files_;
};

// Copies the store `db` (a consistent snapshot) to a new file `to`.
absl::Status CopyStore(sqlite3* db, const std::string& from, const std::string& to) {
  const int fd = ::open(to.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(to, ": cannot create a copy of ", from, ": ", std::strerror(errno)));
  }
  ::close(fd);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(to.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  Db copy(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, rc, absl::StrCat(to, ": cannot open"));
  sqlite3_backup* backup = sqlite3_backup_init(raw, "main", db, "main");
  if (backup == nullptr) return SqliteError(raw, SQLITE_ERROR, absl::StrCat(to, ": copying"));
  const int step = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (step != SQLITE_DONE) return SqliteError(raw, step, absl::StrCat(from, ": copying"));
  return absl::OkStatus();
}

constexpr char kRunColumns[] =
    "run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
    "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, "
    "settings, pipeline, pipeline_learned, utc_drift_ppm, interval_ns";

RunRow ReadRun(const Statement& s) {
  RunRow run;
  run.run_id = s.Int(0);
  run.session = EscapeName(s.Text(1));
  run.host = EscapeName(s.Text(2));
  run.started_utc_ns = s.Int(3);
  run.ended_utc_ns = s.OptionalInt(4);
  run.tsc_hz = s.Double(5);
  run.calibration_source = EscapeName(s.Text(6));
  run.spread_ppm = s.OptionalDouble(7);
  run.kernel_tsc_hz = s.OptionalDouble(8);
  run.tsc_step_ns = s.OptionalDouble(9);
  run.anchor_tsc = s.Int(10);
  run.anchor_utc_ns = s.Int(11);
  run.environment = s.Text(12);
  run.settings = s.Text(13);
  run.pipeline = EscapeName(s.Text(14));
  run.pipeline_learned = s.Int(15) != 0;
  run.utc_drift_ppm = s.OptionalDouble(16);
  run.interval_ns = s.Int(17);
  return run;
}

// Here, where TempDir is complete.
SqliteStoreReader::SqliteStoreReader(std::string path, Db db, std::unique_ptr<TempDir> temp)
    : path_(std::move(path)), temp_(std::move(temp)), db_(std::move(db)) {}
SqliteStoreReader::~SqliteStoreReader() = default;

bool SqliteStoreReader::HasColumn(const char* table, const char* column) {
  auto s = Statement::Prepare(db_.get(), absl::StrCat("PRAGMA table_info(", table, ")"),
                              "reading the schema");
  if (!s.ok()) return false;
  for (;;) {
    auto row = s->Step();
    if (!row.ok() || !*row) return false;
    if (s->Text(1) == column) return true;
  }
}

absl::StatusOr<std::vector<RunRow>> SqliteStoreReader::ListRuns() {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(absl::StrCat("SELECT ", kRunColumns, " FROM runs ORDER BY run_id"), "listing runs"));
  return s.Collect([](const Statement& row) { return ReadRun(row); });
}

absl::StatusOr<RunRow> SqliteStoreReader::GetRun(std::optional<int64_t> run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare(run_id.has_value()
                  ? absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE run_id = ?")
                  : absl::StrCat("SELECT ", kRunColumns, " FROM runs ORDER BY run_id DESC LIMIT 1"),
              "reading a run"));
  if (run_id.has_value()) s.Bind(1, *run_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (row) return ReadRun(s);
  if (!run_id.has_value()) {
    return absl::NotFoundError(absl::StrCat(path_, ": the store holds no run yet"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<RunRow> runs, ListRuns());
  std::vector<int64_t> ids;
  for (const RunRow& r : runs) ids.push_back(r.run_id);
  return absl::NotFoundError(absl::StrCat("run ", *run_id, " not found in ", path_, " (runs: ",
                                          ids.empty() ? "none" : absl::StrJoin(ids, ", "), ")"));
}

absl::StatusOr<std::map<std::string, int64_t>> SqliteStoreReader::Counters(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare("SELECT name, value FROM counters WHERE run_id = ?", "reading counters"));
  s.Bind(1, run_id);
  std::map<std::string, int64_t> counters;
  TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] { counters[EscapeName(s.Text(0))] = s.Int(1); }));
  return counters;
}

absl::StatusOr<std::vector<StageStatsRow>> SqliteStoreReader::StageStats(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare("SELECT stage, position, count, min_ns, max_ns, mean_ns, p50_ns, p90_ns, "
              "p99_ns, p999_ns, migrated, negative, cross_core, include_flagged, samples_all, "
              "skew, out_of_order, late, uncertainty_ns FROM stage_stats WHERE run_id = ? "
              "ORDER BY position, stage",
              "reading stage_stats"));
  s.Bind(1, run_id);
  return s.Collect([](const Statement& row) {
    StageStatsRow r;
    r.stage = EscapeName(row.Text(0));
    r.position = row.Int(1);
    r.count = row.Int(2);
    r.min_ns = row.OptionalDouble(3);
    r.max_ns = row.OptionalDouble(4);
    r.mean_ns = row.OptionalDouble(5);
    r.p50_ns = row.OptionalDouble(6);
    r.p90_ns = row.OptionalDouble(7);
    r.p99_ns = row.OptionalDouble(8);
    r.p999_ns = row.OptionalDouble(9);
    r.flag_count(kFlagMigrated) = row.Int(10);
    r.flag_count(kFlagNegative) = row.Int(11);
    r.flag_count(kFlagCrossCore) = row.Int(12);
    r.include_flagged = row.Int(13) != 0;
    r.samples_all = row.OptionalInt(14);
    r.flag_count(kFlagSkew) = row.OptionalInt(15).value_or(0);
    r.flag_count(kFlagOutOfOrder) = row.OptionalInt(16).value_or(0);
    r.flag_count(kFlagLate) = row.OptionalInt(17).value_or(0);
    r.uncertainty_ns = row.OptionalDouble(18);
    return r;
  });
}

absl::StatusOr<std::vector<std::string>> SqliteStoreReader::StageNames(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  return StageNamesOf(*dict);
}

absl::StatusOr<std::vector<ProcessRow>> SqliteStoreReader::Processes(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare("SELECT process_id, pid, name, segment, first_seen_utc_ns, exited_utc_ns "
              "FROM processes WHERE run_id = ? ORDER BY process_id",
              "reading processes"));
  s.Bind(1, run_id);
  return s.Collect([](const Statement& row) {
    ProcessRow p;
    p.process_id = row.Int(0);
    p.pid = row.Int(1);
    p.name = EscapeName(row.Text(2));
    p.segment = EscapeName(row.Text(3));
    p.first_seen_utc_ns = row.OptionalInt(4).value_or(0);
    p.exited_utc_ns = row.OptionalInt(5);
    return p;
  });
}

absl::StatusOr<std::vector<ThreadRow>> SqliteStoreReader::Threads(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT process_id, slot, generation, tid, name, drained, dropped "
                           "FROM threads WHERE run_id = ? ORDER BY process_id, slot, generation",
                           "reading threads"));
  s.Bind(1, run_id);
  return s.Collect([](const Statement& row) {
    ThreadRow t;
    t.process_id = row.Int(0);
    t.slot = row.Int(1);
    t.generation = row.Int(2);
    t.tid = row.Int(3);
    t.name = EscapeName(row.Text(4));
    t.drained = row.Int(5);
    t.dropped = row.Int(6);
    return t;
  });
}

absl::StatusOr<std::vector<CoreRow>> SqliteStoreReader::Cores(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare("SELECT cpu, offset_ns, bound_ns, consistent, measured_utc_ns FROM cores c "
              "WHERE run_id = ?1 AND measured_utc_ns = (SELECT max(measured_utc_ns) "
              "FROM cores WHERE run_id = ?1 AND cpu = c.cpu) ORDER BY cpu",
              "reading cores"));
  s.Bind(1, run_id);
  return s.Collect([](const Statement& row) {
    CoreRow c;
    c.cpu = row.Int(0);
    c.offset_ns = row.Double(1);
    c.bound_ns = row.Double(2);
    c.consistent = row.Int(3) != 0;
    c.measured_utc_ns = row.Int(4);
    return c;
  });
}

absl::StatusOr<Statement> SqliteStoreReader::Prepare(std::string_view sql, absl::string_view what) {
  return Statement::Prepare(db_.get(), sql, absl::StrCat(path_, ": ", what));
}

absl::StatusOr<const RunDictionary*> SqliteStoreReader::Dictionary(int64_t run_id, bool refresh) {
  auto it = dictionaries_.find(run_id);
  if (it != dictionaries_.end() && !refresh) return &it->second;
  RunDictionary d;
  {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Prepare("SELECT tsc_hz, interval_ns, detail FROM runs WHERE run_id = ?", "reading a run"));
    s.Bind(1, run_id);
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat("run ", run_id, " not found in ", path_));
    }
    d.tsc_hz = s.Double(0);
    d.interval_ns = std::max<int64_t>(1, s.Int(1));
    d.detail_policy = s.Text(2);
  }
  for (const auto& table :
       {std::pair("SELECT name_id, name FROM names WHERE run_id = ?", &d.names),
        std::pair("SELECT stage_id, name FROM stages WHERE run_id = ?", &d.stages)}) {
    // Not a structured binding: clang 14 cannot capture one in the lambda.
    std::vector<std::string>* const names = table.second;
    TICKTRACE_ASSIGN_OR_RETURN(Statement s, Prepare(table.first, "reading names"));
    s.Bind(1, run_id);
    TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] {
      const int64_t id = s.Int(0);
      if (id < 0 || id > (1 << 24)) return;  // not one of ours
      if (names->size() <= static_cast<size_t>(id)) names->resize(static_cast<size_t>(id) + 1);
      (*names)[static_cast<size_t>(id)] = EscapeName(s.Text(1));
    }));
  }
  RunDictionary& slot = dictionaries_[run_id];
  slot = std::move(d);
  return &slot;
}
}  // namespace sqlite_reader

absl::StatusOr<std::unique_ptr<StoreReader>> OpenSqliteStoreReader(const std::string& path,
                                                                   OpenMode mode) {
  using namespace sqlite_reader;  // NOLINT: this file's own helpers
  if (path.empty()) return absl::InvalidArgumentError("--store: empty path");
  TICKTRACE_ASSIGN_OR_RETURN(Db db, OpenReadOnly(path, mode));
  TICKTRACE_ASSIGN_OR_RETURN(const int version, SchemaVersion(db.get(), path));
  if (version > store::kSqliteSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": store schema version ", version, " is newer than this viewer reads (",
                     store::kSqliteSchemaVersion, "); use a newer ticktrace-view"));
  }
  if (version >= store::kOldestReadAsIsVersion) {
    auto reader = std::make_unique<SqliteStoreReader>(path, std::move(db), nullptr);
    reader->set_schema_version(version);
    return std::unique_ptr<StoreReader>(std::move(reader));
  }
  if (version < store::kOldestMigratableVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": store schema ", version, " is too old to read"));
  }
  // An older schema: migrated by the store library, which alone knows how.
  const std::string dir = [&] {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash + 1);
  }();
  // In place only when the store is one the collector would write (ours,
  // checked as SqliteWriter::CheckExisting does); anybody else's is migrated
  // in a private copy. Either way the migration never runs its triggers.
  const bool writable = ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0 &&
                        store::SqliteWriter::CheckExisting(path).ok();
  store::SqliteOpenOptions options;
  if (writable) {
    db.reset();
    options.on_migration = [](const std::string& line) { std::cerr << line << "\n"; };
    absl::StatusOr<std::unique_ptr<store::SqliteWriter>> writer =
        store::SqliteWriter::OpenOrCreate(path, options);
    if (!writer.ok()) return writer.status();
    writer->reset();  // closes; the WAL is checkpointed into the file
    TICKTRACE_ASSIGN_OR_RETURN(db, OpenReadOnly(path, mode));
    return std::unique_ptr<StoreReader>(new SqliteStoreReader(path, std::move(db), nullptr));
  }
  // Not ours to change: migrate a private copy and read that.
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TempDir> temp, TempDir::Make());
  const std::string copy = temp->File("store.db");
  TICKTRACE_RETURN_IF_ERROR(CopyStore(db.get(), path, copy));
  db.reset();
  absl::StatusOr<std::unique_ptr<store::SqliteWriter>> writer =
      store::SqliteWriter::OpenOrCreate(copy, options);
  if (!writer.ok()) return writer.status();
  writer->reset();
  std::cerr << path << ": store schema " << version
            << ", read-only here: reading a migrated temporary copy (run ticktrace-collector "
               "--store sqlite:"
            << path << " once, or copy the file, to migrate it for good)\n";
  TICKTRACE_ASSIGN_OR_RETURN(db, OpenReadOnly(copy, OpenMode::kSnapshot));
  return std::unique_ptr<StoreReader>(new SqliteStoreReader(path, std::move(db), std::move(temp)));
}

}  // namespace ticktrace::store::internal
