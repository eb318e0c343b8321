// The SQLite StoreReader: schema 2 (docs/store.md, DDL in
// store/sqlite/sqlite_schema_sql.inc), read-only.
//
// Where each answer comes from:
//   runs, processes, threads, counters, cores, stage_stats  their tables
//   window statistics, intervals   `intervals` rows merged (Histogram), one
//                                  index range per stage: no detail is read
//   samples, stamps               one `orders` row per order instance: its
//                                  samples (orders.samples, sqlite_expand.h)
//                                  and, for their context (start, processes,
//                                  cores) and the stamps, its packed detail
//   slowest orders                the intervals by their max (see FindSlowest)
//   orders by time                the intervals' order-key ranges
//
// Orders are stored by order_key (roughly the order they finished in); the
// only index on them is (run_id, order_id, instance). Queries that walk a key
// range write `+o.run_id` so that SQLite keeps to the rowid range instead of
// scanning the run through that index.

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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "store/common/detail.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_writer.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/sqlite/sqlite_statement.h"
#include "common/status_macros.h"
#include "store/common/window_rows.h"

namespace ticktrace::store::internal {
// Named (not anonymous) so that a unity build that puts this file beside
// store.cc sees no two helpers of one name.
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
  if (st.st_size == 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": empty file, not a ticktrace store"));
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

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

