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
#include "ticktrace/view/query.h"

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

namespace {

// Binds and runs one INSERT; values are SQL literals already.
std::string Lit(const std::optional<int64_t>& v) { return v ? absl::StrCat(*v) : "NULL"; }
std::string Lit(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.17g", *v) : "NULL";
}
std::string Lit(double v) { return absl::StrFormat("%.17g", v); }
std::string Lit(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace

StoreWriter::StoreWriter(const std::string& path, int schema_version) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    ADD_FAILURE() << "cannot create " << path;
    return;
  }
  if (schema_version == 0) {
    Exec("BEGIN");
    return;
  }
  Exec("PRAGMA journal_mode=WAL");
  absl::StatusOr<std::string> schema = SchemaSqlFromDocs();
  if (!schema.ok()) {
    ADD_FAILURE() << schema.status();
    return;
  }
  Exec(*schema);
  Exec(absl::StrCat("INSERT INTO meta(key, value) VALUES('app','ticktrace'),('schema_version','",
                    schema_version, "')"));
  Exec("BEGIN");
}

StoreWriter::~StoreWriter() { Close(); }

void StoreWriter::Close() {
  if (db_ == nullptr) return;
  Exec("COMMIT");
  if (sqlite3_close(db_) != SQLITE_OK) ADD_FAILURE() << "sqlite3_close failed";
  db_ = nullptr;
}

void StoreWriter::Exec(const std::string& sql) {
  if (db_ == nullptr) return;
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    ADD_FAILURE() << "SQL failed: " << (error ? error : "?") << "\n  in: " << sql;
    sqlite3_free(error);
  }
}

void StoreWriter::AddRun(const RunInfo& r) {
  Exec(absl::StrCat(
      "INSERT INTO runs(run_id, session, host, started_utc_ns, ended_utc_ns, tsc_hz, "
      "calibration_source, spread_ppm, kernel_tsc_hz, tsc_step_ns, anchor_tsc, anchor_utc_ns, "
      "environment, settings, pipeline, pipeline_learned) VALUES(",
      r.run_id, ",", Lit(r.session), ",", Lit(r.host), ",", r.started_utc_ns, ",",
      Lit(r.ended_utc_ns), ",", Lit(r.tsc_hz), ",", Lit(r.calibration_source), ",",
      Lit(r.spread_ppm), ",", Lit(r.kernel_tsc_hz), ",", Lit(r.tsc_step_ns), ",", r.anchor_tsc,
      ",", r.anchor_utc_ns, ",", Lit(r.environment), ",", Lit(r.settings), ",", Lit(r.pipeline),
      ",", r.pipeline_learned ? 1 : 0, ")"));
}

void StoreWriter::AddProcess(int64_t run_id, const ProcessInfo& p) {
  Exec(absl::StrCat("INSERT INTO processes(run_id, process_id, pid, start_ticks, name, segment, "
                    "first_seen_utc_ns, exited_utc_ns) VALUES(",
                    run_id, ",", p.process_id, ",", p.pid, ",0,", Lit(p.name), ",",
                    Lit(p.segment), ",", Lit(p.first_seen_utc_ns), ",", Lit(p.exited_utc_ns),
                    ")"));
}

void StoreWriter::AddThread(int64_t run_id, const ThreadInfo& t) {
  Exec(absl::StrCat("INSERT INTO threads(run_id, process_id, slot, generation, tid, name, drained, "
                    "dropped) VALUES(", run_id, ",", t.process_id, ",", t.slot, ",",
                    t.generation, ",", t.tid, ",", Lit(t.name), ",", t.drained, ",", t.dropped,
                    ")"));
}

void StoreWriter::AddCounter(int64_t run_id, const std::string& name, int64_t value) {
  Exec(absl::StrCat("INSERT INTO counters(run_id, name, value) VALUES(", run_id, ",", Lit(name),
                    ",", value, ")"));
}

void StoreWriter::AddOrder(int64_t run_id, const OrderRow& o) {
  Exec(absl::StrCat("INSERT INTO orders(run_id, order_id, parent_order_id, first_utc_ns, total_ns, "
                    "complete, missing) VALUES(", run_id, ",", o.order_id, ",",
                    Lit(o.parent_order_id), ",", o.first_utc_ns, ",", Lit(o.total_ns), ",",
                    o.complete ? 1 : 0, ",",
                    o.missing.empty() ? std::string("NULL") : Lit(o.missing), ")"));
}

