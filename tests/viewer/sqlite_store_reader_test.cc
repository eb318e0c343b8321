// The schema-2 store::StoreReader (ticktrace/store/reader.h) against real SQLite files written
// by the store library's SqliteWriter. Expected values come from the inputs:
// hand-chosen orders, or generated orders aggregated here by the rules of
// docs/store.md (an order's samples go to the interval of its first stamp;
// flags in store::kFlagsExcludedByDefault stay out of the histogram), never from the
// reader. Percentiles are checked against the exact nearest-rank value within
// the histogram's precision (1/256 relative).

#include "ticktrace/store/reader.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"
#include "store/sqlite/sqlite_writer.h"
#include "gtest/gtest.h"

namespace ticktrace::view {
namespace {

using store::OrderDetail;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;  // an interval boundary

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ticktrace_reader_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("chmod -R u+rwx '" + path_ + "'; rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- generated orders, aggregated here --------------------------------------

// One order as the test knows it: its stages' latencies and flags.
struct Truth {
  uint64_t order_id = 0;
  uint32_t instance = 0;
  int64_t first_utc_ns = 0;
  std::vector<std::string> stages;
  std::vector<int64_t> latency_ns;
  std::vector<uint32_t> flags;
};

const std::vector<std::string> kTags = {"rx", "strat", "gw"};

// An OrderDetail whose stamps are consistent with the latencies (tsc_hz 1e9:
// one tick per ns): rx at first_tsc, strat after rx->strat, gw after
// strat->gw; total is their sum.
OrderDetail ToDetail(const Truth& t) {
  OrderDetail o;
  o.order_id = t.order_id;
  o.instance = t.instance;
  o.first_utc_ns = t.first_utc_ns;
  o.first_tsc = 1'000'000;
  o.first_tsc_utc_ns = t.first_utc_ns;
  o.complete = true;
  int64_t tsc = 0;
  for (size_t i = 0; i < kTags.size(); ++i) {
    o.stamps.push_back({.tag = kTags[i], .process_id = static_cast<uint32_t>(i + 1),
                        .tid = static_cast<uint32_t>(100 + i), .cpu = static_cast<int32_t>(i),
                        .tsc = o.first_tsc + static_cast<uint64_t>(tsc),
                        .utc_ns = t.first_utc_ns + tsc});
    if (i + 1 < kTags.size()) tsc += std::max<int64_t>(0, t.latency_ns[i]);
  }
  int64_t start = t.first_utc_ns;
  for (size_t s = 0; s < t.stages.size(); ++s) {
    const bool total = t.stages[s] == store::kTotalStage;
    o.samples.push_back({.stage = t.stages[s],
                         .start_utc_ns = total ? t.first_utc_ns : start,
                         .latency_ns = static_cast<double>(t.latency_ns[s]),
                         .process_begin = total ? 1 : static_cast<int32_t>(s + 1),
                         .process_end = total ? 3 : static_cast<int32_t>(s + 2),
                         .cpu_begin = static_cast<int32_t>(s),
                         .cpu_end = static_cast<int32_t>(s + 1),
                         .flags = t.flags[s]});
    if (!total) start += std::max<int64_t>(0, t.latency_ns[s]);
    if (total) o.total_ns = static_cast<double>(t.latency_ns[s]);
  }
  return o;
}

int64_t IntervalOf(int64_t utc_ns) { return utc_ns - (((utc_ns % kSecond) + kSecond) % kSecond); }

// Writes `orders` in `batches` (in the given order), with the intervals and
// interval orders aggregated here.
void WriteOrders(store::SqliteWriter* w, int64_t run, const std::vector<Truth>& orders,
                 int batches) {
  const size_t per = (orders.size() + static_cast<size_t>(batches) - 1) /
                     static_cast<size_t>(batches);
  for (size_t begin = 0; begin < orders.size(); begin += per) {
    std::map<std::pair<std::string, int64_t>, store::IntervalDelta> deltas;
    std::map<int64_t, uint64_t> per_interval;
    std::vector<OrderDetail> details;
    for (size_t i = begin; i < std::min(orders.size(), begin + per); ++i) {
      const Truth& t = orders[i];
      const int64_t interval = IntervalOf(t.first_utc_ns);
      ++per_interval[interval];
      for (size_t s = 0; s < t.stages.size(); ++s) {
        store::IntervalDelta& d = deltas[{t.stages[s], interval}];
        d.stage = t.stages[s];
        d.kind = t.stages[s] == store::kTotalStage ? store::StageKind::kTotal
                                                   : store::StageKind::kTransition;
        d.start_utc_ns = interval;
        ++d.samples_all;
        for (size_t f = 0; f < store::kFlagNames.size(); ++f) {
          if (t.flags[s] & store::kFlagNames[f].bit) ++d.flag_counts[f];
        }
        if ((t.flags[s] & store::kFlagsExcludedByDefault) == 0) {
          d.histogram.Add(static_cast<double>(t.latency_ns[s]));
        }
      }
      details.push_back(ToDetail(t));
    }
    std::vector<store::IntervalDelta> d;
    for (auto& [k, v] : deltas) d.push_back(std::move(v));
    std::vector<store::IntervalOrders> io;
    for (const auto& [start, n] : per_interval) io.push_back({start, n, 0});
    uint64_t already = 0;
    const absl::Status s = w->Write(run, d, io, details, nullptr, &already);
    ASSERT_TRUE(s.ok()) << s;
  }
}

std::vector<std::string> Stages() {
  return {"rx->strat", "strat->gw", std::string(store::kTotalStage)};
}

// `n` orders over `seconds` intervals from kT0: log-uniform latencies from
// 100 ns to 1 ms, quantized to 16 ns so that ties happen; about 1 in 50
// samples flagged cross_core (kept in the percentiles), 1 in 400 saturated
// (kept out) with a latency far above the rest; every 37th id has a second
// instance later in the run.
std::vector<Truth> Generate(int n, int seconds, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_latency(std::log(100.0), std::log(1e6));
  std::uniform_int_distribution<int64_t> when(0, seconds * kSecond - 1);
  std::vector<Truth> out;
  for (int i = 0; i < n; ++i) {
    Truth t;
    t.order_id = static_cast<uint64_t>(i + 1);
    t.first_utc_ns = kT0 + when(rng);
    int64_t total = 0;
    uint32_t total_flags = 0;
    for (int s = 0; s < 2; ++s) {
      int64_t v = static_cast<int64_t>(std::exp(log_latency(rng))) / 16 * 16;
      uint32_t f = 0;
      if (rng() % 50 == 0) f |= store::kFlagCrossCore;
      if (rng() % 400 == 0) {
        f |= store::kFlagSaturated;
        v = 50'000'000 + static_cast<int64_t>(rng() % 1000) * 16;
      }
      t.stages.push_back(Stages()[s]);
      t.latency_ns.push_back(v);
      t.flags.push_back(f);
      total += v;
      total_flags |= f;
    }
    t.stages.push_back(Stages()[2]);
    t.latency_ns.push_back(total);
    t.flags.push_back(total_flags);
    out.push_back(t);
    if (i % 37 == 0) {
      Truth again = t;
      again.instance = 1;
      again.first_utc_ns = kT0 + when(rng);
      for (int64_t& v : again.latency_ns) v = v / 2 / 16 * 16 + 16;
      again.latency_ns[2] = again.latency_ns[0] + again.latency_ns[1];
      out.push_back(again);
    }
  }
  return out;
}

struct GeneratedStore {
  TempDir dir;
  std::string path;
  int64_t run = 0;
  std::vector<Truth> orders;
};

// A store of `orders` written in shuffled batches, so that an interval's
// orders are spread over the order keys of several writes.
void MakeGenerated(GeneratedStore* g, std::vector<Truth> orders, int batches, uint32_t seed,
                   store::DetailPolicy policy = store::DetailPolicy::kAll) {
  g->path = g->dir.path() + "/gen.db";
  g->orders = orders;
  std::mt19937 rng(seed);
  std::shuffle(orders.begin(), orders.end(), rng);
  auto w = store::SqliteWriter::OpenOrCreate(g->path);
  ASSERT_TRUE(w.ok()) << w.status();
  store::RunMeta meta;
  meta.session = "gen";
  meta.host = "h";
  meta.tsc_hz = 1e9;
  meta.detail = policy;
  auto run = (*w)->BeginRun(meta);
  ASSERT_TRUE(run.ok()) << run.status();
  g->run = *run;
  store::Snapshot snap;
  for (size_t i = 0; i < Stages().size(); ++i) {
    store::StageStatsRow r;
    r.stage = Stages()[i];
    r.position = static_cast<int>(i);
    snap.stages.push_back(r);
  }
  uint64_t already = 0;
  ASSERT_TRUE((*w)->Write(g->run, {}, {}, {}, &snap, &already).ok());
  WriteOrders(w->get(), g->run, orders, batches);
  ASSERT_TRUE((*w)->EndRun(g->run, kT0 + 100 * kSecond).ok());
}

std::unique_ptr<store::StoreReader> OpenOrDie(const std::string& path) {
  auto r = store::StoreReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

// The exact nearest-rank percentile of `v` (sorted).
double Rank(const std::vector<double>& v, double q) {
  const size_t rank = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))), 1, v.size());
  return v[rank - 1];
}

