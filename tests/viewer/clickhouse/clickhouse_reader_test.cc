// The viewer's ClickHouse reader against its SQLite reader, on a real
// clickhouse-server (tests/support/clickhouse_server.h): one archive is
// replayed by the real collector into a SQLite file and into ClickHouse, and
// both stores must give the figures the archive says, and the same figures.
//
// The story (1 GHz TSC: a tick is a ns; one process, tags a, b, c on core 0):
//   orders 1..3000, 1 ms apart from t = 1 s (three 1-s intervals, 1000 each);
//   a->b of order i = 100 + (37 i mod 1000) + i ns, b->c = 500 + (i mod 50) ns,
//   total = their sum. Order 3001 has only a (incomplete).

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"
#include "tests/support/rank_quantile.h"
#include "tests/support/clickhouse_server.h"
#include "tests/support/clickhouse_suite.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {
namespace {

using collect::testing::ArchiveBuilder;
using collect::testing::Stamp;
using collect::testing::TempDir;
using ::ticktrace::testing::ClickHouseServer;
using ::ticktrace::testing::StartSuiteServer;

constexpr int kOrders = 3000;
constexpr uint64_t kSecond = 1'000'000'000;
constexpr double kRelativeError = 1.0 / 256;  // the histogram's (docs/store.md)
// ArchiveBuilder's anchor: TSC 0 is this UTC.
constexpr int64_t kAnchorUtcNs = 1700000000000000000;

int64_t Ab(int i) { return 100 + (37 * i) % 1000 + i; }
int64_t Bc(int i) { return 500 + i % 50; }
uint64_t ATsc(int i) { return kSecond + static_cast<uint64_t>(i) * 1'000'000; }

ArchiveBuilder Story() {
  ArchiveBuilder b;
  b.Process(1, {"a", "b", "c"});
  std::vector<abi::Record> records;
  for (int i = 1; i <= kOrders; ++i) {
    records.push_back(Stamp(0, i, ATsc(i), 0));
    records.push_back(Stamp(1, i, ATsc(i) + Ab(i), 0));
    records.push_back(Stamp(2, i, ATsc(i) + Ab(i) + Bc(i), 0));
  }
  records.push_back(Stamp(0, kOrders + 1, ATsc(kOrders) + 500'000, 0));
  b.Records(1, records);
  return b;
}

// The latencies of `stage` of the orders whose a is in [from, to) (1-based ids).
std::vector<double> Expected(const std::string& stage, int from = 1, int to = kOrders + 1) {
  std::vector<double> v;
  for (int i = from; i < to; ++i) {
    if (stage == "a->b") v.push_back(double(Ab(i)));
    if (stage == "b->c") v.push_back(double(Bc(i)));
    if (stage == "total") v.push_back(double(Ab(i) + Bc(i)));
  }
  return v;
}

class ClickHouseReaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartSuiteServer();
    if (server_ == nullptr) return;
    dir_ = new TempDir();
    for (const std::string& store : {dir_->File("store.db"), server_->Uri("tt_reader")}) {
      collect::CollectorOptions o;
      o.pipeline = {"a", "b", "c"};
      o.store_uri = *store::ParseStoreUri(store);
      collect::testing::Replayed r = collect::testing::ReplayArchive(Story(), *dir_, o);
      ASSERT_TRUE(r.status.ok()) << store << ": " << r.status << "\n" << r.log;
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<store::StoreReader>> s = store::StoreReader::Open(dir_->File("store.db"));
    ASSERT_TRUE(s.ok()) << s.status();
    sqlite_ = std::move(*s);
    absl::StatusOr<std::unique_ptr<store::StoreReader>> c = store::StoreReader::Open(server_->Uri("tt_reader"));
    ASSERT_TRUE(c.ok()) << c.status();
    clickhouse_ = std::move(*c);
  }

  static ClickHouseServer* server_;
  static TempDir* dir_;
  std::unique_ptr<store::StoreReader> sqlite_, clickhouse_;
};
ClickHouseServer* ClickHouseReaderTest::server_ = nullptr;
TempDir* ClickHouseReaderTest::dir_ = nullptr;

TEST_F(ClickHouseReaderTest, RunsAndDictionariesMatch) {
  absl::StatusOr<std::vector<store::RunRow>> runs = clickhouse_->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().pipeline, "a,b,c");
  EXPECT_EQ(runs->front().interval_ns, int64_t(kSecond));
  EXPECT_DOUBLE_EQ(runs->front().tsc_hz, 1e9);
  absl::StatusOr<store::RunRow> sqlite_run = sqlite_->GetRun(std::nullopt);
  ASSERT_TRUE(sqlite_run.ok());
  EXPECT_EQ(runs->front().host, sqlite_run->host);
  EXPECT_EQ(runs->front().session, sqlite_run->session);

  const int64_t run = runs->front().run_id;
  absl::StatusOr<std::vector<std::string>> stages = clickhouse_->StageNames(run);
  ASSERT_TRUE(stages.ok()) << stages.status();
  absl::StatusOr<std::vector<std::string>> sqlite_stages = sqlite_->StageNames(sqlite_run->run_id);
  ASSERT_TRUE(sqlite_stages.ok());
  EXPECT_EQ(*stages, *sqlite_stages);

  absl::StatusOr<std::map<std::string, int64_t>> counters = clickhouse_->Counters(run);
  ASSERT_TRUE(counters.ok()) << counters.status();
  EXPECT_EQ(counters->at("orders_complete"), kOrders);
  EXPECT_EQ(counters->at("orders_incomplete"), 1);
  absl::StatusOr<std::map<std::string, int64_t>> sc = sqlite_->Counters(sqlite_run->run_id);
  ASSERT_TRUE(sc.ok());
  for (const char* name : {"samples", "orders_complete", "orders_incomplete", "drained"}) {
    EXPECT_EQ(counters->at(name), sc->at(name)) << name;
  }
  absl::StatusOr<std::vector<store::ProcessRow>> procs = clickhouse_->Processes(run);
  ASSERT_TRUE(procs.ok()) << procs.status();
  ASSERT_EQ(procs->size(), 1u);
  EXPECT_EQ(procs->front().name, "proc1");
  EXPECT_TRUE(clickhouse_->HasColumn("runs", "clock_error_ns"));
  EXPECT_FALSE(clickhouse_->HasColumn("runs", "no_such_column"));
}

// Every stage over the whole run and over the middle second: the counts
// the story says, percentiles within the histogram's error of the exact
// ones, and both backends equal (they hold the same histograms).
TEST_F(ClickHouseReaderTest, WindowStatisticsAgreeWithTheArchiveAndWithSqlite) {
  const int64_t run = clickhouse_->GetRun(std::nullopt)->run_id;
  const int64_t sqlite_run = sqlite_->GetRun(std::nullopt)->run_id;
  struct Window {
    store::TimeWindow w;
    int from, to;
  };
  // Order i's a is at 1 s + i ms: the second [2 s, 3 s) holds orders 1000..1999.
  const Window windows[] = {
      {store::TimeWindow{}, 1, kOrders + 1},
      {store::TimeWindow{kAnchorUtcNs + 2 * int64_t(kSecond), kAnchorUtcNs + 3 * int64_t(kSecond)}, 1000,
       2000}};
  for (const Window& win : windows) {
    absl::StatusOr<std::vector<store::WindowStageStatsRow>> ch = clickhouse_->StageWindowStats(run, win.w);
    ASSERT_TRUE(ch.ok()) << ch.status();
    absl::StatusOr<std::vector<store::WindowStageStatsRow>> sq =
        sqlite_->StageWindowStats(sqlite_run, win.w);
    ASSERT_TRUE(sq.ok()) << sq.status();
    ASSERT_EQ(ch->size(), 3u);
    ASSERT_EQ(ch->size(), sq->size());
    const char* order[] = {"a->b", "b->c", "total"};
    for (size_t k = 0; k < ch->size(); ++k) {
      const store::WindowStageStatsRow& c = (*ch)[k];
      const store::WindowStageStatsRow& s = (*sq)[k];
      EXPECT_EQ(c.stage, order[k]);
      const std::vector<double> exact = Expected(c.stage, win.from, win.to);
      EXPECT_EQ(c.count, int64_t(exact.size())) << c.stage;
      for (auto [q, got] : {std::pair{0.5, c.p50_ns}, {0.9, c.p90_ns}, {0.99, c.p99_ns}}) {
        ASSERT_TRUE(got.has_value()) << c.stage << " q " << q;
        const double e = ::ticktrace::testing::RankQuantile(exact, q);
        EXPECT_NEAR(*got, e, e * kRelativeError + 1) << c.stage << " q " << q;
      }
      EXPECT_DOUBLE_EQ(*c.min_ns, *std::min_element(exact.begin(), exact.end()));
      EXPECT_DOUBLE_EQ(*c.max_ns, *std::max_element(exact.begin(), exact.end()));
      // The same figures from both backends.
      EXPECT_EQ(c.stage, s.stage);
      EXPECT_EQ(c.count, s.count);
      EXPECT_EQ(c.samples_all, s.samples_all);
      EXPECT_EQ(c.p50_ns, s.p50_ns) << c.stage;
      EXPECT_EQ(c.p99_ns, s.p99_ns) << c.stage;
      EXPECT_EQ(c.p999_ns, s.p999_ns) << c.stage;
      EXPECT_DOUBLE_EQ(c.sum_ns, s.sum_ns);
      EXPECT_EQ(c.flag_counts, s.flag_counts);
      EXPECT_EQ(c.position, s.position);
      EXPECT_EQ(c.detail_complete, s.detail_complete);
    }
  }
  // The whole run's stage_stats rows (written by the collector) too.
  absl::StatusOr<std::vector<store::StageStatsRow>> ch = clickhouse_->StageStats(run);
  absl::StatusOr<std::vector<store::StageStatsRow>> sq = sqlite_->StageStats(sqlite_run);
  ASSERT_TRUE(ch.ok()) << ch.status();
  ASSERT_TRUE(sq.ok());
  ASSERT_EQ(ch->size(), sq->size());
  for (size_t k = 0; k < ch->size(); ++k) {
    EXPECT_EQ((*ch)[k].stage, (*sq)[k].stage);
    EXPECT_EQ((*ch)[k].count, (*sq)[k].count);
    EXPECT_EQ((*ch)[k].p99_ns, (*sq)[k].p99_ns);
  }
}

TEST_F(ClickHouseReaderTest, IntervalsPerSecondAgree) {
  const int64_t run = clickhouse_->GetRun(std::nullopt)->run_id;
  const int64_t sqlite_run = sqlite_->GetRun(std::nullopt)->run_id;
  absl::StatusOr<std::vector<store::IntervalRow>> ch =
      clickhouse_->Intervals(run, std::nullopt, store::TimeWindow{}, int64_t(kSecond));
  ASSERT_TRUE(ch.ok()) << ch.status();
  absl::StatusOr<std::vector<store::IntervalRow>> sq =
      sqlite_->Intervals(sqlite_run, std::nullopt, store::TimeWindow{}, int64_t(kSecond));
  ASSERT_TRUE(sq.ok()) << sq.status();
  ASSERT_EQ(ch->size(), sq->size());
  // Seconds 1, 2, 3 (orders 1..999, 1000..1999, 2000..2999) and 4 (3000).
  std::map<std::string, int64_t> seen;
  for (size_t k = 0; k < ch->size(); ++k) {
    const store::IntervalRow& c = (*ch)[k];
    const store::IntervalRow& s = (*sq)[k];
    EXPECT_EQ(c.stage, s.stage);
    EXPECT_EQ(c.start_utc_ns, s.start_utc_ns);
    EXPECT_EQ(c.count, s.count);
    EXPECT_EQ(c.p50_ns, s.p50_ns);
    EXPECT_EQ(c.p99_ns, s.p99_ns);
    EXPECT_EQ(c.orders, s.orders);
    EXPECT_EQ(c.orders_kept, s.orders_kept);
    const int64_t second = (c.start_utc_ns - kAnchorUtcNs) / int64_t(kSecond);
    const int from = second == 1 ? 1 : int(second - 1) * 1000;
    const int to = std::min<int>(int(second) * 1000, kOrders + 1);
    EXPECT_EQ(c.count, int64_t(Expected(c.stage, from, to).size())) << c.stage << " " << second;
    seen[c.stage] += c.count;
  }
  EXPECT_EQ(seen["a->b"], kOrders);
  EXPECT_EQ(seen["total"], kOrders);
  // A bucket of one minute holds everything; a bucket not a multiple of the
  // interval is refused.
  absl::StatusOr<std::vector<store::IntervalRow>> minute =
      clickhouse_->Intervals(run, std::string("b->c"), store::TimeWindow{}, 60 * int64_t(kSecond));
  ASSERT_TRUE(minute.ok()) << minute.status();
  ASSERT_EQ(minute->size(), 1u);
  EXPECT_EQ(minute->front().count, kOrders);
  EXPECT_FALSE(clickhouse_->Intervals(run, std::nullopt, store::TimeWindow{}, 1500000000).ok());
}

TEST_F(ClickHouseReaderTest, OrdersSamplesAndStampsAgree) {
  const int64_t run = clickhouse_->GetRun(std::nullopt)->run_id;
  const int64_t sqlite_run = sqlite_->GetRun(std::nullopt)->run_id;
  // The slowest a->b: 100 + (37 i mod 1000) + i is largest for i near 3000
  // with 37 i mod 1000 large; computed from the story, not the code.
  std::vector<std::pair<int64_t, int>> by_latency;
  for (int i = 1; i <= kOrders; ++i) by_latency.push_back({-Ab(i), i});
  std::sort(by_latency.begin(), by_latency.end());
  absl::StatusOr<std::vector<store::RankedOrder>> slow = clickhouse_->FindSlowest(run, "a->b", 5);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_EQ(slow->size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ((*slow)[k].order_id, by_latency[k].second) << k;
    EXPECT_DOUBLE_EQ((*slow)[k].latency_ns, double(-by_latency[k].first)) << k;
  }
  absl::StatusOr<std::vector<store::RankedOrder>> sqlite_slow = sqlite_->FindSlowest(sqlite_run, "a->b", 5);
  ASSERT_TRUE(sqlite_slow.ok());
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ((*slow)[k].order_id, (*sqlite_slow)[k].order_id);

  // One order: its row, samples and stamps.
  absl::StatusOr<std::optional<store::OrderRow>> o = clickhouse_->FindOrder(run, 17);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(o->has_value());
  EXPECT_TRUE((*o)->complete);
  EXPECT_EQ((*o)->first_utc_ns, kAnchorUtcNs + int64_t(ATsc(17)));
  EXPECT_EQ((*o)->total_ns, double(Ab(17) + Bc(17)));
  absl::StatusOr<std::vector<store::StampRow>> stamps = clickhouse_->Stamps(run, 17);
  ASSERT_TRUE(stamps.ok()) << stamps.status();
  ASSERT_EQ(stamps->size(), 3u);
  EXPECT_EQ((*stamps)[0].tag, "a");
  EXPECT_EQ((*stamps)[1].tsc, int64_t(ATsc(17) + Ab(17)));
  EXPECT_EQ((*stamps)[2].utc_ns, kAnchorUtcNs + int64_t(ATsc(17) + Ab(17) + Bc(17)));
  absl::StatusOr<std::vector<store::SampleRow>> samples = clickhouse_->SamplesOfOrder(run, 17);
  absl::StatusOr<std::vector<store::SampleRow>> sqlite_samples = sqlite_->SamplesOfOrder(sqlite_run, 17);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_TRUE(sqlite_samples.ok());
  ASSERT_EQ(samples->size(), sqlite_samples->size());
  for (size_t k = 0; k < samples->size(); ++k) {
    EXPECT_EQ((*samples)[k].stage, (*sqlite_samples)[k].stage);
    EXPECT_EQ((*samples)[k].start_utc_ns, (*sqlite_samples)[k].start_utc_ns);
    EXPECT_EQ((*samples)[k].latency_ns, (*sqlite_samples)[k].latency_ns);
  }
  absl::StatusOr<std::optional<store::OrderRow>> incomplete = clickhouse_->FindOrder(run, kOrders + 1);
  ASSERT_TRUE(incomplete.ok());
  ASSERT_TRUE(incomplete->has_value());
  EXPECT_FALSE((*incomplete)->complete);
  EXPECT_FALSE(clickhouse_->FindOrder(run, 99999)->has_value());

  absl::StatusOr<std::vector<store::OrderRow>> first = clickhouse_->OrdersByTime(run, 10);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ((*first)[k].order_id, k + 1);
  absl::StatusOr<std::vector<int64_t>> runs = clickhouse_->RunsWithOrder(17);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(*runs, std::vector<int64_t>{run});

  // Every sample of a->b once, in order.
  int64_t n = 0;
  store::SampleFilter filter;
  filter.stage = "a->b";
  ASSERT_TRUE(clickhouse_->ForEachSample(run, filter, true, [&](const store::SampleRow& r) {
    ++n;
    EXPECT_EQ(r.order_id, n);
    EXPECT_EQ(r.latency_ns, double(Ab(int(n))));
  }).ok());
  EXPECT_EQ(n, kOrders);
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> span = clickhouse_->SampleSpanUtcNs(run);
  absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> sqlite_span =
      sqlite_->SampleSpanUtcNs(sqlite_run);
  ASSERT_TRUE(span.ok()) << span.status();
  ASSERT_TRUE(sqlite_span.ok());
  EXPECT_EQ(*span, *sqlite_span);
  absl::StatusOr<store::DetailCoverage> cover = clickhouse_->DetailCompleteness(run, store::TimeWindow{});
  ASSERT_TRUE(cover.ok()) << cover.status();
  EXPECT_EQ(cover->orders, kOrders + 1);
  EXPECT_TRUE(cover->complete());
}

// Runs `ticktrace-view ARGS` in `dir` and returns its exit code and output.
std::pair<int, std::string> View(const TempDir& dir, const std::string& args) {
  const std::string cmd =
      absl::StrCat("cd '", dir.path(), "' && ", TICKTRACE_VIEW_BINARY, " ", args, " 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Every subcommand works with --store clickhouse://, and those that print
// only the data print what they print for the SQLite store.
TEST_F(ClickHouseReaderTest, EverySubcommandReadsClickHouse) {
  const std::string ch = server_->Uri("tt_reader");
  const std::string sq = dir_->File("store.db");
  const std::string same[] = {"orders --slowest 5 --stage 'a->b'", "order 17",
                              "percentiles --stage total", "intervals --stage 'a->b'"};
  for (const std::string& cmd : same) {
    const auto [ch_rc, ch_out] = View(*dir_, absl::StrCat(cmd, " --store ", ch));
    const auto [sq_rc, sq_out] = View(*dir_, absl::StrCat(cmd, " --store ", sq));
    EXPECT_EQ(ch_rc, 0) << cmd << "\n" << ch_out;
    EXPECT_EQ(sq_rc, 0) << cmd << "\n" << sq_out;
    EXPECT_EQ(absl::StrReplaceAll(ch_out, {{ch, "STORE"}}),
              absl::StrReplaceAll(sq_out, {{sq, "STORE"}}))
        << cmd;
  }
  const std::string out = dir_->File("out");
  const std::string any[] = {"summary", "summary --json", "runs",
                             absl::StrCat("export --format csv --force --out ", out, ".csv"),
                             absl::StrCat("export --format chrome --force --out ", out, ".json"),
                             absl::StrCat("report --force --out ", out, ".html"),
                             "top --iterations 1"};
  for (const std::string& cmd : any) {
    const auto [rc, text] = View(*dir_, absl::StrCat(cmd, " --store ", ch));
    EXPECT_EQ(rc, 0) << cmd << "\n" << text;
  }
  const auto [rc, text] = View(*dir_, absl::StrCat("summary --store ", ch));
  EXPECT_NE(text.find("a->b"), std::string::npos) << text;
  // A database without a store: one line, non-zero.
  const auto [bad_rc, bad] = View(*dir_, absl::StrCat("summary --store ", server_->Uri("nothing_here")));
  EXPECT_NE(bad_rc, 0);
  EXPECT_NE(bad.find("nothing_here"), std::string::npos) << bad;
}

}  // namespace
}  // namespace ticktrace::view
