#include "ticktrace/view/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sqlite_statement.h"
#include "status_macros.h"

namespace ticktrace::view {
namespace {

using internal::Statement;

// The first 100 bytes of an SQLite file: the magic string, and at offsets 18
// and 19 the write/read format versions (2 = WAL).
constexpr char kSqliteMagic[] = "SQLite format 3";
constexpr size_t kSqliteHeaderSize = 100;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Builds an SQLite URI for a file name: percent-encodes the characters that
// the URI syntax gives a meaning to.
std::string FileUri(const std::string& path, bool immutable) {
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

// Reads the SQLite header of `path`; tells whether the file is in WAL mode.
absl::StatusOr<bool> CheckSqliteHeader(const std::string& path, int64_t size_bytes) {
  if (size_bytes == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": empty file, not a ticktrace store"));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
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

RunInfo ReadRun(const Statement& s) {
  RunInfo run;
  run.run_id = s.Int(0);
  run.session = s.Text(1);
  run.host = s.Text(2);
  run.started_utc_ns = s.Int(3);
  run.ended_utc_ns = s.OptionalInt(4);
  run.tsc_hz = s.Double(5);
  run.calibration_source = s.Text(6);
  run.spread_ppm = s.OptionalDouble(7);
  run.kernel_tsc_hz = s.OptionalDouble(8);
  run.tsc_step_ns = s.OptionalDouble(9);
  run.anchor_tsc = s.Int(10);
  run.anchor_utc_ns = s.Int(11);
  run.environment = s.Text(12);
  run.settings = s.Text(13);
  run.pipeline = s.Text(14);
  run.pipeline_learned = s.Int(15) != 0;
  return run;
}

constexpr char kRunColumns[] =
    "run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
    "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, "
    "settings, pipeline, pipeline_learned";

constexpr char kSampleColumns[] =
    "order_id, stage, start_utc_ns, latency_ns, process_begin, process_end, cpu_begin, "
    "cpu_end, flags";

SampleRow ReadSample(const Statement& s) {
  SampleRow row;
  row.order_id = s.Int(0);
  row.stage = s.Text(1);
  row.start_utc_ns = s.Int(2);
  row.latency_ns = s.Double(3);
  row.process_begin = s.OptionalInt(4);
  row.process_end = s.OptionalInt(5);
  row.cpu_begin = s.OptionalInt(6);
  row.cpu_end = s.OptionalInt(7);
  row.flags = static_cast<uint32_t>(s.Int(8));
  return row;
}

constexpr char kOrderColumns[] =
    "order_id, parent_order_id, first_utc_ns, total_ns, complete, missing";

OrderRow ReadOrder(const Statement& s) {
  OrderRow row;
  row.order_id = s.Int(0);
  row.parent_order_id = s.OptionalInt(1);
  row.first_utc_ns = s.Int(2);
  row.total_ns = s.OptionalDouble(3);
  row.complete = s.Int(4) != 0;
  row.missing = s.Text(5);
  return row;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, OpenMode mode) {
  if (path.empty()) return absl::InvalidArgumentError("--db: empty path");
  // Checked before SQLite sees the path: sqlite3_open would create a missing
  // file in read-write mode, and says only "unable to open" in read-only mode.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a store"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(const bool wal, CheckSqliteHeader(path, st.st_size));

  // A read-only connection to a WAL store creates the -wal and -shm files
  // when they are missing and leaves them behind. With no -wal file no
  // writer has the store open, so a one-shot query may treat it as
  // immutable and create nothing. (A collector that starts during that
  // query writes to its own -wal; it changes the main file only at a
  // checkpoint.)
  const bool immutable =
      mode == OpenMode::kSnapshot && wal && !FileExists(path + "-wal");
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(FileUri(path, immutable).c_str(), &db,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = internal::SqliteError(db, rc, absl::StrCat(path, ": cannot open"));
    sqlite3_close(db);
    return status;
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<Store> store(new Store(path, db));
  TICKTRACE_RETURN_IF_ERROR(store->Validate());
  return store;
}

Store::~Store() { sqlite3_close(db_); }

absl::Status Store::Validate() {
  auto exists = Statement::Prepare(
      db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
      absl::StrCat(path_, ": reading the schema"));
  if (!exists.ok()) {
    if (absl::IsDataLoss(exists.status())) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": not an SQLite database, so not a ticktrace store (",
                       exists.status().message(), ")"));
    }
    return exists.status();
  }
  {
    auto row = exists->Step();
    if (!row.ok()) {
      if (absl::IsDataLoss(row.status())) {
        return absl::FailedPreconditionError(
            absl::StrCat(path_, ": not a readable SQLite database (", row.status().message(), ")"));
      }
      return row.status();
    }
    if (!*row || exists->Int(0) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": an SQLite file but not a ticktrace store (no meta table)"));
    }
  }
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement meta,
      Statement::Prepare(db_, "SELECT key, value FROM meta WHERE key IN ('app', 'schema_version')",
                         absl::StrCat(path_, ": reading meta")));
  std::string app;
  std::optional<std::string> version;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, meta.Step());
    if (!row) break;
    if (meta.Text(0) == "app") app = meta.Text(1);
    else version = meta.Text(1);
  }
  if (app != "ticktrace") {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": an SQLite file but not a ticktrace store (meta.app is '", app, "')"));
  }
  int parsed = 0;
  if (!version.has_value() || !absl::SimpleAtoi(*version, &parsed) || parsed < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": bad meta.schema_version '", version.value_or("<missing>"), "'"));
  }
  if (parsed > kSupportedSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": store schema version ", parsed, " is newer than this viewer reads (",
        kSupportedSchemaVersion, "); use a newer ticktrace-view"));
  }
  schema_version_ = parsed;
  return absl::OkStatus();
}

