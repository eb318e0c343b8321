// The collector binary replays one archive twice, into SQLite and into a
// real ClickHouse server (`--store clickhouse://127.0.0.1:PORT/db`); both
// stores must hold the same per-stage figures (the backend must not change
// a number: the same pipeline gives the same figures in SQLite and ClickHouse).
// The expected counts also come from the archive the test builds: 3000
// orders through three stages, so 3000 samples per stage.

#include <sqlite3.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ticktrace/store/open.h"
#include "ticktrace/store/reader.h"
#include "ticktrace/store/uri.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/support/clickhouse_server.h"

namespace ticktrace::collect {
namespace {

using testing::ArchiveBuilder;
using testing::Stamp;
using testing::TempDir;
using ticktrace::testing::ClickHouseServer;

constexpr int kOrders = 3000;

// stage -> (count in the percentiles, samples_all, orders of the stage's detail)
using Figures = std::map<std::string, std::tuple<uint64_t, uint64_t, double>>;

Figures FromSqlite(const std::string& path, uint64_t* orders) {
  Figures f;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT st.name, sum(i.count), sum(i.samples_all), "
                               "(SELECT p99_ns FROM stage_stats ss WHERE ss.stage = st.name) "
                               "FROM intervals i JOIN stages st USING (run_id, stage_id) "
                               "GROUP BY st.name",
                               -1, &s, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  while (sqlite3_step(s) == SQLITE_ROW) {
    f[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] = {
        static_cast<uint64_t>(sqlite3_column_int64(s, 1)),
        static_cast<uint64_t>(sqlite3_column_int64(s, 2)), sqlite3_column_double(s, 3)};
  }
  sqlite3_finalize(s);
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT count() FROM orders", -1, &s, nullptr), SQLITE_OK);
  if (sqlite3_step(s) == SQLITE_ROW) *orders = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return f;
}

Figures FromClickHouse(const ClickHouseServer& ch, uint64_t* orders) {
  Figures f;
  absl::StatusOr<std::string> rows = ch.Query(
      "SELECT stage, sum(count), sum(samples_all), "
      "any(p99) FROM tt.intervals ANY LEFT JOIN (SELECT run_id, stage, p99_ns AS p99 FROM "
      "tt.stage_stats FINAL) USING (run_id, stage) GROUP BY stage FORMAT TabSeparated");
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return f;
  for (absl::string_view line : absl::StrSplit(*rows, '\n', absl::SkipEmpty())) {
    std::vector<std::string> c = absl::StrSplit(line, '\t');
    if (c.size() != 4) continue;
    uint64_t n = 0, all = 0;
    double p99 = 0;
    EXPECT_TRUE(absl::SimpleAtoi(c[1], &n) && absl::SimpleAtoi(c[2], &all) &&
                absl::SimpleAtod(c[3], &p99))
        << line;
    f[c[0]] = {n, all, p99};
  }
  absl::StatusOr<std::string> n = ch.Query("SELECT count() FROM tt.orders");
  EXPECT_TRUE(n.ok());
  if (n.ok()) {
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*n), orders));
  }
  return f;
}