void ExpectPercentile(const std::optional<double>& got, const std::vector<double>& sorted,
                      double percent, const std::string& what) {
  if (sorted.size() < store::MinSamplesForPercentile(percent)) {
    EXPECT_FALSE(got.has_value()) << what << " p" << percent << " with " << sorted.size();
    return;
  }
  ASSERT_TRUE(got.has_value()) << what << " p" << percent;
  const double want = Rank(sorted, percent / 100);
  EXPECT_LE(std::abs(*got - want), std::abs(want) / 256 + 1e-9)
      << what << " p" << percent << ": " << *got << " vs " << want;
}

// ---- opening ------------------------------------------------------------------

TEST(SqliteStoreReader, OpenSaysWhatIsWrongInOneLine) {
  TempDir dir;
  auto missing = store::StoreReader::Open(dir.path() + "/none.db");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  const std::string text = dir.path() + "/text.db";
  std::ofstream(text) << std::string(200, 'x');
  auto not_sqlite = store::StoreReader::Open("sqlite:" + text);
  EXPECT_TRUE(absl::IsFailedPrecondition(not_sqlite.status())) << not_sqlite.status();
  // A ClickHouse store whose server does not answer (nothing listens on
  // port 1): Unavailable, one line naming the store.
  auto ch = store::StoreReader::Open("clickhouse://127.0.0.1:1/tt");
  EXPECT_TRUE(absl::IsUnavailable(ch.status())) << ch.status();
  EXPECT_NE(std::string(ch.status().message()).find("clickhouse://127.0.0.1:1/tt"),
            std::string::npos)
      << ch.status();
  EXPECT_EQ(std::string(ch.status().message()).find('\n'), std::string::npos) << ch.status();
  auto bad = store::StoreReader::Open("ftp://x/y");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  for (const auto* s : {&missing, &not_sqlite, &ch, &bad}) {
    EXPECT_EQ(std::string(s->status().message()).find('\n'), std::string::npos);
  }
}