namespace {

// runs.utc_drift_ppm of `run`, where the store has the column.
absl::Status ReadDrift(sqlite3* db, RunInfo* run) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db, "SELECT utc_drift_ppm FROM runs WHERE run_id = ?", "reading a run"));
  s.BindInt(1, run->run_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (row) run->utc_drift_ppm = s.OptionalDouble(0);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<RunInfo>> Store::ListRuns() {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Statement::Prepare(db_, absl::StrCat("SELECT ", kRunColumns,
                                                        " FROM runs ORDER BY run_id"),
                                      "listing runs"));
  std::vector<RunInfo> runs;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    runs.push_back(ReadRun(s));
  }
  return runs;
}

absl::StatusOr<RunInfo> Store::GetRun(std::optional<int64_t> run_id) {
  const std::string sql =
      run_id.has_value()
          ? absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE run_id = ?")
          : absl::StrCat("SELECT ", kRunColumns, " FROM runs ORDER BY run_id DESC LIMIT 1");
  TICKTRACE_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, sql, "reading a run"));
  if (run_id.has_value()) s.BindInt(1, *run_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (row) {
    RunInfo run = ReadRun(s);
    if (HasColumn("runs", "utc_drift_ppm")) TICKTRACE_RETURN_IF_ERROR(ReadDrift(db_, &run));
    return run;
  }
  if (!run_id.has_value()) {
    return absl::NotFoundError(absl::StrCat(path_, ": the store holds no run yet"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<RunInfo> runs, ListRuns());
  std::vector<int64_t> ids;
  for (const RunInfo& r : runs) ids.push_back(r.run_id);
  return absl::NotFoundError(absl::StrCat("run ", *run_id, " not found in ", path_, " (runs: ",
                                          ids.empty() ? "none" : absl::StrJoin(ids, ", "), ")"));
}

absl::StatusOr<std::map<std::string, int64_t>> Store::Counters(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Statement::Prepare(db_, "SELECT name, value FROM counters WHERE run_id = ?",
                                      "reading counters"));
  s.BindInt(1, run_id);
  std::map<std::string, int64_t> counters;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    counters[s.Text(0)] = s.Int(1);
  }
  return counters;
}