int RunCollectorBinary(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {TICKTRACE_COLLECTOR_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = testing::Spawn(argv, log, {});
  return testing::WaitExit(pid, std::chrono::seconds(240));
}

TEST(ClickHouseReplayTest, SameArchiveGivesTheSameStagesInSqliteAndClickHouse) {
  if (auto why = ClickHouseServer::SkipReason()) GTEST_SKIP() << *why;
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
  ASSERT_TRUE(ch.ok()) << ch.status();
  TempDir dir;
  // Three processes, 3000 orders 1 ms apart (3 s: several intervals),
  // md_rx -> decide 1000 + (id % 97) ns, decide -> order_sent 2000 + (id % 89).
  ArchiveBuilder b;
  b.Process(1, {"md_rx"}).Process(2, {"decide"}).Process(3, {"order_sent"});
  std::vector<abi::Record> p1, p2, p3;
  for (uint64_t id = 1; id <= kOrders; ++id) {
    const uint64_t t = 1'000'000 + id * 1'000'000;
    p1.push_back(Stamp(0, id, t));
    p2.push_back(Stamp(0, id, t + 1000 + id % 97));
    p3.push_back(Stamp(0, id, t + 3000 + id % 97 + id % 89));
  }
  b.Clock(1).Records(1, p1).Records(2, p2).Records(3, p3).Clock(uint64_t{20'000'000'000});
  const std::string raw = dir.File("in.raw");
  b.Write(raw);
  // A budget every interval breaks (its max is far above 1 ns): each
  // interval's breach row, in both stores, with all of its samples.
  const std::vector<std::string> common = {"--replay", raw, "--pipeline",
                                           "md_rx,decide,order_sent", "--session", "chreplay",
                                           "--budget", "md_rx->decide:max<1ns"};
  std::vector<std::string> to_sqlite = common;
  to_sqlite.insert(to_sqlite.end(), {"--store", "sqlite:" + dir.File("s.db")});
  ASSERT_EQ(RunCollectorBinary(to_sqlite, dir.File("sqlite.log")), 0)
      << testing::ReadFile(dir.File("sqlite.log"));
  std::vector<std::string> to_ch = common;
  to_ch.insert(to_ch.end(), {"--store", (*ch)->Uri("tt")});
  ASSERT_EQ(RunCollectorBinary(to_ch, dir.File("ch.log")), 0)
      << testing::ReadFile(dir.File("ch.log"));

  uint64_t sqlite_orders = 0, ch_orders = 0;
  const Figures s = FromSqlite(dir.File("s.db"), &sqlite_orders);
  const Figures c = FromClickHouse(**ch, &ch_orders);
  EXPECT_EQ(sqlite_orders, uint64_t{kOrders});
  EXPECT_EQ(ch_orders, uint64_t{kOrders});
  for (const char* stage : {"md_rx->decide", "decide->order_sent", "total"}) {
    ASSERT_TRUE(c.count(stage)) << stage;
    EXPECT_EQ(std::get<0>(c.at(stage)), uint64_t{kOrders}) << stage;
    EXPECT_EQ(std::get<1>(c.at(stage)), uint64_t{kOrders}) << stage;
  }
  EXPECT_EQ(s, c);
  std::vector<store::BudgetBreachRow> breaches[2];
  const std::string uris[2] = {"sqlite:" + dir.File("s.db"), (*ch)->Uri("tt")};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<store::StoreUri> uri = store::ParseStoreUri(uris[i]);
    ASSERT_TRUE(uri.ok()) << uri.status();
    absl::StatusOr<std::unique_ptr<store::StoreReader>> reader = store::OpenReader(*uri);
    ASSERT_TRUE(reader.ok()) << reader.status();
    absl::StatusOr<store::RunRow> run = (*reader)->GetRun(std::nullopt);
    ASSERT_TRUE(run.ok()) << run.status();
    absl::StatusOr<std::vector<store::BudgetBreachRow>> rows = (*reader)->BudgetBreaches(run->run_id);
    ASSERT_TRUE(rows.ok()) << rows.status();
    breaches[i] = *rows;
  }
  EXPECT_GE(breaches[0].size(), 3u);  // 3 s of orders
  int64_t samples = 0;
  for (const store::BudgetBreachRow& row : breaches[0]) {
    EXPECT_EQ(row.budget, "md_rx->decide:max<1ns");
    EXPECT_EQ(row.stat, "max");
    EXPECT_EQ(row.limit_ns, 1);
    samples += row.samples;
  }
  EXPECT_EQ(samples, kOrders);
  EXPECT_EQ(breaches[0], breaches[1]);
  // The run ended cleanly in ClickHouse too.
  absl::StatusOr<std::string> ended =
      (*ch)->Query("SELECT count() FROM tt.runs FINAL WHERE ended_utc_ns IS NOT NULL");
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(absl::StripAsciiWhitespace(*ended), "1");
}

}  // namespace
}  // namespace ticktrace::collect