// ---- hand-made store: every metadata method and one order in detail ----------

// An order of `id` whose earliest own stamp is `first_tsc` at `first_utc_ns`.
OrderDetail HandOrder(uint64_t id, int64_t first_utc_ns, uint64_t first_tsc) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = first_utc_ns;
  o.first_tsc = first_tsc;
  o.first_tsc_utc_ns = first_utc_ns;
  return o;
}

class HandStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/hand.db";
    auto w = store::SqliteWriter::OpenOrCreate(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    store::RunMeta meta;
    meta.session = "first";
    meta.host = "h1";
    meta.started_utc_ns = kT0;
    meta.tsc_hz = 2e9;  // 2 ticks per ns
    meta.calibration_source = "test";
    meta.pipeline = "a,b";
    run1_ = *(*w)->BeginRun(meta);
    meta.session = "second";
    meta.started_utc_ns = kT0 + 10 * kSecond;
    run2_ = *(*w)->BeginRun(meta);

    // Order 7 in run 2: stamps a (cpu 0) and b (cpu 1) 3000 ticks = 1500 ns
    // apart, a span "work" of 400 ns starting 1000 ticks after a.
    OrderDetail o = HandOrder(7, kT0 + 10 * kSecond + 100, 50'000);
    o.total_ns = 1500;
    o.complete = true;
    o.stamps.push_back({.tag = "a", .process_id = 1, .tid = 11, .cpu = 0, .tsc = 50'000});
    o.stamps.push_back({.tag = "b", .process_id = 2, .tid = 22, .cpu = 1, .tsc = 53'000});
    o.stamps.push_back({.tag = "work", .is_span = true, .process_id = 2, .tid = 22, .cpu = 1,
                        .cpu_end = 1, .tsc = 51'000, .duration_ns = 400});
    o.samples.push_back({.stage = "a->b", .start_utc_ns = o.first_utc_ns, .latency_ns = 1500,
                         .process_begin = 1, .process_end = 2, .cpu_begin = 0, .cpu_end = 1,
                         .flags = store::kFlagCrossCore});
    o.samples.push_back({.stage = "work", .start_utc_ns = o.first_utc_ns + 500,
                         .latency_ns = 400, .process_begin = 2, .process_end = 2,
                         .cpu_begin = 1, .cpu_end = 1});
    o.samples.push_back({.stage = "total", .start_utc_ns = o.first_utc_ns, .latency_ns = 1500,
                         .process_begin = 1, .process_end = 2, .cpu_begin = 0, .cpu_end = 1,
                         .flags = store::kFlagCrossCore});
    // Its second instance: late records of process 2 only, in the next second.
    OrderDetail late = HandOrder(7, kT0 + 11 * kSecond + 5, 90'000);
    late.instance = 1;
    late.stamps.push_back({.tag = "b", .process_id = 2, .tid = 22, .cpu = 1, .tsc = 90'000,
                           .flags = store::kFlagLate});
    // Order 8, a child of 7 in the same second, written first: its key is lower.
    OrderDetail child = HandOrder(8, kT0 + 10 * kSecond + 900, 60'000);
    child.parent_order_id = 7;
    child.missing = "b";
    child.stamps.push_back({.tag = "a", .process_id = 1, .tid = 11, .cpu = -1, .tsc = 60'000});
    child.samples.push_back({.stage = "total", .start_utc_ns = child.first_utc_ns,
                             .latency_ns = 0, .process_begin = 1, .process_end = 1});
    store::IntervalDelta d;
    d.stage = "a->b";
    d.start_utc_ns = kT0 + 10 * kSecond;
    d.samples_all = 1;
    d.flag_counts[2] = 1;
    d.histogram.Add(1500);
    store::Snapshot snap;
    snap.processes.push_back({.process_id = 1, .pid = 1001, .name = "feed", .segment = "s1",
                              .first_seen_utc_ns = kT0, .exited_utc_ns = std::nullopt});
    snap.processes.push_back({.process_id = 2, .pid = 1002, .name = "gw", .segment = "s2",
                              .first_seen_utc_ns = kT0, .exited_utc_ns = kT0 + 20 * kSecond});
    snap.threads.push_back({.process_id = 1, .slot = 0, .generation = 1, .tid = 11,
                            .name = "main", .drained = 10, .dropped = 1});
    snap.counters = {{"drained", 10}, {"dropped", 1}};
    snap.cores.push_back({.cpu = 1, .measured_utc_ns = kT0, .offset_ns = 5, .bound_ns = 2});
    snap.cores.push_back({.cpu = 1, .measured_utc_ns = kT0 + kSecond, .offset_ns = 6,
                          .bound_ns = 3, .consistent = false});
    snap.cores.push_back({.cpu = 0, .measured_utc_ns = kT0, .offset_ns = 0, .bound_ns = 1});
    store::StageStatsRow total;
    total.stage = "total";
    total.position = 2;
    total.count = 2;
    total.samples_all = 2;
    total.p50_ns = 750;
    store::StageStatsRow ab;
    ab.stage = "a->b";
    ab.position = 0;
    ab.count = 1;
    ab.samples_all = 1;
    ab.flag_counts[2] = 1;
    ab.uncertainty_ns = 5;
    snap.stages = {total, ab};
    snap.utc_drift_ppm = 0.25;
    uint64_t already = 0;
    ASSERT_TRUE((*w)->Write(run2_, {d}, {{kT0 + 10 * kSecond, 2, 0}, {kT0 + 11 * kSecond, 1, 0}},
                            {child, o, late}, &snap, &already)
                    .ok());
    // Order 7 also exists in run 1 (ids restart with each run).
    OrderDetail other = o;
    other.first_utc_ns = kT0 + 100;
    other.first_tsc_utc_ns = kT0 + 100;
    ASSERT_TRUE((*w)->Write(run1_, {}, {{kT0, 1, 0}}, {other}, nullptr, &already).ok());
    reader_ = OpenOrDie(path_);
    ASSERT_NE(reader_, nullptr);
  }

  TempDir dir_;
  std::string path_;
  int64_t run1_ = 0, run2_ = 0;
  std::unique_ptr<store::StoreReader> reader_;
};

TEST_F(HandStore, RunsAndTheirMetadata) {
  EXPECT_EQ(reader_->schema_version(), 4);
  EXPECT_TRUE(reader_->HasColumn("runs", "interval_ns"));
  EXPECT_FALSE(reader_->HasColumn("runs", "no_such_column"));
  auto runs = reader_->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].session, "first");
  auto latest = reader_->GetRun(std::nullopt);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->run_id, run2_);
  EXPECT_EQ(latest->tsc_hz, 2e9);
  EXPECT_EQ(latest->pipeline, "a,b");
  EXPECT_EQ(latest->utc_drift_ppm, 0.25);
  auto missing = reader_->GetRun(99);
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(std::string(missing.status().message()).find("runs: 1, 2"), std::string::npos)
      << missing.status();

  auto counters = reader_->Counters(run2_);
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ(counters->at("drained"), 10);
  EXPECT_EQ(counters->at("dropped"), 1);
  auto processes = reader_->Processes(run2_);
  ASSERT_TRUE(processes.ok());
  ASSERT_EQ(processes->size(), 2u);
  EXPECT_EQ((*processes)[1].name, "gw");
  EXPECT_EQ((*processes)[1].exited_utc_ns, kT0 + 20 * kSecond);
  EXPECT_FALSE((*processes)[0].exited_utc_ns.has_value());
  auto threads = reader_->Threads(run2_);
  ASSERT_TRUE(threads.ok());
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ((*threads)[0].dropped, 1);
  auto cores = reader_->Cores(run2_);
  ASSERT_TRUE(cores.ok());
  ASSERT_EQ(cores->size(), 2u);  // the latest of cpu 1 only
  EXPECT_EQ((*cores)[1].cpu, 1);
  EXPECT_EQ((*cores)[1].offset_ns, 6);
  EXPECT_FALSE((*cores)[1].consistent);

  auto stats = reader_->StageStats(run2_);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[0].stage, "a->b");  // by position
  EXPECT_EQ((*stats)[0].flag_count(store::kFlagCrossCore), 1);
  EXPECT_EQ((*stats)[0].uncertainty_ns, 5);
  EXPECT_EQ((*stats)[1].p50_ns, 750);
  auto names = reader_->StageNames(run2_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(std::set<std::string>(names->begin(), names->end()),
            (std::set<std::string>{"a->b", "work", "total"}));
  auto span = reader_->SampleSpanUtcNs(run2_);
  ASSERT_TRUE(span.ok());
  ASSERT_TRUE(span->has_value());
  EXPECT_EQ((*span)->first, kT0 + 10 * kSecond + 100);
  EXPECT_EQ((*span)->second, kT0 + 10 * kSecond + 900);  // the child's total
}

TEST_F(HandStore, OneOrderInDetail) {
  auto first = reader_->FindOrder(run2_, 7);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->instance, 0);
  EXPECT_EQ((*first)->total_ns, 1500);
  EXPECT_TRUE((*first)->complete);
  EXPECT_FALSE((*first)->late);
  auto none = reader_->FindOrder(run2_, 12345);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto instances = reader_->OrderInstances(run2_, 7);
  ASSERT_TRUE(instances.ok());
  ASSERT_EQ(instances->size(), 2u);
  EXPECT_TRUE((*instances)[1].late);
  EXPECT_FALSE((*instances)[1].total_ns.has_value());

  auto stamps = reader_->StampsOfInstance(run2_, 7, 0);
  ASSERT_TRUE(stamps.ok()) << stamps.status();
  ASSERT_EQ(stamps->size(), 3u);
  const int64_t t = kT0 + 10 * kSecond + 100;
  // By tsc: a, work (1000 ticks = 500 ns later), b (3000 ticks = 1500 ns).
  EXPECT_EQ((*stamps)[0].tag, "a");
  EXPECT_EQ((*stamps)[0].utc_ns, t);
  EXPECT_EQ((*stamps)[0].kind, "stamp");
  EXPECT_EQ((*stamps)[1].tag, "work");
  EXPECT_EQ((*stamps)[1].kind, "span");
  EXPECT_EQ((*stamps)[1].tsc, 51'000);
  EXPECT_EQ((*stamps)[1].utc_ns, t + 500);
  EXPECT_EQ((*stamps)[1].duration_ns, 400);
  EXPECT_EQ((*stamps)[1].cpu_end, 1);
  EXPECT_EQ((*stamps)[2].tag, "b");
  EXPECT_EQ((*stamps)[2].utc_ns, t + 1500);
  EXPECT_EQ((*stamps)[2].process_id, 2);
  EXPECT_EQ((*stamps)[2].tid, 22);
  EXPECT_EQ((*stamps)[2].cpu, 1);
  EXPECT_FALSE((*stamps)[2].cpu_end.has_value());
  auto all = reader_->Stamps(run2_, 7);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[3].instance, 1);
  EXPECT_EQ((*all)[3].utc_ns, kT0 + 11 * kSecond + 5);
  EXPECT_EQ((*all)[3].flags, store::kFlagLate);
  auto child = reader_->Stamps(run2_, 8);
  ASSERT_TRUE(child.ok());
  ASSERT_EQ(child->size(), 1u);
  EXPECT_FALSE((*child)[0].cpu.has_value());

  auto samples = reader_->SamplesOfOrder(run2_, 7);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].start_utc_ns, t);
  EXPECT_EQ((*samples)[2].stage, "work");  // by start: 500 ns later
  EXPECT_EQ((*samples)[2].start_utc_ns, t + 500);
  EXPECT_EQ((*samples)[2].latency_ns, 400);
  EXPECT_EQ((*samples)[2].process_begin, 2);
  EXPECT_EQ((*samples)[2].cpu_end, 1);
  EXPECT_EQ((*samples)[0].flags, store::kFlagCrossCore);

  auto children = reader_->ChildOrders(run2_, 7);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, std::vector<int64_t>{8});
  auto runs = reader_->RunsWithOrder(7);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(*runs, (std::vector<int64_t>{run1_, run2_}));
  auto runs8 = reader_->RunsWithOrder(8);
  ASSERT_TRUE(runs8.ok());
  EXPECT_EQ(*runs8, std::vector<int64_t>{run2_});

  // By first stamp: 7 (t), 8 (t + 800), 7/1 (next second); the child's key is lower.
  for (std::optional<int64_t> limit : {std::optional<int64_t>(), std::optional<int64_t>(2)}) {
    auto by_time = reader_->OrdersByTime(run2_, limit);
    ASSERT_TRUE(by_time.ok()) << by_time.status();
    ASSERT_EQ(by_time->size(), limit ? 2u : 3u);
    EXPECT_EQ((*by_time)[0].order_id, 7);
    EXPECT_EQ((*by_time)[1].order_id, 8);
    EXPECT_EQ((*by_time)[1].parent_order_id, 7);
    EXPECT_EQ((*by_time)[1].missing, "b");
    if (!limit) {
      EXPECT_EQ((*by_time)[2].instance, 1);
    }
  }
}

TEST_F(HandStore, ForEachSampleFilters) {
  const auto collect = [&](const store::SampleFilter& f, bool ordered) {
    std::vector<store::SampleRow> rows;
    const absl::Status s =
        reader_->ForEachSample(run2_, f, ordered, [&](const store::SampleRow& r) { rows.push_back(r); });
    EXPECT_TRUE(s.ok()) << s;
    return rows;
  };
  EXPECT_EQ(collect({}, false).size(), 4u);
  const std::vector<store::SampleRow> ordered = collect({}, true);
  ASSERT_EQ(ordered.size(), 4u);
  EXPECT_EQ(ordered[0].order_id, 7);
  EXPECT_EQ(ordered[2].stage, "work");  // order 7 by start
  EXPECT_EQ(ordered[3].order_id, 8);
  store::SampleFilter by_stage;
  by_stage.stage = "total";
  EXPECT_EQ(collect(by_stage, false).size(), 2u);
  by_stage.stage = "nope";
  EXPECT_EQ(collect(by_stage, false).size(), 0u);
  store::SampleFilter by_process;
  by_process.process_ids = {2};
  EXPECT_EQ(collect(by_process, false).size(), 3u);  // a->b ends in 2, work, total
  store::SampleFilter window;
  const int64_t t = kT0 + 10 * kSecond + 100;
  window.since_utc_ns = t + 500;  // inclusive
  window.until_utc_ns = t + 800;  // inclusive: the child's sample starts here
  const std::vector<store::SampleRow> in = collect(window, true);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].stage, "work");
  EXPECT_EQ(in[1].order_id, 8);
}

// Orders without samples (late instances) in the first and last intervals
// with detail do not hide the samples of the intervals between.
TEST(SqliteStoreReader, SampleSpanSkipsIntervalsWithoutSamples) {
  TempDir dir;
  const std::string path = dir.path() + "/span.db";
  int64_t run = 0;
  {
    auto w = store::SqliteWriter::OpenOrCreate(path);
    ASSERT_TRUE(w.ok()) << w.status();
    store::RunMeta meta;
    meta.tsc_hz = 1e9;
    run = *(*w)->BeginRun(meta);
    const auto bare = [](uint64_t id, int64_t at) {
      OrderDetail o;
      o.order_id = id;
      o.first_utc_ns = at;
      o.first_tsc = 10;
      o.first_tsc_utc_ns = at;
      o.stamps.push_back({.tag = "a", .process_id = 1, .tid = 1, .tsc = 10, .utc_ns = at});
      return o;
    };
    Truth t;
    t.order_id = 2;
    t.first_utc_ns = kT0 + kSecond + 40;
    t.stages = {"rx->strat", "total"};
    t.latency_ns = {300, 300};
    t.flags = {0, 0};
    Truth u = t;
    u.order_id = 3;
    u.first_utc_ns = kT0 + 2 * kSecond + 70;
    uint64_t already = 0;
    ASSERT_TRUE((*w)->Write(run, {}, {{kT0, 1, 0}, {kT0 + 3 * kSecond, 1, 0}},
                            {bare(1, kT0 + 5), bare(4, kT0 + 3 * kSecond + 5)}, nullptr, &already)
                    .ok());
    WriteOrders(w->get(), run, {t, u}, 1);
  }
  auto reader = OpenOrDie(path);
  ASSERT_NE(reader, nullptr);
  auto span = reader->SampleSpanUtcNs(run);
  ASSERT_TRUE(span.ok()) << span.status();
  ASSERT_TRUE(span->has_value());
  // rx->strat starts at the first stamp; total too: kT0+1s+40 .. kT0+2s+70.
  EXPECT_EQ((*span)->first, kT0 + kSecond + 40);
  EXPECT_EQ((*span)->second, kT0 + 2 * kSecond + 70);
}

// ---- window statistics, intervals, completeness ---------------------------------

TEST(SqliteStoreReaderGenerated, WindowStatsEqualTheDetailWithinTheHistogramPrecision) {
  GeneratedStore g;
  MakeGenerated(&g, Generate(6000, 10, 1), 7, 2);
  auto reader = OpenOrDie(g.path);
  ASSERT_NE(reader, nullptr);
  const std::vector<store::TimeWindow> windows = {
      {}, {kT0 + 2 * kSecond, kT0 + 5 * kSecond}, {kT0 + 9 * kSecond, std::nullopt},
      {std::nullopt, kT0 + kSecond}, {kT0 + 20 * kSecond, std::nullopt}};
  for (const store::TimeWindow& w : windows) {
    auto stats = reader->StageWindowStats(g.run, w);
    ASSERT_TRUE(stats.ok()) << stats.status();
    // Recomputed from the detail: orders whose interval starts in the window.
    std::map<std::string, std::vector<double>> kept;
    std::map<std::string, int64_t> all, cross_core, saturated;
    for (const Truth& t : g.orders) {
      const int64_t interval = IntervalOf(t.first_utc_ns);
      if ((w.since_utc_ns && interval < *w.since_utc_ns) ||
          (w.until_utc_ns && interval >= *w.until_utc_ns)) {
        continue;
      }
      for (size_t s = 0; s < t.stages.size(); ++s) {
        ++all[t.stages[s]];
        if (t.flags[s] & store::kFlagCrossCore) ++cross_core[t.stages[s]];
        if (t.flags[s] & store::kFlagSaturated) ++saturated[t.stages[s]];
        if ((t.flags[s] & store::kFlagsExcludedByDefault) == 0) {
          kept[t.stages[s]].push_back(static_cast<double>(t.latency_ns[s]));
        }
      }
    }
    ASSERT_EQ(stats->size(), all.size());
    for (size_t i = 0; i < stats->size(); ++i) {
      const store::WindowStageStatsRow& row = (*stats)[i];
      EXPECT_EQ(row.stage, Stages()[i]);  // pipeline order, total last
      std::vector<double>& v = kept[row.stage];
      std::sort(v.begin(), v.end());
      const std::string what = row.stage;
      EXPECT_EQ(row.count, static_cast<int64_t>(v.size())) << what;
      EXPECT_EQ(row.samples_all, all[row.stage]) << what;
      EXPECT_EQ(row.flag_count(store::kFlagCrossCore), cross_core[row.stage]) << what;
      EXPECT_EQ(row.flag_counts[3], saturated[row.stage]) << what;
      EXPECT_TRUE(row.detail_complete);
      if (v.empty()) continue;
      EXPECT_EQ(row.min_ns, v.front()) << what;
      EXPECT_EQ(row.max_ns, v.back()) << what;
      double sum = 0;
      for (double x : v) sum += x;
      EXPECT_NEAR(*row.mean_ns, sum / static_cast<double>(v.size()), 1e-6 * sum) << what;
      ExpectPercentile(row.p50_ns, v, 50, what);
      ExpectPercentile(row.p90_ns, v, 90, what);
      ExpectPercentile(row.p99_ns, v, 99, what);
      ExpectPercentile(row.p999_ns, v, 99.9, what);
    }
  }
}

TEST(SqliteStoreReaderGenerated, IntervalsMergeIntoBuckets) {
  GeneratedStore g;
  MakeGenerated(&g, Generate(3000, 10, 3), 5, 4);
  auto reader = OpenOrDie(g.path);
  ASSERT_NE(reader, nullptr);
  auto bad = reader->Intervals(g.run, std::nullopt, {}, kSecond / 2);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  const store::TimeWindow w{kT0 + 2 * kSecond, kT0 + 8 * kSecond};
  auto rows = reader->Intervals(g.run, std::string("strat->gw"), w, 2 * kSecond);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  for (int b = 0; b < 3; ++b) {
    const store::IntervalRow& row = (*rows)[b];
    const int64_t start = kT0 + (2 + 2 * b) * kSecond;
    EXPECT_EQ(row.stage, "strat->gw");
    EXPECT_EQ(row.start_utc_ns, start);
    std::vector<double> v;
    int64_t orders = 0, all = 0;
    for (const Truth& t : g.orders) {
      if (t.first_utc_ns < start || t.first_utc_ns >= start + 2 * kSecond) continue;
      ++orders;
      ++all;
      if ((t.flags[1] & store::kFlagsExcludedByDefault) == 0) {
        v.push_back(static_cast<double>(t.latency_ns[1]));
      }
    }
    std::sort(v.begin(), v.end());
    EXPECT_EQ(row.count, static_cast<int64_t>(v.size()));
    EXPECT_EQ(row.samples_all, all);
    EXPECT_EQ(row.orders, orders);
    EXPECT_EQ(row.orders_kept, orders);
    EXPECT_FALSE(row.detail_deleted);
    EXPECT_EQ(row.max_ns, v.back());
    ExpectPercentile(row.p50_ns, v, 50, "bucket");
    ExpectPercentile(row.p99_ns, v, 99, "bucket");
  }
  auto every = reader->Intervals(g.run, std::nullopt, {}, kSecond);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->size(), 30u);  // 3 stages x 10 s
  EXPECT_EQ(every->front().stage, "rx->strat");
  EXPECT_EQ(every->back().stage, "total");
}

