#include "store_fixture.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"
#include "store/sqlite/sqlite_writer.h"

namespace ticktrace::view::testing {

absl::StatusOr<std::string> SchemaSqlFromDocs() {
  const std::string path = std::string(TICKTRACE_SOURCE_DIR) + "/docs/store.md";
  const std::string text = ReadFile(path);
  if (text.empty()) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  const std::string open = "```sql\n";
  const size_t begin = text.find(open);
  if (begin == std::string::npos) {
    return absl::NotFoundError(absl::StrCat(path, ": no ```sql block"));
  }
  const size_t end = text.find("```", begin + open.size());
  if (end == std::string::npos) return absl::NotFoundError(absl::StrCat(path, ": unclosed block"));
  return text.substr(begin + open.size(), end - begin - open.size());
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = absl::StrCat(base != nullptr && *base != '\0' ? base : "/tmp",
                                   "/ticktrace-view-test.XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ << " failed";
  }
  path_ = templ;
}

TempDir::~TempDir() {
  for (const std::string& name : List()) std::remove(File(name).c_str());
  ::rmdir(path_.c_str());
}

std::vector<std::string> TempDir::List() const {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path_.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

FileSnapshot Snapshot(const std::string& path) {
  FileSnapshot snap;
  snap.bytes = ReadFile(path);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) snap.mtime = st.st_mtim;
  return snap;
}

void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << path;
    sqlite3_close(db);
    return;
  }
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    ADD_FAILURE() << "SQL failed: " << (error ? error : "?") << "\n  in: " << sql;
    sqlite3_free(error);
  }
  sqlite3_close(db);
}

store::StageKind KindOfStage(const std::string& stage) {
  if (stage == store::kTotalStage) return store::StageKind::kTotal;
  if (stage.find(store::kStageArrow) != std::string::npos) return store::StageKind::kTransition;
  return store::StageKind::kSpan;
}