void StoreWriter::AddStamp(int64_t run_id, const StampRow& s) {
  Exec(absl::StrCat("INSERT INTO stamps(run_id, order_id, tag, kind, process_id, tid, cpu, "
                    "cpu_end, tsc, utc_ns, duration_ns, flags) VALUES(",
                    run_id, ",", s.order_id, ",", Lit(s.tag), ",", Lit(s.kind), ",",
                    s.process_id, ",", s.tid, ",", Lit(s.cpu), ",", Lit(s.cpu_end), ",", s.tsc,
                    ",", s.utc_ns, ",", Lit(s.duration_ns), ",", s.flags, ")"));
}

void StoreWriter::AddSample(int64_t run_id, const SampleRow& s) {
  Exec(absl::StrCat("INSERT INTO samples(run_id, order_id, stage, start_utc_ns, latency_ns, "
                    "process_begin, process_end, cpu_begin, cpu_end, flags) VALUES(",
                    run_id, ",", s.order_id, ",", Lit(s.stage), ",", s.start_utc_ns, ",",
                    Lit(s.latency_ns), ",", Lit(s.process_begin), ",", Lit(s.process_end), ",",
                    Lit(s.cpu_begin), ",", Lit(s.cpu_end), ",", s.flags, ")"));
}

void StoreWriter::AddStageStats(int64_t run_id, const StageStatsRow& s) {
  Exec(absl::StrCat("INSERT INTO stage_stats(run_id, stage, position, count, min_ns, max_ns, "
                    "mean_ns, p50_ns, p90_ns, p99_ns, p999_ns, migrated, negative, cross_core, "
                    "include_flagged) VALUES(", run_id, ",", Lit(s.stage), ",", s.position,
                    ",", s.count, ",", Lit(s.min_ns), ",", Lit(s.max_ns), ",", Lit(s.mean_ns),
                    ",", Lit(s.p50_ns), ",", Lit(s.p90_ns), ",", Lit(s.p99_ns), ",",
                    Lit(s.p999_ns), ",", s.migrated, ",", s.negative, ",", s.cross_core, ",",
                    s.include_flagged ? 1 : 0, ")"));
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

constexpr int64_t kAnchorTsc = 10'000'000'000;

// The flag bits of docs/store.md ("Flags"), spelled out so that the rows do
// not follow a change of the viewer's constants.
constexpr uint32_t kMigrated = 1;
constexpr uint32_t kNegative = 2;
constexpr uint32_t kCrossCore = 4;

// The TSC value the known run maps to `utc_ns` (2 ticks per ns).
int64_t TscAt(int64_t utc_ns) { return kAnchorTsc + 2 * (utc_ns - KnownStore::BaseUtcNs()); }

StampRow Stamp(int64_t order, const std::string& tag, int64_t process_id, int64_t tid,
               std::optional<int64_t> cpu, int64_t utc_ns, uint32_t flags = 0) {
  StampRow s;
  s.order_id = order;
  s.tag = tag;
  s.kind = "stamp";
  s.process_id = process_id;
  s.tid = tid;
  s.cpu = cpu;
  s.tsc = TscAt(utc_ns);
  s.utc_ns = utc_ns;
  s.flags = flags;
  return s;
}

SampleRow Sample(int64_t order, const std::string& stage, int64_t start, double latency,
                 int64_t pb, int64_t pe, int64_t cb, int64_t ce, uint32_t flags = 0) {
  SampleRow s;
  s.order_id = order;
  s.stage = stage;
  s.start_utc_ns = start;
  s.latency_ns = latency;
  s.process_begin = pb;
  s.process_end = pe;
  s.cpu_begin = cb;
  s.cpu_end = ce;
  s.flags = flags;
  return s;
}

struct KnownRun2 {
  std::vector<OrderRow> orders;
  std::vector<StampRow> stamps;
  std::vector<SampleRow> samples;
};

KnownRun2 BuildRun2() {
  KnownRun2 run;
  for (int64_t i = 1; i <= 100; ++i) {
    const int64_t first = KnownStore::FirstUtcNs(i);
    const int64_t strat = first + static_cast<int64_t>(KnownStore::MdToStrategyNs(i));
    const int64_t gw = strat + static_cast<int64_t>(KnownStore::StrategyToGatewayNs(i));
    const uint32_t md_flags = i == 13 ? (kNegative | kCrossCore) : 0;
    const uint32_t gw_flags = i == 7 ? kCrossCore : 0;
    const uint32_t risk_flags = i == 21 ? kMigrated : 0;
    run.stamps.push_back(Stamp(i, "md", 1, 2001, 1, first));
    run.stamps.push_back(Stamp(i, "strategy", 2, 2002, 2, strat, md_flags));
    StampRow risk = Stamp(i, "risk", 2, 2002, 2, strat + 10, risk_flags);
    risk.kind = "span";
    risk.cpu_end = i == 21 ? 3 : 2;
    risk.duration_ns = KnownStore::RiskNs(i);
    run.stamps.push_back(risk);
    run.stamps.push_back(Stamp(i, "gateway", 3, 2003, 3, gw, gw_flags));
    run.samples.push_back(
        Sample(i, "md->strategy", first, KnownStore::MdToStrategyNs(i), 1, 2, 1, 2, md_flags));
    run.samples.push_back(Sample(i, "risk", strat + 10, KnownStore::RiskNs(i), 2, 2, 2,
                                 i == 21 ? 3 : 2, risk_flags));
    run.samples.push_back(Sample(i, "strategy->gateway", strat, KnownStore::StrategyToGatewayNs(i),
                                 2, 3, 2, 3, gw_flags));
    const double total = KnownStore::MdToStrategyNs(i) + KnownStore::StrategyToGatewayNs(i);
    run.samples.push_back(Sample(i, "total", first, total, 1, 3, 1, 3));
    OrderRow o;
    o.order_id = i;
    o.first_utc_ns = first;
    o.total_ns = total;
    o.complete = true;
    run.orders.push_back(o);
  }
  // 101: incomplete, only its md stamp, read with plain rdtsc (no core).
  {
    const int64_t first = KnownStore::FirstUtcNs(101);
    run.stamps.push_back(Stamp(101, "md", 1, 2001, std::nullopt, first));
    OrderRow o;
    o.order_id = 101;
    o.first_utc_ns = first;
    o.complete = false;
    o.missing = "strategy,gateway";
    run.orders.push_back(o);
  }
  // 102: linked to 50 (an amend): strategy 300 µs after 50's first stamp,
  // gateway 1.2 µs later. Its total runs from 50's first stamp.
  {
    const int64_t parent_first = KnownStore::FirstUtcNs(50);
    const int64_t strat = parent_first + 300'000;
    const int64_t gw = strat + 1200;
    run.stamps.push_back(Stamp(102, "strategy", 2, 2002, 2, strat));
    run.stamps.push_back(Stamp(102, "gateway", 3, 2003, 3, gw));
    run.samples.push_back(Sample(102, "strategy->gateway", strat, 1200, 2, 3, 2, 3));
    run.samples.push_back(Sample(102, "total", parent_first, 301'200, 1, 3, 1, 3));
    OrderRow o;
    o.order_id = 102;
    o.parent_order_id = 50;
    o.first_utc_ns = parent_first;
    o.total_ns = 301'200;
    o.complete = true;
    run.orders.push_back(o);
  }
  return run;
}

// Exact statistics, written independently of the viewer's own.
StageStatsRow StatsOf(const std::string& stage, int64_t position,
                      const std::vector<SampleRow>& samples, std::optional<double> marker) {
  StageStatsRow row;
  row.stage = stage;
  row.position = position;
  std::vector<double> v;
  for (const SampleRow& s : samples) {
    if (s.stage != stage) continue;
    row.migrated += (s.flags & kMigrated) ? 1 : 0;
    row.negative += (s.flags & kNegative) ? 1 : 0;
    row.cross_core += (s.flags & kCrossCore) ? 1 : 0;
    // The documented policy (docs/store.md, "Flagged samples"): migrated and
    // negative samples are out of the percentiles, cross_core alone is in.
    // Spelled out here rather than taken from the viewer's kExcludedFlags.
    if ((s.flags & (kMigrated | kNegative)) == 0) v.push_back(s.latency_ns);
  }
  std::sort(v.begin(), v.end());
  row.count = static_cast<int64_t>(v.size());
  if (v.empty()) return row;
  const auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()) - 1e-9));
    return v[std::max<size_t>(rank, 1) - 1];
  };
  double sum = 0;
  for (double x : v) sum += x;
  row.min_ns = v.front();
  row.max_ns = v.back();
  row.mean_ns = sum / static_cast<double>(v.size());
  // As the collector writes them (DESIGN §5): a tail percentile needs
  // 1 / (1 - q) samples (10, 100, 1000), else NULL.
  const auto stored = [&](double p, size_t min_samples) -> std::optional<double> {
    if (v.size() < min_samples) return std::nullopt;
    return marker.value_or(pct(p));
  };
  row.p50_ns = stored(0.5, 1);
  row.p90_ns = stored(0.9, 10);
  row.p99_ns = stored(0.99, 100);
  row.p999_ns = stored(0.999, 1000);
  return row;
}

}  // namespace