TEST(SqliteStoreReaderGenerated, DetailCompletenessSaysWhenDetailIsPartial) {
  GeneratedStore g;
  MakeGenerated(&g, Generate(1000, 4, 5), 2, 6);
  {
    auto reader = OpenOrDie(g.path);
    ASSERT_NE(reader, nullptr);
    auto c = reader->DetailCompleteness(g.run, {});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->orders, static_cast<int64_t>(g.orders.size()));
    EXPECT_EQ(c->orders_kept, c->orders);
    EXPECT_EQ(c->intervals, 4);
    EXPECT_EQ(c->policy, "all");
    EXPECT_TRUE(c->complete());
  }
  {
    auto w = store::SqliteWriter::OpenOrCreate(g.path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->ApplyRetention(g.run, kT0 + kSecond, 0, std::nullopt).ok());
  }
  auto reader = OpenOrDie(g.path);
  ASSERT_NE(reader, nullptr);
  auto c = reader->DetailCompleteness(g.run, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->intervals_deleted, 1);
  EXPECT_FALSE(c->complete());
  auto later = reader->DetailCompleteness(g.run, {kT0 + kSecond, std::nullopt});
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->complete());
  auto stats = reader->StageWindowStats(g.run, {});
  ASSERT_TRUE(stats.ok());
  ASSERT_FALSE(stats->empty());
  EXPECT_FALSE(stats->front().detail_complete);
  // The statistics stay whole.
  EXPECT_EQ(stats->back().samples_all, static_cast<int64_t>(g.orders.size()));

  GeneratedStore tail;
  MakeGenerated(&tail, Generate(100, 2, 7), 1, 8, store::DetailPolicy::kTail);
  auto tail_reader = OpenOrDie(tail.path);
  ASSERT_NE(tail_reader, nullptr);
  auto tc = tail_reader->DetailCompleteness(tail.run, {});
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(tc->policy, "tail");
  EXPECT_FALSE(tc->complete());
}