absl::StatusOr<Db> OpenReadOnly(const std::string& path, OpenMode mode) {
  TICKTRACE_ASSIGN_OR_RETURN(const bool wal, CheckFile(path));
  // A read-only connection to a WAL store creates -wal and -shm when they
  // are missing and leaves them behind. Without a -wal file no writer has
  // the store open, so a one-shot query may treat it as immutable.
  const bool immutable = mode == OpenMode::kSnapshot && wal && !Exists(path + "-wal");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(ReadOnlyUri(path, immutable).c_str(), &raw,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, rc, absl::StrCat(path, ": cannot open"));
  // Readers never block the writer's checkpoints for long: WAL readers do
  // not block writers; a busy timeout covers a checkpoint's brief lock.
  sqlite3_busy_timeout(raw, 5000);
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
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": not a readable SQLite database (", row.status().message(), ")"));
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
    std::string tmpl = absl::StrCat(base != nullptr && *base ? base : "/tmp",
                                    "/ticktrace-view-XXXXXX");
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
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".schema1.bak"}) {
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

// The columns of `intervals` a reader merges, flag counts in kFlagNames order.
std::string IntervalColumns() {
  std::vector<std::string> flags;
  for (const store::FlagName& f : store::kFlagNames) flags.emplace_back(f.name);
  return absl::StrCat("start_utc_ns, samples_all, count, max_ns, histogram, ",
                      absl::StrJoin(flags, ", "));
}
constexpr int kIntervalFlagColumn = 5;

constexpr char kRunColumns[] =
    "run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, calibration_source, "
    "spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, environment, "
    "settings, pipeline, pipeline_learned, utc_drift_ppm, interval_ns";

RunRow ReadRun(const Statement& s) {
  RunRow run;
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
  run.utc_drift_ppm = s.OptionalDouble(16);
  run.interval_ns = s.Int(17);
  return run;
}

// An order with what its samples need: OrderFields() reads the first four,
// OrderSamples() the detail and the samples.
constexpr char kOrderSampleColumns[] =
    "order_id, instance, first_utc_ns, first_tsc, detail, samples";

constexpr char kOrderColumns[] =
    "order_id, instance, parent_order_id, first_utc_ns, total_ns, complete, missing, flags";

OrderRow ReadOrder(const Statement& s, int first = 0) {
  OrderRow row;
  row.order_id = s.Int(first + 0);
  row.instance = s.Int(first + 1);
  row.parent_order_id = s.OptionalInt(first + 2);
  row.first_utc_ns = s.Int(first + 3);
  row.total_ns = s.OptionalDouble(first + 4);
  row.complete = s.Int(first + 5) != 0;
  row.missing = s.Text(first + 6);
  row.late = (static_cast<uint32_t>(s.Int(first + 7)) & store::kFlagLate) != 0;
  return row;
}

// One interval's order-key range (interval_detail).
struct KeyRange {
  int64_t start_utc_ns = 0;
  int64_t first_key = 0;
  int64_t last_key = 0;
};

// A ranked sample during FindSlowest.
struct Ranked {
  int64_t latency_ns;
  int64_t order_id;
  uint32_t flags;
  bool operator<(const Ranked& o) const {  // slowest first, then lower id
    if (latency_ns != o.latency_ns) return latency_ns > o.latency_ns;
    return order_id < o.order_id;
  }
};

class SqliteStoreReader final : public StoreReader {
 public:
  SqliteStoreReader(std::string path, Db db, std::unique_ptr<TempDir> temp)
      : path_(std::move(path)), temp_(std::move(temp)), db_(std::move(db)) {}

  const std::string& path() const override { return path_; }
  int schema_version() const override { return store::kSqliteSchemaVersion; }

  bool HasColumn(const char* table, const char* column) override {
    auto s = Statement::Prepare(db_.get(), absl::StrCat("PRAGMA table_info(", table, ")"),
                            "reading the schema");
    if (!s.ok()) return false;
    for (;;) {
      auto row = s->Step();
      if (!row.ok() || !*row) return false;
      if (s->Text(1) == column) return true;
    }
  }

  absl::StatusOr<std::vector<RunRow>> ListRuns() override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kRunColumns, " FROM runs ORDER BY run_id"),
                         "listing runs"));
    std::vector<RunRow> runs;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      runs.push_back(ReadRun(s));
    }
    return runs;
  }

  absl::StatusOr<RunRow> GetRun(std::optional<int64_t> run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Prepare(run_id.has_value()
                    ? absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE run_id = ?")
                    : absl::StrCat("SELECT ", kRunColumns,
                                   " FROM runs ORDER BY run_id DESC LIMIT 1"),
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
                                            ids.empty() ? "none" : absl::StrJoin(ids, ", "),
                                            ")"));
  }

  absl::StatusOr<std::map<std::string, int64_t>> Counters(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT name, value FROM counters WHERE run_id = ?", "reading counters"));
    s.Bind(1, run_id);
    std::map<std::string, int64_t> counters;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      counters[s.Text(0)] = s.Int(1);
    }
    return counters;
  }

  absl::StatusOr<std::vector<StageStatsRow>> StageStats(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Prepare("SELECT stage, position, count, min_ns, max_ns, mean_ns, p50_ns, p90_ns, "
                "p99_ns, p999_ns, migrated, negative, cross_core, include_flagged, samples_all, "
                "skew, out_of_order, late, uncertainty_ns FROM stage_stats WHERE run_id = ? "
                "ORDER BY position, stage",
                "reading stage_stats"));
    s.Bind(1, run_id);
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
      r.flag_count(kFlagMigrated) = s.Int(10);
      r.flag_count(kFlagNegative) = s.Int(11);
      r.flag_count(kFlagCrossCore) = s.Int(12);
      r.include_flagged = s.Int(13) != 0;
      r.samples_all = s.OptionalInt(14);
      r.flag_count(kFlagSkew) = s.OptionalInt(15).value_or(0);
      r.flag_count(kFlagOutOfOrder) = s.OptionalInt(16).value_or(0);
      r.flag_count(kFlagLate) = s.OptionalInt(17).value_or(0);
      r.uncertainty_ns = s.OptionalDouble(18);
      rows.push_back(std::move(r));
    }
    return rows;
  }

  absl::StatusOr<std::vector<std::string>> StageNames(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    std::vector<std::string> names;
    for (const std::string& s : dict->stages) {
      if (!s.empty()) names.push_back(s);
    }
    return names;
  }

  absl::StatusOr<std::vector<ProcessRow>> Processes(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT process_id, pid, name, segment, first_seen_utc_ns, exited_utc_ns "
                         "FROM processes WHERE run_id = ? ORDER BY process_id",
                         "reading processes"));
    s.Bind(1, run_id);
    std::vector<ProcessRow> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      ProcessRow p;
      p.process_id = s.Int(0);
      p.pid = s.Int(1);
      p.name = s.Text(2);
      p.segment = s.Text(3);
      p.first_seen_utc_ns = s.OptionalInt(4).value_or(0);
      p.exited_utc_ns = s.OptionalInt(5);
      out.push_back(std::move(p));
    }
    return out;
  }

  absl::StatusOr<std::vector<ThreadRow>> Threads(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT process_id, slot, generation, tid, name, drained, dropped "
                         "FROM threads WHERE run_id = ? ORDER BY process_id, slot, generation",
                         "reading threads"));
    s.Bind(1, run_id);
    std::vector<ThreadRow> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      ThreadRow t;
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

  absl::StatusOr<std::vector<CoreRow>> Cores(int64_t run_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s,
        Prepare("SELECT cpu, offset_ns, bound_ns, consistent, measured_utc_ns FROM cores c "
                "WHERE run_id = ?1 AND measured_utc_ns = (SELECT max(measured_utc_ns) "
                "FROM cores WHERE run_id = ?1 AND cpu = c.cpu) ORDER BY cpu",
                "reading cores"));
    s.Bind(1, run_id);
    std::vector<CoreRow> out;
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

  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> SampleSpanUtcNs(
      int64_t run_id) override {
    using Span = std::optional<std::pair<int64_t, int64_t>>;
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, TimeWindow{}));
    int64_t first = kMaxTime, last = kMinTime;
    const auto scan = [&](size_t i) {
      return ScanSamples(run_id, {ranges[i]}, std::nullopt, TimeWindow{},
                         [&](const SampleRow& r) {
                           first = std::min(first, r.start_utc_ns);
                           last = std::max(last, r.start_utc_ns);
                         });
    };
    // The earliest: the first interval whose orders have samples (an
    // interval may hold only orders without any, e.g. late instances).
    size_t lo = 0;
    for (; lo < ranges.size() && first == kMaxTime; ++lo) TICKTRACE_RETURN_IF_ERROR(scan(lo));
    // The latest: the last such interval, and the one before it (its orders
    // may start samples after the last interval's first stamps).
    size_t hi = ranges.size();
    const int64_t before = last;
    while (hi > lo && last == before) TICKTRACE_RETURN_IF_ERROR(scan(--hi));
    if (hi > lo) TICKTRACE_RETURN_IF_ERROR(scan(hi - 1));
    if (first <= last) return Span(std::make_pair(first, last));
    // No detail: the intervals' extent.
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT min(start_utc_ns), max(start_utc_ns) FROM interval_detail "
                         "WHERE run_id = ?",
                         "reading the time span of the intervals"));
    s.Bind(1, run_id);
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (!row || s.IsNull(0)) return Span();
    return Span(std::make_pair(s.Int(0), s.Int(1) + dict->interval_ns - 1));
  }

  absl::Status ForEachSample(int64_t run_id, const SampleFilter& filter, bool ordered,
                             const std::function<void(const SampleRow&)>& visit) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    std::optional<int64_t> stage_id;
    if (filter.stage.has_value()) {
      stage_id = StageIdOf(*dict, *filter.stage);
      if (!stage_id.has_value()) return absl::OkStatus();  // no sample of that stage
    }
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kOrderSampleColumns,
                                      " FROM orders WHERE run_id = ?",
                                      ordered ? " ORDER BY order_id, instance, order_key" : ""),
                         "reading samples"));
    s.Bind(1, run_id);
    const SampleMatcher passes(filter);
    std::vector<SampleRow> rows;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      rows.clear();
      TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, stage_id, &rows));
      // The ordered form gives an order's samples by start.
      if (ordered) SortByStart(&rows);
      for (const SampleRow& r : rows) {
        if (passes(r)) visit(r);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<SampleRow>> SamplesOfOrder(int64_t run_id,
                                                        int64_t order_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kOrderSampleColumns,
                                      " FROM orders WHERE run_id = ? AND order_id = ? "
                                      "ORDER BY instance"),
                         "reading an order's samples"));
    s.Bind(1, run_id).Bind(2, order_id);
    std::vector<SampleRow> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, std::nullopt, &out));
    }
    SortByStart(&out);
    return out;
  }

  // No latency index: each interval row holds its stage's max, so the
  // intervals are visited by max, slowest first, and only their orders are
  // scanned (by the interval's order-key range, filtered on first_utc_ns);
  // the walk stops when the next interval's max is below the current K-th
  // latency. An interval whose max does not bound every sample (samples out
  // of the percentiles: samples_all > count) is visited first.
  absl::StatusOr<std::vector<RankedOrder>> FindSlowest(int64_t run_id, const std::string& stage,
                                                       int64_t limit,
                                                       const TimeWindow& window) override {
    std::vector<RankedOrder> out;
    if (limit <= 0) return out;
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    const std::optional<int64_t> stage_id = StageIdOf(*dict, stage);
    if (!stage_id.has_value()) return out;
    // Intervals that may hold an order of the window.
    const int64_t from = window.since_utc_ns.has_value()
                             ? FloorTo(*window.since_utc_ns, dict->interval_ns)
                             : kMinTime;
    const int64_t to = window.until_utc_ns.value_or(kMaxTime);
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement iq, Prepare("SELECT start_utc_ns, max_ns, count, samples_all FROM intervals "
                          "WHERE run_id = ? AND stage_id = ? AND start_utc_ns >= ? AND "
                          "start_utc_ns < ?",
                          "reading a stage's intervals"));
    iq.Bind(1, run_id).Bind(2, *stage_id).Bind(3, from).Bind(4, to);
    std::unordered_map<int64_t, double> bound_of;  // interval start -> max latency in it
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, iq.Step());
      if (!row) break;
      const bool bounded = !iq.IsNull(1) && iq.Int(2) == iq.Int(3);
      // +1: samples hold latencies rounded to the ns, the max is exact.
      bound_of[iq.Int(0)] = bounded ? iq.Double(1) + 1 : std::numeric_limits<double>::infinity();
    }
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, window));
    struct Candidate {
      double bound;
      KeyRange range;
    };
    std::vector<Candidate> candidates;
    candidates.reserve(ranges.size());
    for (const KeyRange& r : ranges) {
      const auto it = bound_of.find(r.start_utc_ns);
      if (it != bound_of.end()) candidates.push_back({it->second, r});
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.bound != b.bound) return a.bound > b.bound;
      return a.range.start_utc_ns < b.range.start_utc_ns;
    });
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement scan, Prepare("SELECT order_id, samples FROM orders WHERE order_key BETWEEN ?1 AND "
                            "?2 AND +run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5",
                            "ranking orders"));
    // The best sample of each order seen, and those bests ranked.
    std::unordered_map<int64_t, Ranked> best;
    std::set<Ranked> top;
    const auto kth = [&]() -> std::optional<int64_t> {
      if (static_cast<int64_t>(top.size()) < limit) return std::nullopt;
      return std::prev(top.end())->latency_ns;
    };
    for (const Candidate& c : candidates) {
      const std::optional<int64_t> k = kth();
      if (k.has_value() && c.bound < static_cast<double>(*k)) break;
      const int64_t lo = std::max(c.range.start_utc_ns, window.since_utc_ns.value_or(kMinTime));
      const int64_t hi = std::min(c.range.start_utc_ns + dict->interval_ns,
                                  window.until_utc_ns.value_or(kMaxTime));
      scan.Reset();
      scan.Bind(1, c.range.first_key).Bind(2, c.range.last_key).Bind(3, run_id).Bind(4, lo);
      scan.Bind(5, hi);
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, scan.Step());
        if (!row) break;
        TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleCell> cells,
                                   Cells(scan.Blob(1), scan.Int(0)));
        for (const store::SampleCell& cell : cells) {
          if (cell.stage_id != *stage_id) continue;
          const Ranked r{cell.latency_ns, scan.Int(0), cell.flags};
          auto [it, fresh] = best.try_emplace(r.order_id, r);
          if (!fresh) {
            if (!(r < it->second)) continue;  // not slower than this order's best
            top.erase(it->second);
            it->second = r;
          }
          top.insert(r);
          if (static_cast<int64_t>(top.size()) > limit) top.erase(std::prev(top.end()));
        }
      }
    }
    for (const Ranked& r : top) {
      out.push_back({r.order_id, static_cast<double>(r.latency_ns), r.flags});
    }
    return out;
  }

  absl::StatusOr<std::optional<OrderRow>> FindOrder(int64_t run_id, int64_t order_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<OrderRow> all, OrderInstances(run_id, order_id));
    if (all.empty()) return std::optional<OrderRow>();
    return std::optional<OrderRow>(std::move(all.front()));
  }

  absl::StatusOr<std::vector<OrderRow>> OrderInstances(int64_t run_id,
                                                       int64_t order_id) override {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kOrderColumns,
                                      " FROM orders WHERE run_id = ? AND order_id = ? "
                                      "ORDER BY instance"),
                         "reading an order"));
    s.Bind(1, run_id).Bind(2, order_id);
    std::vector<OrderRow> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      out.push_back(ReadOrder(s));
    }
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> RunsWithOrder(int64_t order_id) override {
    // One index seek per run: (run_id, order_id, instance).
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM orders o "
                         "WHERE o.run_id = r.run_id AND o.order_id = ?) ORDER BY r.run_id",
                         "finding an order's runs"));
    s.Bind(1, order_id);
    std::vector<int64_t> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      out.push_back(s.Int(0));
    }
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> ChildOrders(int64_t run_id, int64_t order_id) override {
    // parent_order_id has no index: a scan of the run's orders (about 1 s
    // per 10 M orders).
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT order_id FROM orders WHERE run_id = ? AND parent_order_id = ? "
                         "ORDER BY first_utc_ns, order_id, instance",
                         "finding an order's children"));
    s.Bind(1, run_id).Bind(2, order_id);
    std::vector<int64_t> out;
    std::set<int64_t> seen;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      if (seen.insert(s.Int(0)).second) out.push_back(s.Int(0));
    }
    return out;
  }

  absl::StatusOr<std::vector<OrderRow>> OrdersByTime(int64_t run_id,
                                                     std::optional<int64_t> limit) override {
    std::vector<OrderRow> out;
    const auto by_time = [](const OrderRow& a, const OrderRow& b) {
      return std::tie(a.first_utc_ns, a.order_id, a.instance) <
             std::tie(b.first_utc_ns, b.order_id, b.instance);
    };
    if (!limit.has_value() || *limit < 0) {
      TICKTRACE_ASSIGN_OR_RETURN(
          Statement s, Prepare(absl::StrCat("SELECT ", kOrderColumns,
                                        " FROM orders WHERE run_id = ? "
                                        "ORDER BY first_utc_ns, order_id, instance"),
                           "listing orders"));
      s.Bind(1, run_id);
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
        if (!row) break;
        out.push_back(ReadOrder(s));
      }
      return out;
    }
    // The first `limit`: interval by interval (each one's orders sorted),
    // without sorting the run.
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<KeyRange> ranges, KeyRanges(run_id, TimeWindow{}));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kOrderColumns,
                                      " FROM orders o WHERE order_key BETWEEN ?1 AND ?2 AND "
                                      "+run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5"),
                         "listing orders"));
    for (const KeyRange& r : ranges) {
      if (static_cast<int64_t>(out.size()) >= *limit) break;
      s.Reset();
      s.Bind(1, r.first_key).Bind(2, r.last_key).Bind(3, run_id).Bind(4, r.start_utc_ns);
      s.Bind(5, r.start_utc_ns + dict->interval_ns);
      const size_t begin = out.size();
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
        if (!row) break;
        out.push_back(ReadOrder(s));
      }
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(begin), out.end(), by_time);
    }
    if (static_cast<int64_t>(out.size()) > *limit) out.resize(static_cast<size_t>(*limit));
    return out;
  }

  absl::StatusOr<std::vector<StampRow>> Stamps(int64_t run_id, int64_t order_id) override {
    return ReadStamps(run_id, order_id, std::nullopt);
  }

  absl::StatusOr<std::vector<StampRow>> StampsOfInstance(int64_t run_id, int64_t order_id,
                                                         int64_t instance) override {
    return ReadStamps(run_id, order_id, instance);
  }

  absl::StatusOr<std::vector<WindowStageStatsRow>> StageWindowStats(
      int64_t run_id, const TimeWindow& window) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_ASSIGN_OR_RETURN(const DetailCoverage coverage, DetailCompleteness(run_id, window));
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
    std::vector<WindowStageStatsRow> out;
    for (size_t id = 0; id < dict->stages.size(); ++id) {
      if (dict->stages[id].empty()) continue;
      store::Histogram merged;
      WindowStageStatsRow row;
      row.stage = dict->stages[id];
      int64_t intervals = 0;
      TICKTRACE_RETURN_IF_ERROR(ForEachInterval(
          run_id, static_cast<int64_t>(id), window,
          [&](int64_t, int64_t samples_all, const FlagCounts& flags,
              std::string_view histogram) {
            ++intervals;
            row.samples_all = row.samples_all.value_or(0) + samples_all;
            for (size_t f = 0; f < flags.size(); ++f) row.flag_counts[f] += flags[f];
            return merged.MergeEncoded(histogram);
          }));
      if (intervals == 0 || row.samples_all.value_or(0) == 0) continue;
      FinishWindowRow(merged, whole, coverage, &row);
      out.push_back(std::move(row));
    }
    std::stable_sort(out.begin(), out.end(), PipelineOrder());
    return out;
  }

  absl::StatusOr<std::vector<IntervalRow>> Intervals(int64_t run_id,
                                                     const std::optional<std::string>& stage,
                                                     const TimeWindow& window,
                                                     int64_t bucket_ns) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_RETURN_IF_ERROR(CheckBucket(bucket_ns, dict->interval_ns));
    // The orders of each bucket, from interval_detail.
    std::map<int64_t, BucketOrders> orders;
    {
      TICKTRACE_ASSIGN_OR_RETURN(
          Statement s, Prepare("SELECT start_utc_ns, orders, orders_kept, detail_deleted FROM "
                           "interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
                           "start_utc_ns < ?",
                           "reading interval_detail"));
      s.Bind(1, run_id).Bind(2, window.since_utc_ns.value_or(kMinTime));
      s.Bind(3, window.until_utc_ns.value_or(kMaxTime));
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
        if (!row) break;
        BucketOrders& o = orders[FloorTo(s.Int(0), bucket_ns)];
        o.orders += s.Int(1);
        o.kept += s.Int(2);
        o.deleted = o.deleted || s.Int(3) != 0;
      }
    }
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
    std::vector<std::pair<std::string, int64_t>> stages;
    for (size_t id = 0; id < dict->stages.size(); ++id) {
      if (dict->stages[id].empty() || (stage.has_value() && dict->stages[id] != *stage)) continue;
      stages.emplace_back(dict->stages[id], static_cast<int64_t>(id));
    }
    std::vector<IntervalRow> out;
    for (const auto& [name, id] : InPipelineOrder(std::move(stages), whole)) {
      struct Bucket {
        IntervalRow row;
        store::Histogram histogram;
      };
      std::map<int64_t, Bucket> buckets;
      TICKTRACE_RETURN_IF_ERROR(ForEachInterval(
          run_id, id, window,
          [&](int64_t start, int64_t samples_all, const FlagCounts& flags,
              std::string_view histogram) {
            Bucket& b = buckets[FloorTo(start, bucket_ns)];
            b.row.samples_all += samples_all;
            for (size_t f = 0; f < flags.size(); ++f) b.row.flag_counts[f] += flags[f];
            return b.histogram.MergeEncoded(histogram);
          }));
      for (auto& [start, b] : buckets) {
        if (b.row.samples_all == 0) continue;
        b.row.stage = name;
        b.row.start_utc_ns = start;
        FillFromHistogram(b.histogram, &b.row);
        SetBucketOrders(orders, &b.row);
        out.push_back(std::move(b.row));
      }
    }
    return out;
  }

  absl::Status ForEachIntervalHistogram(
      int64_t run_id, const TimeWindow& window,
      const std::function<absl::Status(const std::string&, int64_t, std::string_view)>& visit)
      override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT stage_id, start_utc_ns, histogram FROM intervals WHERE "
                         "run_id = ? AND start_utc_ns >= ? AND start_utc_ns < ? AND count > 0 "
                         "ORDER BY start_utc_ns, stage_id",
                         "reading intervals"));
    s.Bind(1, run_id).Bind(2, window.since_utc_ns.value_or(kMinTime));
    s.Bind(3, window.until_utc_ns.value_or(kMaxTime));
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      const int64_t id = s.Int(0);
      if (id < 0 || static_cast<size_t>(id) >= dict->stages.size() || dict->stages[id].empty()) {
        return absl::DataLossError(absl::StrCat(path_, ": interval ", s.Int(1), " names stage ",
                                                id, ", which the run's stages do not hold"));
      }
      if (absl::Status st = visit(dict->stages[id], s.Int(1), s.Blob(2)); !st.ok()) {
        return absl::Status(st.code(), absl::StrCat(path_, ": interval ", s.Int(1), " of stage ",
                                                    dict->stages[id], ": ", st.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DetailCoverage> DetailCompleteness(int64_t run_id,
                                                    const TimeWindow& window) override {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT count(*), sum(orders), sum(orders_kept), sum(detail_deleted != 0) "
                         "FROM interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
                         "start_utc_ns < ? AND orders > 0",
                         "reading interval_detail"));
    s.Bind(1, run_id).Bind(2, window.since_utc_ns.value_or(kMinTime));
    s.Bind(3, window.until_utc_ns.value_or(kMaxTime));
    DetailCoverage c;
    c.policy = dict->detail_policy;
    TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
    if (row) {
      c.intervals = s.Int(0);
      c.orders = s.Int(1);
      c.orders_kept = s.Int(2);
      c.intervals_deleted = s.Int(3);
    }
    return c;
  }

 private:
  absl::StatusOr<Statement> Prepare(std::string_view sql, absl::string_view what) {
    return Statement::Prepare(db_.get(), sql, absl::StrCat(path_, ": ", what));
  }

  // The run's dictionaries, read once (again with `refresh`, or when the run
  // is new to this reader: a live store grows them).
  absl::StatusOr<const RunDictionary*> Dictionary(int64_t run_id, bool refresh) {
    auto it = dictionaries_.find(run_id);
    if (it != dictionaries_.end() && !refresh) return &it->second;
    RunDictionary d;
    {
      TICKTRACE_ASSIGN_OR_RETURN(
          Statement s, Prepare("SELECT tsc_hz, interval_ns, detail FROM runs WHERE run_id = ?",
                           "reading a run"));
      s.Bind(1, run_id);
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) {
        return absl::NotFoundError(absl::StrCat("run ", run_id, " not found in ", path_));
      }
      d.tsc_hz = s.Double(0);
      d.interval_ns = std::max<int64_t>(1, s.Int(1));
      d.detail_policy = s.Text(2);
    }
    for (auto [sql, names] :
         {std::pair("SELECT name_id, name FROM names WHERE run_id = ?", &d.names),
          std::pair("SELECT stage_id, name FROM stages WHERE run_id = ?", &d.stages)}) {
      TICKTRACE_ASSIGN_OR_RETURN(Statement s, Prepare(sql, "reading names"));
      s.Bind(1, run_id);
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
        if (!row) break;
        const int64_t id = s.Int(0);
        if (id < 0 || id > (1 << 24)) continue;  // not one of ours
        if (names->size() <= static_cast<size_t>(id)) names->resize(static_cast<size_t>(id) + 1);
        (*names)[static_cast<size_t>(id)] = s.Text(1);
      }
    }
    RunDictionary& slot = dictionaries_[run_id];
    slot = std::move(d);
    return &slot;
  }

  static OrderKeyFields OrderFields(const Statement& s) {
    return OrderKeyFields{s.Int(0), s.Int(1), s.Int(2), s.Int(3)};
  }

  // The order-key ranges of the intervals that start in `window` (widened to
  // the interval holding `since`) and hold detail, by start.
  absl::StatusOr<std::vector<KeyRange>> KeyRanges(int64_t run_id, const TimeWindow& window) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT start_utc_ns, first_order_key, last_order_key FROM "
                         "interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
                         "start_utc_ns < ? AND first_order_key IS NOT NULL AND "
                         "detail_deleted = 0 ORDER BY start_utc_ns",
                         "reading interval_detail"));
    s.Bind(1, run_id);
    s.Bind(2, window.since_utc_ns.has_value() ? FloorTo(*window.since_utc_ns, dict->interval_ns)
                                              : kMinTime);
    s.Bind(3, window.until_utc_ns.value_or(kMaxTime));
    std::vector<KeyRange> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      out.push_back({s.Int(0), s.Int(1), s.Int(2)});
    }
    return out;
  }

  // Every sample (of `stage_id` when set) of the orders of `ranges` whose
  // first stamp is in `window`.
  absl::Status ScanSamples(int64_t run_id, const std::vector<KeyRange>& ranges,
                           std::optional<int64_t> stage_id, const TimeWindow& window,
                           const std::function<void(const SampleRow&)>& visit) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", kOrderSampleColumns,
                                      " FROM orders WHERE order_key BETWEEN ?1 AND ?2 AND "
                                      "+run_id = ?3 AND first_utc_ns >= ?4 AND first_utc_ns < ?5"),
                         "reading samples"));
    std::vector<SampleRow> rows;
    for (const KeyRange& r : ranges) {
      s.Reset();
      s.Bind(1, r.first_key).Bind(2, r.last_key).Bind(3, run_id);
      s.Bind(4, std::max(r.start_utc_ns, window.since_utc_ns.value_or(kMinTime)));
      s.Bind(5, std::min(r.start_utc_ns + dict->interval_ns,
                         window.until_utc_ns.value_or(kMaxTime)));
      for (;;) {
        TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
        if (!row) break;
        rows.clear();
        TICKTRACE_RETURN_IF_ERROR(OrderSamples(s, *dict, stage_id, &rows));
        for (const SampleRow& sample : rows) visit(sample);
      }
    }
    return absl::OkStatus();
  }

  // orders.samples of `order_id`, parsed.
  absl::StatusOr<std::vector<store::SampleCell>> Cells(std::string_view text, int64_t order_id) {
    absl::StatusOr<std::vector<store::SampleCell>> cells = store::ParseSampleCells(text);
    if (!cells.ok()) {
      return absl::DataLossError(
          absl::StrCat(path_, ": order ", order_id, ": ", cells.status().message()));
    }
    return cells;
  }

  // Appends the samples (of `stage_id` when set) of the order at `s`'s
  // current row (kOrderSampleColumns) to `out`, in samples order.
  absl::Status OrderSamples(const Statement& s, const RunDictionary& dict,
                            std::optional<int64_t> stage_id, std::vector<SampleRow>* out) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::SampleCell> cells, Cells(s.Blob(5), s.Int(0)));
    bool wanted = false;
    for (const store::SampleCell& c : cells) wanted = wanted || !stage_id || c.stage_id == *stage_id;
    if (!wanted) return absl::OkStatus();
    TICKTRACE_ASSIGN_OR_RETURN(const store::PackedDetail detail, UnpackOrderDetail(path_, s.Blob(4), s.Int(0)));
    const OrderKeyFields order = OrderFields(s);
    for (size_t seq = 0; seq < cells.size(); ++seq) {
      const store::SampleCell& c = cells[seq];
      if (stage_id && c.stage_id != *stage_id) continue;
      out->push_back(MakeSampleRow(dict, order, detail, static_cast<int64_t>(seq), c.stage_id,
                                   c.latency_ns, c.flags));
    }
    return absl::OkStatus();
  }

  // Calls `visit(start, samples_all, flags, encoded histogram)` for each
  // interval of the stage that starts in `window`, by start; an error it
  // returns (a bad histogram) stops the walk.
  absl::Status ForEachInterval(
      int64_t run_id, int64_t stage_id, const TimeWindow& window,
      const std::function<absl::Status(int64_t, int64_t, const FlagCounts&, std::string_view)>&
          visit) {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT ", IntervalColumns(),
                                      " FROM intervals WHERE run_id = ? AND stage_id = ? AND "
                                      "start_utc_ns >= ? AND start_utc_ns < ? "
                                      "ORDER BY start_utc_ns"),
                         "reading intervals"));
    s.Bind(1, run_id).Bind(2, stage_id).Bind(3, window.since_utc_ns.value_or(kMinTime));
    s.Bind(4, window.until_utc_ns.value_or(kMaxTime));
    FlagCounts flags{};
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      for (size_t f = 0; f < flags.size(); ++f) {
        flags[f] = s.Int(kIntervalFlagColumn + static_cast<int>(f));
      }
      if (absl::Status st = visit(s.Int(0), s.Int(1), flags, s.Blob(4)); !st.ok()) {
        return absl::DataLossError(absl::StrCat(path_, ": interval ", s.Int(0), " of stage ",
                                                stage_id, ": ", st.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<StampRow>> ReadStamps(int64_t run_id, int64_t order_id,
                                                   std::optional<int64_t> instance) {
    TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare(absl::StrCat("SELECT order_id, instance, first_utc_ns, first_tsc, detail "
                                      "FROM orders WHERE run_id = ? AND order_id = ?",
                                      instance.has_value() ? " AND instance = ?" : "",
                                      " ORDER BY instance"),
                         "reading an order's stamps"));
    s.Bind(1, run_id).Bind(2, order_id);
    if (instance.has_value()) s.Bind(3, *instance);
    std::vector<StampRow> out;
    for (;;) {
      TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
      if (!row) break;
      TICKTRACE_ASSIGN_OR_RETURN(store::PackedDetail detail, UnpackOrderDetail(path_, s.Blob(4), order_id));
      bool known = true;
      for (const store::PackedStamp& p : detail.stamps) known = known && p.name_id < dict->names.size();
      if (!known) {
        TICKTRACE_ASSIGN_OR_RETURN(dict, Dictionary(run_id, true));
      }
      std::vector<StampRow> rows = MakeStampRows(*dict, OrderFields(s), detail);
      out.insert(out.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
    }
    return out;
  }

  std::string path_;
  std::unique_ptr<TempDir> temp_;  // a migrated copy's directory; outlives db_
  Db db_;
  std::map<int64_t, RunDictionary> dictionaries_;
};

}  // namespace sqlite_reader

absl::StatusOr<std::unique_ptr<StoreReader>> OpenSqliteStoreReader(const std::string& path,
                                                                   OpenMode mode) {
  using namespace sqlite_reader;  // NOLINT: this file's own helpers
  if (path.empty()) return absl::InvalidArgumentError("--store: empty path");
  TICKTRACE_ASSIGN_OR_RETURN(Db db, OpenReadOnly(path, mode));
  TICKTRACE_ASSIGN_OR_RETURN(const int version, SchemaVersion(db.get(), path));
  if (version > store::kSqliteSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": store schema version ", version, " is newer than this viewer reads (",
        store::kSqliteSchemaVersion, "); use a newer ticktrace-view"));
  }
  if (version == store::kSqliteSchemaVersion) {
    return std::unique_ptr<StoreReader>(new SqliteStoreReader(path, std::move(db), nullptr));
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
  const bool writable = ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0;
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