bool Store::HasColumn(const char* table, const char* column) {
  auto s = Statement::Prepare(db_, absl::StrCat("PRAGMA table_info(", table, ")"),
                              "reading the schema");
  if (!s.ok()) return false;
  for (;;) {
    auto row = s->Step();
    if (!row.ok() || !*row) return false;
    if (s->Text(1) == column) return true;
  }
}

absl::StatusOr<std::vector<CoreRow>> Store::Cores(int64_t run_id) {
  std::vector<CoreRow> out;
  if (!HasColumn("cores", "bound_ns")) return out;
  // The latest measurement of each cpu.
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT cpu, offset_ns, bound_ns, consistent, measured_utc_ns FROM cores c "
                         "WHERE run_id = ?1 AND measured_utc_ns = (SELECT max(measured_utc_ns) "
                         "FROM cores WHERE run_id = ?1 AND cpu = c.cpu) ORDER BY cpu",
                         "reading cores"));
  s.BindInt(1, run_id);
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    CoreRow c;
    c.cpu = s.Int(0);
    c.offset_ns = s.Double(1);
    c.bound_ns = s.Double(2);
    c.consistent = s.Int(3) != 0;
    c.measured_utc_ns = s.Int(4);
    out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::vector<StageStatsRow>> Store::StageStats(int64_t run_id) {
  // Stores written before the truth columns lack the last five.
  const bool truth = HasColumn("stage_stats", "uncertainty_ns");
  const bool all = HasColumn("stage_stats", "samples_all");
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(
          db_,
          absl::StrCat("SELECT stage, position, count, min_ns, max_ns, mean_ns, p50_ns, p90_ns, "
                       "p99_ns, p999_ns, migrated, negative, cross_core, include_flagged, ",
                       all ? "samples_all" : "NULL",
                       truth ? ", skew, out_of_order, late, uncertainty_ns "
                             : ", NULL, NULL, NULL, NULL ",
                       "FROM stage_stats WHERE run_id = ? ORDER BY position, stage"),
          "reading stage_stats"));
  s.BindInt(1, run_id);
  std::vector<StageStatsRow> rows;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    StageStatsRow r;
    r.stage = s.Text(0);
    r.position = s.Int(1);
    r.count = s.Int(2);
    r.min_ns = s.OptionalDouble(3);
    r.max_ns = s.OptionalDouble(4);
    r.mean_ns = s.OptionalDouble(5);
    r.p50_ns = s.OptionalDouble(6);
    r.p90_ns = s.OptionalDouble(7);
    r.p99_ns = s.OptionalDouble(8);
    r.p999_ns = s.OptionalDouble(9);
    r.migrated = s.Int(10);
    r.negative = s.Int(11);
    r.cross_core = s.Int(12);
    r.include_flagged = s.Int(13) != 0;
    r.samples_all = s.OptionalInt(14);
    r.skew = s.OptionalInt(15);
    r.out_of_order = s.OptionalInt(16);
    r.late = s.OptionalInt(17);
    r.uncertainty_ns = s.OptionalDouble(18);
    rows.push_back(std::move(r));
  }
  return rows;
}

absl::StatusOr<std::vector<std::string>> Store::StageNames(int64_t run_id) {
  std::vector<std::string> names;
  for (const char* sql : {"SELECT stage FROM stage_stats WHERE run_id = ?",
                          "SELECT DISTINCT stage FROM samples WHERE run_id = ?"}) {
    TICKTRACE_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, sql, "listing stages"));
    s.BindInt(1, run_id);
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      names.push_back(s.Text(0));
    }
    if (!names.empty()) break;
  }
  return names;
}