// ---- slowest orders -------------------------------------------------------------

std::vector<store::RankedOrder> BruteForceSlowest(const std::vector<Truth>& orders,
                                           const std::string& stage, int64_t limit,
                                           const store::TimeWindow& w) {
  std::map<int64_t, std::pair<int64_t, uint32_t>> best;  // id -> (latency, flags)
  for (const Truth& t : orders) {
    if ((w.since_utc_ns && t.first_utc_ns < *w.since_utc_ns) ||
        (w.until_utc_ns && t.first_utc_ns >= *w.until_utc_ns)) {
      continue;
    }
    for (size_t s = 0; s < t.stages.size(); ++s) {
      if (t.stages[s] != stage) continue;
      const auto id = static_cast<int64_t>(t.order_id);
      auto it = best.find(id);
      if (it == best.end() || t.latency_ns[s] > it->second.first) {
        best[id] = {t.latency_ns[s], t.flags[s]};
      }
    }
  }
  std::vector<store::RankedOrder> all;
  for (const auto& [id, v] : best) all.push_back({id, static_cast<double>(v.first), v.second});
  std::sort(all.begin(), all.end(), [](const store::RankedOrder& a, const store::RankedOrder& b) {
    if (a.latency_ns != b.latency_ns) return a.latency_ns > b.latency_ns;
    return a.order_id < b.order_id;
  });
  if (static_cast<int64_t>(all.size()) > limit) all.resize(static_cast<size_t>(limit));
  return all;
}