namespace {

int64_t IntervalOf(int64_t utc_ns, int64_t interval_ns) {
  const int64_t q = utc_ns / interval_ns;
  return (utc_ns % interval_ns < 0 ? q - 1 : q) * interval_ns;
}

// What the collector's analysis sends the writer for `run`: per stage and
// interval the delta, per interval the orders.
struct Intervals {
  std::vector<store::IntervalDelta> deltas;
  std::vector<store::IntervalOrders> orders;
};

Intervals IntervalsOf(const FixtureRun& run) {
  std::map<std::pair<std::string, int64_t>, store::IntervalDelta> deltas;
  std::map<int64_t, uint64_t> orders;
  for (const store::OrderDetail& o : run.orders) {
    const int64_t start = IntervalOf(o.first_utc_ns, run.meta.interval_ns);
    ++orders[start];
    for (const store::SampleDetail& s : o.samples) {
      store::IntervalDelta& d = deltas[{s.stage, start}];
      d.stage = s.stage;
      d.kind = KindOfStage(s.stage);
      d.start_utc_ns = start;
      ++d.samples_all;
      for (size_t f = 0; f < store::kFlagNames.size(); ++f) {
        if (s.flags & store::kFlagNames[f].bit) ++d.flag_counts[f];
      }
      if (run.include_flagged || (s.flags & store::kFlagsExcludedByDefault) == 0) {
        d.histogram.Add(s.latency_ns);
      }
    }
  }
  Intervals out;
  for (auto& [key, d] : deltas) out.deltas.push_back(std::move(d));
  for (const auto& [start, n] : orders) out.orders.push_back({start, n, 0});
  return out;
}

// The whole-run stage_stats, as the collector computes them: the merge of
// the stage's intervals (or the marker).
std::vector<store::StageStatsRow> StageStatsOf(const FixtureRun& run,
                                               const std::vector<store::IntervalDelta>& deltas) {
  std::map<std::string, store::StageStatsRow> rows;
  std::map<std::string, store::Histogram> merged;
  for (const store::IntervalDelta& d : deltas) {
    store::StageStatsRow& row = rows[d.stage];
    row.stage = d.stage;
    row.samples_all = row.samples_all.value_or(0) + static_cast<int64_t>(d.samples_all);
    for (size_t f = 0; f < row.flag_counts.size(); ++f) row.flag_counts[f] += d.flag_counts[f];
    merged[d.stage].Merge(d.histogram);
  }
  std::vector<std::string> order = run.stage_order;
  for (const auto& [stage, row] : rows) {
    if (std::find(order.begin(), order.end(), stage) == order.end()) order.push_back(stage);
  }
  std::vector<store::StageStatsRow> out;
  for (const std::string& stage : order) {
    auto it = rows.find(stage);
    if (it == rows.end()) continue;
    store::StageStatsRow row = it->second;
    const store::Histogram& h = merged[stage];
    row.position = static_cast<int>(out.size());
    row.include_flagged = run.include_flagged;
    row.count = h.count();
    if (h.count() > 0) {
      row.min_ns = h.min();
      row.max_ns = h.max();
      row.mean_ns = h.mean();
      const auto pct = [&](double percent) -> std::optional<double> {
        if (h.count() < store::MinSamplesForPercentile(percent)) return std::nullopt;
        return run.stats_marker.value_or(h.Quantile(percent / 100));
      };
      row.p50_ns = pct(50);
      row.p90_ns = pct(90);
      row.p99_ns = pct(99);
      row.p999_ns = pct(99.9);
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

void WriteStore(const std::string& path, const std::vector<FixtureRun>& runs) {
  auto writer = store::SqliteWriter::OpenOrCreate(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const FixtureRun& run : runs) {
    absl::StatusOr<int64_t> run_id = (*writer)->BeginRun(run.meta);
    ASSERT_TRUE(run_id.ok()) << run_id.status();
    const Intervals intervals = IntervalsOf(run);
    store::Snapshot snapshot = run.snapshot;
    snapshot.stages = StageStatsOf(run, intervals.deltas);
    std::vector<store::OrderDetail> kept;
    for (const store::OrderDetail& o : run.orders) {
      if (!run.drop_detail || !run.drop_detail(o)) kept.push_back(o);
    }
    uint64_t already_stored = 0;
    const absl::Status written = (*writer)->Write(*run_id, intervals.deltas, intervals.orders,
                                                  kept, &snapshot, &already_stored);
    ASSERT_TRUE(written.ok()) << written;
    EXPECT_EQ(already_stored, 0u);
    if (run.ended_utc_ns.has_value()) {
      const absl::Status ended = (*writer)->EndRun(*run_id, *run.ended_utc_ns);
      ASSERT_TRUE(ended.ok()) << ended;
    }
  }
}

// ---- The known data set ----------------------------------------------------

int64_t KnownStore::BaseUtcNs() {
  return absl::ToUnixNanos(absl::FromCivil(absl::CivilSecond(2026, 11, 30, 8, 0, 0),
                                           absl::UTCTimeZone()));
}
double KnownStore::MdToStrategyNs(int64_t order) { return order == 13 ? -5.0 : 10.0 * order; }
double KnownStore::StrategyToGatewayNs(int64_t order) { return 1000.0 + order; }
double KnownStore::RiskNs(int64_t order) { return 100.0 + order; }
int64_t KnownStore::FirstUtcNs(int64_t order) { return BaseUtcNs() + order * 1'000'000; }

namespace {

constexpr uint64_t kAnchorTsc = 10'000'000'000;

// The flag bits of docs/store.md ("Flags"), spelled out so that the rows do
// not follow a change of the store library's constants.
constexpr uint32_t kMigrated = 1;
constexpr uint32_t kNegative = 2;
constexpr uint32_t kCrossCore = 4;

// The TSC value the known run maps to `utc_ns` (2 ticks per ns).
uint64_t TscAt(int64_t utc_ns) {
  return kAnchorTsc + static_cast<uint64_t>(2 * (utc_ns - KnownStore::BaseUtcNs()));
}

store::StampDetail Stamp(const std::string& tag, uint32_t process_id, uint32_t tid, int32_t cpu,
                         int64_t utc_ns, uint32_t flags = 0) {
  return {.tag = tag,
          .process_id = process_id,
          .tid = tid,
          .cpu = cpu,
          .tsc = TscAt(utc_ns),
          .utc_ns = utc_ns,
          .flags = flags};
}

store::SampleDetail Sample(const std::string& stage, int64_t start, double latency, int32_t pb,
                           int32_t pe, int32_t cb, int32_t ce, uint32_t flags = 0) {
  return {.stage = stage,
          .start_utc_ns = start,
          .latency_ns = latency,
          .process_begin = pb,
          .process_end = pe,
          .cpu_begin = cb,
          .cpu_end = ce,
          .flags = flags};
}

// first_tsc / first_tsc_utc_ns from the order's own stamps.
void SetFirstTsc(store::OrderDetail* o) {
  for (const store::StampDetail& s : o->stamps) {
    if (o->first_tsc == 0 || s.tsc < o->first_tsc) {
      o->first_tsc = s.tsc;
      o->first_tsc_utc_ns = s.utc_ns;
    }
  }
}

std::vector<store::OrderDetail> Run2Orders() {
  std::vector<store::OrderDetail> orders;
  for (int64_t i = 1; i <= 100; ++i) {
    const int64_t first = KnownStore::FirstUtcNs(i);
    const int64_t strat = first + static_cast<int64_t>(KnownStore::MdToStrategyNs(i));
    const int64_t gw = strat + static_cast<int64_t>(KnownStore::StrategyToGatewayNs(i));
    const uint32_t md_flags = i == 13 ? (kNegative | kCrossCore) : 0;
    const uint32_t gw_flags = i == 7 ? kCrossCore : 0;
    const uint32_t risk_flags = i == 21 ? kMigrated : 0;
    store::OrderDetail o;
    o.order_id = static_cast<uint64_t>(i);
    o.first_utc_ns = first;
    o.stamps.push_back(Stamp("md", 1, 2001, 1, first));
    o.stamps.push_back(Stamp("strategy", 2, 2002, 2, strat, md_flags));
    store::StampDetail risk = Stamp("risk", 2, 2002, 2, strat + 10, risk_flags);
    risk.is_span = true;
    risk.cpu_end = i == 21 ? 3 : 2;
    risk.duration_ns = KnownStore::RiskNs(i);
    o.stamps.push_back(risk);
    o.stamps.push_back(Stamp("gateway", 3, 2003, 3, gw, gw_flags));
    o.samples.push_back(
        Sample("md->strategy", first, KnownStore::MdToStrategyNs(i), 1, 2, 1, 2, md_flags));
    o.samples.push_back(
        Sample("risk", strat + 10, KnownStore::RiskNs(i), 2, 2, 2, i == 21 ? 3 : 2, risk_flags));
    o.samples.push_back(Sample("strategy->gateway", strat, KnownStore::StrategyToGatewayNs(i), 2,
                               3, 2, 3, gw_flags));
    const double total = KnownStore::MdToStrategyNs(i) + KnownStore::StrategyToGatewayNs(i);
    o.samples.push_back(Sample("total", first, total, 1, 3, 1, 3));
    o.total_ns = total;
    o.complete = true;
    SetFirstTsc(&o);
    orders.push_back(std::move(o));
  }
  // 101: incomplete, only its md stamp, read with plain rdtsc (no core).
  {
    store::OrderDetail o;
    o.order_id = 101;
    o.first_utc_ns = KnownStore::FirstUtcNs(101);
    o.stamps.push_back(Stamp("md", 1, 2001, -1, o.first_utc_ns));
    o.complete = false;
    o.missing = "strategy,gateway";
    SetFirstTsc(&o);
    orders.push_back(std::move(o));
  }
  // 102: linked to 50 (an amend): strategy 300 µs after 50's first stamp,
  // gateway 1.2 µs later. Its total runs from 50's first stamp.
  {
    const int64_t parent_first = KnownStore::FirstUtcNs(50);
    const int64_t strat = parent_first + 300'000;
    const int64_t gw = strat + 1200;
    store::OrderDetail o;
    o.order_id = 102;
    o.parent_order_id = 50;
    o.first_utc_ns = parent_first;
    o.stamps.push_back(Stamp("strategy", 2, 2002, 2, strat));
    o.stamps.push_back(Stamp("gateway", 3, 2003, 3, gw));
    o.samples.push_back(Sample("strategy->gateway", strat, 1200, 2, 3, 2, 3));
    o.samples.push_back(Sample("total", parent_first, 301'200, 1, 3, 1, 3));
    o.total_ns = 301'200;
    o.complete = true;
    SetFirstTsc(&o);
    orders.push_back(std::move(o));
  }
  return orders;
}

store::ProcessRow Process(uint32_t id, uint32_t pid, const std::string& name,
                          const std::string& segment, int64_t first_seen_utc_ns) {
  return {.process_id = id,
          .pid = pid,
          .name = name,
          .segment = segment,
          .first_seen_utc_ns = first_seen_utc_ns,
          .exited_utc_ns = std::nullopt};
}

store::ThreadRow Thread(uint32_t process_id, uint32_t tid, const std::string& name,
                        uint64_t drained, uint64_t dropped) {
  store::ThreadRow t;
  t.process_id = process_id;
  t.tid = tid;
  t.name = name;
  t.drained = drained;
  t.dropped = dropped;
  return t;
}

}  // namespace

std::vector<FixtureRun> KnownRuns(const KnownStoreOptions& options) {
  const int64_t base = KnownStore::BaseUtcNs();
  std::vector<FixtureRun> runs(2);

  // Run 1: an hour earlier, one order with ID 1.
  FixtureRun& r1 = runs[0];
  r1.meta.session = "old";
  r1.meta.host = "testhost";
  r1.meta.started_utc_ns = base - 3'600'000'000'000;
  r1.ended_utc_ns = r1.meta.started_utc_ns + 1'000'000'000;
  r1.meta.tsc_hz = 2e9;
  r1.meta.calibration_source = "given";
  r1.meta.anchor_tsc = 1000;
  r1.meta.anchor_utc_ns = r1.meta.started_utc_ns;
  r1.meta.pipeline = "md,gateway";
  r1.meta.interval_ns = KnownStore::kIntervalNs;
  r1.snapshot.processes.push_back(Process(1, 900, "md", "ticktrace.old.900", 0));
  r1.stage_order = {"md->gateway", "total"};
  {
    store::OrderDetail o;
    o.order_id = 1;
    o.first_utc_ns = r1.meta.started_utc_ns + 500;
    store::StampDetail s{
        .tag = "md", .process_id = 1, .tid = 901, .cpu = 0, .tsc = 2000, .utc_ns = o.first_utc_ns};
    o.stamps.push_back(s);
    s.tag = "gateway";
    s.tsc = 12000;
    s.utc_ns += 5000;
    o.stamps.push_back(s);
    o.samples.push_back(Sample("md->gateway", o.first_utc_ns, 5000, 1, 1, 0, 0));
    o.samples.push_back(Sample("total", o.first_utc_ns, 5000, 1, 1, 0, 0));
    o.total_ns = 5000;
    o.complete = true;
    SetFirstTsc(&o);
    r1.orders.push_back(std::move(o));
  }
  r1.snapshot.counters = {{"drained", 2}, {"orders_complete", 1}};

  // Run 2: the known pipeline.
  FixtureRun& r2 = runs[1];
  r2.meta.session = "known";
  r2.meta.host = "testhost";
  r2.meta.started_utc_ns = base;
  r2.ended_utc_ns = base + 200'000'000;
  r2.meta.tsc_hz = KnownStore::kTscHz;
  r2.meta.calibration_source = "cpuid-0x15";
  r2.meta.spread_ppm = 1.5;
  r2.meta.kernel_tsc_hz = 2e9;
  r2.meta.tsc_step_ns = 0.5;
  r2.meta.anchor_tsc = kAnchorTsc;
  r2.meta.anchor_utc_ns = base;
  r2.meta.environment_json = R"([{"name":"constant_tsc","value":"yes","meaning":"","warning":""}])";
  r2.meta.settings_json = R"({"pipeline":"md,strategy,gateway","order_timeout_ms":100})";
  r2.meta.pipeline = "md,strategy,gateway";
  r2.meta.interval_ns = KnownStore::kIntervalNs;
  r2.snapshot.processes = {Process(1, 1001, "md", "ticktrace.known.1001", base),
                           Process(2, 1002, "strategy", "ticktrace.known.1002", base),
                           Process(3, 1003, "gateway", "ticktrace.known.1003", base)};
  r2.snapshot.threads = {Thread(1, 2001, "md-rx", 202, 3), Thread(2, 2002, "strat-main", 302, 0),
                         Thread(3, 2003, "gw-tx", 101, 0)};
  r2.snapshot.counters = {{"drained", 405},
                          {"dropped", 3},
                          {"malformed", 1},
                          {"orders_complete", 101},
                          {"orders_incomplete", 1},
                          {"samples_not_stored", 0},
                          {"missing_stage:strategy", 1},
                          {"missing_stage:gateway", 1}};
  r2.stage_order = {"md->strategy", "risk", "strategy->gateway", "total"};
  r2.stats_marker = options.stats_marker;
  r2.include_flagged = options.include_flagged;
  r2.orders = Run2Orders();
  if (options.detail_sampled) {
    r2.meta.detail = store::DetailPolicy::kTail;
    r2.drop_detail = [](const store::OrderDetail& o) {
      return o.order_id <= 100 && o.order_id % 10 != 0 && o.flags() == 0;
    };
  }
  return runs;
}

void WriteKnownStore(const std::string& path, const KnownStoreOptions& options) {
  WriteStore(path, KnownRuns(options));
}

std::vector<store::SampleRow> KnownSamples() {
  std::vector<store::SampleRow> rows;
  for (const store::OrderDetail& o : Run2Orders()) {
    for (const store::SampleDetail& s : o.samples) {
      store::SampleRow r;
      r.order_id = static_cast<int64_t>(o.order_id);
      r.instance = o.instance;
      r.stage = s.stage;
      r.start_utc_ns = s.start_utc_ns;
      r.latency_ns = s.latency_ns;
      r.process_begin = s.process_begin;
      r.process_end = s.process_end;
      r.cpu_begin = s.cpu_begin;
      r.cpu_end = s.cpu_end;
      r.flags = s.flags;
      rows.push_back(r);
    }
  }
  return rows;
}

FixtureRun GivenClockRun(const std::string& session) {
  FixtureRun run;
  run.meta.session = session;
  run.meta.host = "h";
  run.meta.tsc_hz = 1e9;
  run.meta.calibration_source = "given";
  return run;
}

std::unique_ptr<store::StoreReader> OpenStore(const std::string& path) {
  absl::StatusOr<std::unique_ptr<store::StoreReader>> store = store::StoreReader::Open(path);
  if (!store.ok()) {
    ADD_FAILURE() << path << ": " << store.status();
    return nullptr;
  }
  return std::move(*store);
}

std::unique_ptr<store::Writer> OpenWriterWithRun(const std::string& path,
                                                 const std::string& session, store::RunMeta* run) {
  absl::StatusOr<std::unique_ptr<store::SqliteWriter>> writer =
      store::SqliteWriter::OpenOrCreate(path);
  if (!writer.ok()) {
    ADD_FAILURE() << path << ": " << writer.status();
    return nullptr;
  }
  run->session = session;
  run->host = "h";
  run->tsc_hz = 1e9;
  run->calibration_source = "given";
  if (absl::Status begun = (*writer)->BeginRun(*run).status(); !begun.ok()) {
    ADD_FAILURE() << path << ": " << begun;
    return nullptr;
  }
  return std::move(*writer);
}

const SummaryStage* FindStage(const Summary& summary, const std::string& stage) {
  for (const SummaryStage& row : summary.stages) {
    if (row.stage == stage) return &row;
  }
  ADD_FAILURE() << "no stage " << stage;
  return nullptr;
}

void KnownStoreTest::SetUp() {
  WriteKnownStore(dir_.File("known.db"));
  store_ = OpenStore(dir_.File("known.db"));
  ASSERT_NE(store_, nullptr);
}

}  // namespace ticktrace::view::testing