absl::StatusOr<std::vector<ProcessInfo>> Store::Processes(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT process_id, pid, name, segment, first_seen_utc_ns, exited_utc_ns "
                         "FROM processes WHERE run_id = ? ORDER BY process_id",
                         "reading processes"));
  s.BindInt(1, run_id);
  std::vector<ProcessInfo> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    ProcessInfo p;
    p.process_id = s.Int(0);
    p.pid = s.Int(1);
    p.name = s.Text(2);
    p.segment = s.Text(3);
    p.first_seen_utc_ns = s.OptionalInt(4);
    p.exited_utc_ns = s.OptionalInt(5);
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<ThreadInfo>> Store::Threads(int64_t run_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT process_id, slot, generation, tid, name, drained, dropped "
                         "FROM threads WHERE run_id = ? ORDER BY process_id, slot, generation",
                         "reading threads"));
  s.BindInt(1, run_id);
  std::vector<ThreadInfo> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    ThreadInfo t;
    t.process_id = s.Int(0);
    t.slot = s.Int(1);
    t.generation = s.Int(2);
    t.tid = s.Int(3);
    t.name = s.Text(4);
    t.drained = s.Int(5);
    t.dropped = s.Int(6);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> Store::SampleSpanUtcNs(
    int64_t run_id) {
  using Span = std::optional<std::pair<int64_t, int64_t>>;
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT min(start_utc_ns), max(start_utc_ns) FROM samples "
                         "WHERE run_id = ?",
                         "reading the time span of the samples"));
  s.BindInt(1, run_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (!row || s.IsNull(0) || s.IsNull(1)) return Span();
  return Span(std::make_pair(s.Int(0), s.Int(1)));
}

absl::Status Store::ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                                  const std::function<void(const SampleRow&)>& visit) {
  std::string sql = absl::StrCat("SELECT ", kSampleColumns, " FROM samples WHERE run_id = ?");
  if (filter.stage.has_value()) absl::StrAppend(&sql, " AND stage = ?");
  if (!filter.process_ids.empty()) {
    const std::string ids = absl::StrJoin(filter.process_ids, ",");
    absl::StrAppend(&sql, " AND (process_begin IN (", ids, ") OR process_end IN (", ids, "))");
  }
  if (filter.since_utc_ns.has_value()) absl::StrAppend(&sql, " AND start_utc_ns >= ?");
  if (filter.until_utc_ns.has_value()) absl::StrAppend(&sql, " AND start_utc_ns <= ?");
  if (ordered) absl::StrAppend(&sql, " ORDER BY order_id, start_utc_ns");
  TICKTRACE_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, sql, "reading samples"));
  int index = 1;
  s.BindInt(index++, run_id);
  if (filter.stage.has_value()) s.BindText(index++, *filter.stage);
  if (filter.since_utc_ns.has_value()) s.BindInt(index++, *filter.since_utc_ns);
  if (filter.until_utc_ns.has_value()) s.BindInt(index++, *filter.until_utc_ns);
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    visit(ReadSample(s));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampleRow>> Store::SamplesOfOrder(int64_t run_id, int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         absl::StrCat("SELECT ", kSampleColumns,
                                      " FROM samples WHERE run_id = ? AND order_id = ? "
                                      "ORDER BY start_utc_ns, rowid"),
                         "reading an order's samples"));
  s.BindInt(1, run_id);
  s.BindInt(2, order_id);
  std::vector<SampleRow> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    out.push_back(ReadSample(s));
  }
  return out;
}