TEST(SqliteStoreReaderGenerated, FindSlowestEqualsABruteForceRanking) {
  GeneratedStore g;
  MakeGenerated(&g, Generate(5000, 20, 9), 9, 10);
  auto reader = OpenOrDie(g.path);
  ASSERT_NE(reader, nullptr);
  const std::vector<store::TimeWindow> windows = {
      {}, {kT0 + 3 * kSecond + 123, kT0 + 7 * kSecond + 456}, {kT0 + 19 * kSecond, std::nullopt},
      {std::nullopt, kT0 + kSecond / 2}};
  int saturated_seen = 0;
  for (const std::string& stage : Stages()) {
    for (const store::TimeWindow& w : windows) {
      for (int64_t limit : {1, 10, 100, 100000}) {
        auto got = reader->FindSlowest(g.run, stage, limit, w);
        ASSERT_TRUE(got.ok()) << got.status();
        const std::vector<store::RankedOrder> want = BruteForceSlowest(g.orders, stage, limit, w);
        ASSERT_EQ(got->size(), want.size()) << stage << " limit " << limit;
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ((*got)[i].order_id, want[i].order_id) << stage << " #" << i;
          EXPECT_EQ((*got)[i].latency_ns, want[i].latency_ns) << stage << " #" << i;
          EXPECT_EQ((*got)[i].flags, want[i].flags) << stage << " #" << i;
          if (want[i].flags & store::kFlagSaturated) ++saturated_seen;
        }
      }
    }
  }
  // The saturated samples (out of the histogram, so not bounded by an
  // interval's max) were among those ranked first.
  EXPECT_GT(saturated_seen, 0);
  auto whole = reader->FindSlowest(g.run, "total", 10);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 10u);
  auto unknown = reader->FindSlowest(g.run, "nope", 10);
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE(unknown->empty());
}