std::vector<SampleRow> KnownSamples() { return BuildRun2().samples; }

void WriteKnownStore(const std::string& path, std::optional<double> stats_marker) {
  StoreWriter w(path);
  const int64_t base = KnownStore::BaseUtcNs();

  // Run 1: an hour earlier, one order with ID 1.
  RunInfo r1;
  r1.run_id = 1;
  r1.session = "old";
  r1.host = "testhost";
  r1.started_utc_ns = base - 3'600'000'000'000;
  r1.ended_utc_ns = r1.started_utc_ns + 1'000'000'000;
  r1.tsc_hz = 2e9;
  r1.calibration_source = "given";
  r1.anchor_tsc = 1000;
  r1.anchor_utc_ns = r1.started_utc_ns;
  r1.environment = "[]";
  r1.settings = "{}";
  r1.pipeline = "md,gateway";
  w.AddRun(r1);
  w.AddProcess(1, {1, 900, "md", "ticktrace.old.900", std::nullopt, std::nullopt});
  StampRow s1;
  s1.order_id = 1;
  s1.tag = "md";
  s1.kind = "stamp";
  s1.process_id = 1;
  s1.tid = 901;
  s1.cpu = 0;
  s1.tsc = 2000;
  s1.utc_ns = r1.started_utc_ns + 500;
  w.AddStamp(1, s1);
  s1.tag = "gateway";
  s1.tsc = 12000;
  s1.utc_ns += 5000;
  w.AddStamp(1, s1);
  OrderRow o1;
  o1.order_id = 1;
  o1.first_utc_ns = r1.started_utc_ns + 500;
  o1.total_ns = 5000;
  o1.complete = true;
  w.AddOrder(1, o1);
  w.AddSample(1, Sample(1, "md->gateway", o1.first_utc_ns, 5000, 1, 1, 0, 0));
  w.AddSample(1, Sample(1, "total", o1.first_utc_ns, 5000, 1, 1, 0, 0));
  std::vector<SampleRow> run1_samples = {Sample(1, "md->gateway", 0, 5000, 1, 1, 0, 0),
                                         Sample(1, "total", 0, 5000, 1, 1, 0, 0)};
  w.AddStageStats(1, StatsOf("md->gateway", 0, run1_samples, std::nullopt));
  w.AddStageStats(1, StatsOf("total", 1, run1_samples, std::nullopt));
  w.AddCounter(1, "drained", 2);
  w.AddCounter(1, "orders_complete", 1);

  // Run 2: the known pipeline.
  RunInfo r2;
  r2.run_id = 2;
  r2.session = "known";
  r2.host = "testhost";
  r2.started_utc_ns = base;
  r2.ended_utc_ns = base + 200'000'000;
  r2.tsc_hz = KnownStore::kTscHz;
  r2.calibration_source = "cpuid-0x15";
  r2.spread_ppm = 1.5;
  r2.kernel_tsc_hz = 2e9;
  r2.tsc_step_ns = 0.5;
  r2.anchor_tsc = kAnchorTsc;
  r2.anchor_utc_ns = base;
  r2.environment = R"([{"name":"constant_tsc","value":"yes","meaning":"","warning":""}])";
  r2.settings = R"({"pipeline":"md,strategy,gateway","order_timeout_ms":100})";
  r2.pipeline = "md,strategy,gateway";
  w.AddRun(r2);
  w.AddProcess(2, {1, 1001, "md", "ticktrace.known.1001", base, std::nullopt});
  w.AddProcess(2, {2, 1002, "strategy", "ticktrace.known.1002", base, std::nullopt});
  w.AddProcess(2, {3, 1003, "gateway", "ticktrace.known.1003", base, std::nullopt});
  w.AddThread(2, {1, 0, 0, 2001, "md-rx", 202, 3});
  w.AddThread(2, {2, 0, 0, 2002, "strat-main", 302, 0});
  w.AddThread(2, {3, 0, 0, 2003, "gw-tx", 101, 0});
  const KnownRun2 run = BuildRun2();
  for (const OrderRow& o : run.orders) w.AddOrder(2, o);
  for (const StampRow& s : run.stamps) w.AddStamp(2, s);
  for (const SampleRow& s : run.samples) w.AddSample(2, s);
  const char* stages[] = {"md->strategy", "risk", "strategy->gateway", "total"};
  for (int p = 0; p < 4; ++p) w.AddStageStats(2, StatsOf(stages[p], p, run.samples, stats_marker));
  w.AddCounter(2, "drained", 405);
  w.AddCounter(2, "dropped", 3);
  w.AddCounter(2, "malformed", 1);
  w.AddCounter(2, "orders_complete", 101);
  w.AddCounter(2, "orders_incomplete", 1);
  w.AddCounter(2, "samples_not_stored", 0);
  w.AddCounter(2, "missing_stage:strategy", 1);
  w.AddCounter(2, "missing_stage:gateway", 1);
  w.Close();
}

}  // namespace ticktrace::view::testing