absl::StatusOr<std::vector<RankedOrder>> Store::FindSlowest(int64_t run_id,
                                                            const std::string& stage,
                                                            int64_t limit) {
  // The store has no latency index (it would make every insert a random
  // B-tree write; docs/store.md): SQLite keeps the top `rows` samples of the
  // stage in one pass. An order with two samples of one stage is ranked by
  // its slower one, so the window doubles until it holds `limit` distinct
  // orders or every sample of the stage.
  std::vector<RankedOrder> out;
  if (limit <= 0) return out;
  for (int64_t rows = limit + 16;; rows *= 2) {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Statement::Prepare(db_,
                           "SELECT order_id, latency_ns, flags FROM samples "
                           "WHERE run_id = ? AND stage = ? "
                           "ORDER BY latency_ns DESC, order_id ASC LIMIT ?",
                           "ranking orders"));
    s.BindInt(1, run_id);
    s.BindText(2, stage);
    s.BindInt(3, rows);
    out.clear();
    std::unordered_set<int64_t> seen;
    int64_t read = 0;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      ++read;
      const int64_t order_id = s.Int(0);
      if (static_cast<int64_t>(out.size()) < limit && seen.insert(order_id).second) {
        out.push_back({order_id, s.Double(1), static_cast<uint32_t>(s.Int(2))});
      }
    }
    if (static_cast<int64_t>(out.size()) >= limit || read < rows) return out;
  }
}

absl::StatusOr<std::optional<OrderRow>> Store::FindOrder(int64_t run_id, int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         absl::StrCat("SELECT ", kOrderColumns,
                                      " FROM orders WHERE run_id = ? AND order_id = ?"),
                         "reading an order"));
  s.BindInt(1, run_id);
  s.BindInt(2, order_id);
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (!row) return std::optional<OrderRow>();
  return std::optional<OrderRow>(ReadOrder(s));
}

absl::StatusOr<std::vector<int64_t>> Store::RunsWithOrder(int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_, "SELECT run_id FROM orders WHERE order_id = ? ORDER BY run_id",
                         "finding an order's runs"));
  s.BindInt(1, order_id);
  std::vector<int64_t> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    out.push_back(s.Int(0));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> Store::ChildOrders(int64_t run_id, int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT order_id FROM orders WHERE run_id = ? AND parent_order_id = ? "
                         "ORDER BY first_utc_ns, order_id",
                         "finding an order's children"));
  s.BindInt(1, run_id);
  s.BindInt(2, order_id);
  std::vector<int64_t> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    out.push_back(s.Int(0));
  }
  return out;
}

absl::StatusOr<std::vector<OrderRow>> Store::OrdersByTime(int64_t run_id,
                                                          std::optional<int64_t> limit) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         absl::StrCat("SELECT ", kOrderColumns,
                                      " FROM orders WHERE run_id = ? "
                                      "ORDER BY first_utc_ns, order_id LIMIT ?"),
                         "listing orders"));
  s.BindInt(1, run_id);
  s.BindInt(2, limit.value_or(-1));  // a negative LIMIT means none
  std::vector<OrderRow> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    out.push_back(ReadOrder(s));
  }
  return out;
}

absl::StatusOr<std::vector<StampRow>> Store::Stamps(int64_t run_id, int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Statement::Prepare(db_,
                         "SELECT order_id, tag, kind, process_id, tid, cpu, cpu_end, tsc, utc_ns, "
                         "duration_ns, flags FROM stamps WHERE run_id = ? AND order_id = ? "
                         "ORDER BY tsc, rowid",
                         "reading an order's stamps"));
  s.BindInt(1, run_id);
  s.BindInt(2, order_id);
  std::vector<StampRow> out;
  for (;;) {
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row) break;
    StampRow r;
    r.order_id = s.Int(0);
    r.tag = s.Text(1);
    r.kind = s.Text(2);
    r.process_id = s.Int(3);
    r.tid = s.Int(4);
    r.cpu = s.OptionalInt(5);
    r.cpu_end = s.OptionalInt(6);
    r.tsc = s.Int(7);
    r.utc_ns = s.Int(8);
    r.duration_ns = s.OptionalDouble(9);
    r.flags = static_cast<uint32_t>(s.Int(10));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ticktrace::view