// ---- schema 1 --------------------------------------------------------------------

const std::string kFixture =
    std::string(TICKTRACE_SOURCE_DIR) + "/tests/store/fixtures/schema1_demo.db";

// (order_id, latency rounded to the ns) of the slowest `stage` sample, and
// the sample count, read from the schema-1 file with plain SQL.
struct V1Facts {
  int64_t samples = 0;
  int64_t orders = 0;
  int64_t slowest_order = 0;
  int64_t slowest_ns = 0;
};
V1Facts ReadV1(const std::string& path, const std::string& stage) {
  V1Facts f;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  const auto one = [&](const std::string& sql, int col) {
    sqlite3_stmt* s = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      v = sqlite3_column_type(s, col) == SQLITE_FLOAT ? std::llround(sqlite3_column_double(s, col))
                                                      : sqlite3_column_int64(s, col);
    }
    sqlite3_finalize(s);
    return v;
  };
  f.samples = one("SELECT count(*) FROM samples", 0);
  f.orders = one("SELECT count(*) FROM orders", 0);
  const std::string slowest = "SELECT order_id, latency_ns FROM samples WHERE stage = '" + stage +
                              "' ORDER BY latency_ns DESC, order_id LIMIT 1";
  f.slowest_order = one(slowest, 0);
  f.slowest_ns = one(slowest, 1);
  sqlite3_close(db);
  return f;
}

