// The collector through the store seam (collector/sinks/store_sink.h and the
// SQLite backend), end to end from an archive: window statistics against the
// detail, the tail policy, retention, the restart counter's names, and
// appending to a schema-1 store. Expected values are counted by hand from the
// inputs.

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/app/collector.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"
#include "tests/support/rank_quantile.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {
namespace {

constexpr uint32_t kCpu0 = 0;
constexpr uint64_t kSecondTicks = 1'000'000'000;  // the archives' TSC runs at 1 GHz

// `n` orders of stages a -> b on one core, `gap` ticks apart, order i's hop
// `hop(i)` ticks.
template <typename Hop>
ArchiveBuilder Orders(uint64_t n, uint64_t gap, Hop hop) {
  ArchiveBuilder b;
  b.Process(1, {"a", "b"});
  std::vector<abi::Record> records;
  for (uint64_t id = 1; id <= n; ++id) {
    const uint64_t t = kSecondTicks + id * gap;
    records.push_back(Stamp(0, id, t, kCpu0));
    records.push_back(Stamp(1, id, static_cast<uint64_t>(static_cast<int64_t>(t) + hop(id)), kCpu0));
  }
  b.Records(1, records);
  return b;
}

TEST(StoreSeam, EveryCounterTheCollectorWritesHasAName) {
  TempDir dir;
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  o.store_uri = store::StoreUri::LocalFile(dir.File("store.db"));
  testing::Replayed r = ReplayArchive(Orders(10, 1000, [](uint64_t) { return 100; }), dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(o.store_uri->path);
  for (const auto& row : q.Rows("SELECT name FROM counters")) {
    // Per-stage counters: "<counter>:<stage>".
    if (absl::StartsWith(row[0], "missing_stage:") || absl::StartsWith(row[0], "core_unknown:")) {
      continue;
    }
    EXPECT_TRUE(store::CounterByName(row[0]).has_value())
        << "counter '" << row[0] << "' is not in store/include/ticktrace/store/names.h";
  }
}

// 3000 orders over 3 s; hops grow with the id, so each second differs. The
// p50/p99 of every 1-s window, merged from the intervals, equal the exact
// ones from the stored detail within the histogram's 1/256.
TEST(StoreSeam, WindowStatisticsEqualTheDetail) {
  TempDir dir;
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  o.store_uri = store::StoreUri::LocalFile(dir.File("store.db"));
  auto hop = [](uint64_t id) { return static_cast<int64_t>(100 + (id * 37) % 1000 + id); };
  testing::Replayed r = ReplayArchive(Orders(3000, kSecondTicks / 1000, hop), dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(o.store_uri->path);
  const auto windows = q.Rows(
      "SELECT i.start_utc_ns, i.histogram FROM intervals i JOIN stages s USING (run_id, "
      "stage_id) WHERE s.name = 'a->b' ORDER BY i.start_utc_ns");
  ASSERT_GE(windows.size(), 3u);
  int64_t checked = 0;
  for (const auto& w : windows) {
    const int64_t start = std::stoll(w[0]);
    // StoreQuery returns text: read the blob again as bytes.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(o.store_uri->path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT i.histogram FROM intervals i JOIN stages s USING "
                                 "(run_id, stage_id) WHERE s.name = 'a->b' AND i.start_utc_ns = ?",
                                 -1, &s, nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(s, 1, start);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    absl::StatusOr<store::Histogram> h = store::Histogram::Decode(std::string(
        static_cast<const char*>(sqlite3_column_blob(s, 0)),
        static_cast<size_t>(sqlite3_column_bytes(s, 0))));
    sqlite3_finalize(s);
    sqlite3_close(db);
    ASSERT_TRUE(h.ok()) << h.status();
    std::vector<double> detail;
    for (const auto& row :
         q.Rows(absl::StrCat("SELECT latency_ns FROM stage_latencies WHERE stage = 'a->b' AND "
                             "first_utc_ns >= ", start, " AND first_utc_ns < ", start + 1000000000))) {
      detail.push_back(std::stod(row[0]));
    }
    ASSERT_EQ(h->count(), detail.size()) << start;
    for (double qq : {0.5, 0.99}) {
      const double exact = ::ticktrace::testing::RankQuantile(detail, qq);
      EXPECT_NEAR(h->Quantile(qq), exact, exact / 256 + 1) << start << " q " << qq;
    }
    checked += static_cast<int64_t>(detail.size());
  }
  EXPECT_EQ(checked, 3000);
}

// --detail tail, one interval of 1000 orders, hops 100 + id ns, except
// orders 500 and 600, whose b was stamped before a on the same core
// (out_of_order). Kept: the 10 slowest (991..1000), the flagged two, and 1 in
// 100 of the rest; every order is in the statistics.
TEST(StoreSeam, DetailTailKeepsTheSlowestAndTheFlagged) {
  TempDir dir;
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  o.store_uri = store::StoreUri::LocalFile(dir.File("store.db"));
  o.store.detail = store::DetailPolicy::kTail;
  auto hop = [](uint64_t id) -> int64_t { return id == 500 || id == 600 ? -50 : 100 + id; };
  testing::Replayed r = ReplayArchive(Orders(1000, 100000, hop), dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(o.store_uri->path);
  for (int id = 991; id <= 1000; ++id) {
    EXPECT_EQ(q.Int(absl::StrCat("SELECT count(*) FROM orders WHERE order_id = ", id)), 1) << id;
  }
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE order_id IN (500, 600)"), 2);
  const int64_t kept = q.Int("SELECT count(*) FROM orders");
  EXPECT_LE(kept, 10 + 2 + 1000 / 100 + 1);
  EXPECT_EQ(q.Int("SELECT sum(orders) FROM interval_detail"), 1000);
  EXPECT_EQ(q.Int("SELECT sum(orders_kept) FROM interval_detail"), kept);
  EXPECT_EQ(q.Int("SELECT sum(samples_all) FROM intervals i JOIN stages s USING (run_id, "
                  "stage_id) WHERE s.name = 'a->b'"),
            1000);
  EXPECT_EQ(q.Text("SELECT detail FROM runs"), "tail");
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'orders_detail_skipped'"), 1000 - kept);
}

// 6 s of orders with --retain-detail 2s: the detail of the intervals older
// than the newest order's second minus 2 s (and minus the settle time, during
// which old orders may still finish: here the order timeout 1 s, the linger
// 0.1 s and 2 intervals) is gone, marked; every interval is still there.
TEST(StoreSeam, RetentionDeletesOldDetailAndKeepsTheIntervals) {
  TempDir dir;
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  o.store_uri = store::StoreUri::LocalFile(dir.File("store.db"));
  o.store.retain_detail_ns = 2'000'000'000;
  o.store.retention_every_ns = 1;
  o.store.max_orders_per_transaction = 100;
  testing::Replayed r =
      ReplayArchive(Orders(600, kSecondTicks / 100, [](uint64_t) { return 100; }), dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  StoreQuery q(o.store_uri->path);
  EXPECT_EQ(q.Int("SELECT sum(samples_all) FROM intervals i JOIN stages s USING (run_id, "
                  "stage_id) WHERE s.name = 'a->b'"),
            600);
  // Newest first stamp at 7.0 s: cutoff 7.0 - 2 - 3.1 = 1.9 s, so the
  // interval of second 1 (orders from 1.01 s) goes.
  EXPECT_EQ(q.Int("SELECT count(*) FROM interval_detail WHERE detail_deleted = 1"), 1);
  EXPECT_EQ(q.Int("SELECT count(*) FROM interval_detail WHERE detail_deleted = 1 AND "
                  "orders_kept > 0 AND EXISTS (SELECT 1 FROM orders o WHERE o.first_utc_ns >= "
                  "interval_detail.start_utc_ns AND o.first_utc_ns < "
                  "interval_detail.start_utc_ns + 1000000000)"),
            0);
  // Orders 1..99 (first stamps 1.01 .. 1.99 s) were in it; 100..600 remain.
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders"), 501);
  EXPECT_EQ(q.Int("SELECT min(order_id) FROM orders"), 100);
}

// A schema-1 store made by the old code (tests/store/fixtures) gets a new
// run: migrated in place after a backup, said in one line; the old run's
// orders are all there.
TEST(StoreSeam, AppendingToASchema1StoreMigratesItWithABackup) {
  TempDir dir;
  const std::string path = dir.File("old.db");
  ASSERT_EQ(std::system(absl::StrCat("cp '", TICKTRACE_SOURCE_DIR,
                                     "/tests/store/fixtures/schema1_demo.db' '", path, "'")
                            .c_str()),
            0);
  CollectorOptions o;
  o.pipeline = {"a", "b"};
  o.store_uri = store::StoreUri::LocalFile(path);
  testing::Replayed r = ReplayArchive(Orders(10, 1000, [](uint64_t) { return 100; }), dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_NE(r.log.find("migrated in place to schema 4"), std::string::npos) << r.log;
  struct stat st;
  EXPECT_EQ(::stat((path + ".schema1.bak").c_str(), &st), 0);
  StoreQuery q(path);
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE run_id = 1"), 80);
  EXPECT_EQ(q.Int("SELECT count(*) FROM orders WHERE run_id = 2"), 10);
  EXPECT_EQ(q.Int("SELECT value FROM meta WHERE key = 'schema_version'"), 4);
}

}  // namespace
}  // namespace ticktrace::collect::testing