void CheckMigratedDemo(store::StoreReader& reader, const V1Facts& facts, const std::string& stage) {
  auto run = reader.GetRun(std::nullopt);
  ASSERT_TRUE(run.ok()) << run.status();
  int64_t samples = 0;
  ASSERT_TRUE(reader.ForEachSample(run->run_id, {}, false, [&](const store::SampleRow&) { ++samples; })
                  .ok());
  EXPECT_EQ(samples, facts.samples);
  auto orders = reader.OrdersByTime(run->run_id, std::nullopt);
  ASSERT_TRUE(orders.ok());
  EXPECT_EQ(static_cast<int64_t>(orders->size()), facts.orders);
  auto limited = reader.OrdersByTime(run->run_id, 5);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ((*limited)[i].order_id, (*orders)[i].order_id);
  auto slowest = reader.FindSlowest(run->run_id, stage, 1);
  ASSERT_TRUE(slowest.ok()) << slowest.status();
  ASSERT_EQ(slowest->size(), 1u);
  EXPECT_EQ(slowest->front().order_id, facts.slowest_order);
  EXPECT_EQ(slowest->front().latency_ns, static_cast<double>(facts.slowest_ns));
  auto stats = reader.StageWindowStats(run->run_id, {});
  ASSERT_TRUE(stats.ok());
  int64_t all = 0;
  for (const store::WindowStageStatsRow& r : *stats) all += r.samples_all.value_or(0);
  EXPECT_EQ(all, facts.samples);
  EXPECT_EQ(stats->back().stage, "total");
}

TEST(SqliteStoreReaderMigration, ASchema1StoreIsMigratedInPlaceAndSaysSo) {
  TempDir dir;
  const std::string path = dir.path() + "/old.db";
  ASSERT_EQ(std::system(("cp '" + kFixture + "' '" + path + "'").c_str()), 0);
  const V1Facts facts = ReadV1(path, "md_decoded->strat_in");
  ASSERT_EQ(facts.samples, 280);  // tests/store/fixtures/README.md
  ::testing::internal::CaptureStderr();
  auto reader = store::StoreReader::Open(path);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_NE(err.find("migrated in place to schema 4"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  struct stat st;
  EXPECT_EQ(::stat((path + ".schema1.bak").c_str(), &st), 0);
  CheckMigratedDemo(**reader, facts, "md_decoded->strat_in");
  reader->reset();
  // Opened again: nothing more to say.
  ::testing::internal::CaptureStderr();
  auto again = store::StoreReader::Open(path);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(again.ok());
}

// A reader that may not write the store (or its directory) reads a migrated
// private copy and leaves the file as it was. Run in a child that is not root
// (root may write anything).
TEST(SqliteStoreReaderMigration, AReadOnlySchema1StoreIsReadThroughACopy) {
  TempDir dir;
  const std::string path = dir.path() + "/old.db";
  ASSERT_EQ(std::system(("cp '" + kFixture + "' '" + path + "'").c_str()), 0);
  const V1Facts facts = ReadV1(path, "total");
  const std::string err_path = dir.path() + "/../" +
                               dir.path().substr(dir.path().rfind('/') + 1) + ".stderr";
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(90);
    if (std::freopen(err_path.c_str(), "w", stderr) == nullptr) ::_exit(91);
    int code = 0;
    {
      auto reader = store::StoreReader::Open(path);
      if (!reader.ok()) {
        std::fprintf(stderr, "open: %s\n", std::string(reader.status().message()).c_str());
        ::_exit(92);
      }
      auto run = (*reader)->GetRun(std::nullopt);
      auto slowest = run.ok() ? (*reader)->FindSlowest(run->run_id, "total", 1)
                              : absl::StatusOr<std::vector<store::RankedOrder>>(run.status());
      int64_t samples = 0;
      if (run.ok()) {
        (*reader)->ForEachSample(run->run_id, {}, false, [&](const store::SampleRow&) { ++samples; })
            .IgnoreError();
      }
      if (!slowest.ok() || slowest->size() != 1 || slowest->front().order_id != facts.slowest_order ||
          samples != facts.samples) {
        code = 93;
      }
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::chmod(dir.path().c_str(), 0700);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(err_path.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_NE(err.find("read-only here: reading a migrated temporary copy"), std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // The file is as it was: schema 1, no backup beside it.
  EXPECT_EQ(ReadV1(path, "total").samples, facts.samples);
  struct stat st;
  EXPECT_NE(::stat((path + ".schema1.bak").c_str(), &st), 0);
}

}  // namespace
}  // namespace ticktrace::view
