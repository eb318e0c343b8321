// The counters and the statistics a reader sees mid-run were written by the
// same commit (collector/sinks/store_sink.h, "Counters with the statistics"):
// polled many times while records flow, the store's counters are never
// behind its interval rows, its order rows or its per-interval order counts.
// Each poll is one SELECT, so it reads one commit of the store.

#include <sqlite3.h>

#include "store/sqlite/sqlite_block_sql.h"
#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using LiveConsistencyTest = RelTestOf<"liveconsistent">;

// One commit's figures (NULL counters read as -1: not written yet).
struct Figures {
  int64_t samples_counted = -1;  // counter `samples`
  int64_t orders_counted = -1;   // counters orders_complete + orders_incomplete
  int64_t drained = -1;          // counter `drained`
  int64_t interval_samples = 0;  // SUM(intervals.samples_all)
  int64_t interval_orders = 0;   // SUM(interval_detail.orders)
  int64_t order_rows = 0;        // COUNT(*) FROM orders
};

// Reads the figures in one statement; false when the store is not there yet.
bool ReadFigures(const std::string& path, Figures* f) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_busy_timeout(db, 5000);
  // `orders` is a view over the blocks that needs the store's SQL functions
  // (sqlite_block_sql.h): registered here, since nothing else of the store
  // library need be linked into this test.
  if (!ticktrace::store::RegisterBlockSqlFunctions(db).ok()) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "SELECT (SELECT value FROM counters WHERE name = 'samples'),"
      " (SELECT value FROM counters WHERE name = 'orders_complete')"
      "   + (SELECT value FROM counters WHERE name = 'orders_incomplete'),"
      " (SELECT value FROM counters WHERE name = 'drained'),"
      " (SELECT COALESCE(SUM(samples_all), 0) FROM intervals),"
      " (SELECT COALESCE(SUM(orders), 0) FROM interval_detail),"
      " (SELECT COUNT(*) FROM orders)";
  bool ok =
      sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW;
  if (ok) {
    auto get = [s](int i) -> int64_t {
      return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, i);
    };
    f->samples_counted = get(0);
    f->orders_counted = get(1);
    f->drained = get(2);
    f->interval_samples = get(3);
    f->interval_orders = get(4);
    f->order_rows = get(5);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return ok;
}

TEST_F(LiveConsistencyTest, CountersAreNeverBehindTheRowsTheyCounted) {
  // Two threads of 30000 two-stamp orders (a, b: two samples each, the hop
  // a->b and the order's total), 8 orders
  // every 2 ms: about 7.5 s of records, many of the sink's 200 ms handovers
  // and several one-second snapshots.
  constexpr int64_t kOrdersPerThread = 30000;
  constexpr int64_t kThreads = 2;
  constexpr int64_t kOrders = kOrdersPerThread * kThreads;
  constexpr int64_t kSamples = 2 * kOrders;
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const pid_t producer = StartProducer(
      {"--mode", "seq", "--threads", std::to_string(kThreads), "--ring", "1048576", "--orders",
       std::to_string(kOrdersPerThread), "--pace-every", "8", "--pace-us", "2000"},
      "producer.log");

  int polls_with_rows = 0, polls_mid_run = 0;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    Figures f;
    if (FileExists(db()) && ReadFigures(db(), &f) && f.interval_samples > 0) {
      ++polls_with_rows;
      if (f.interval_samples < kSamples) ++polls_mid_run;
      // Every stored sample was counted, and every order with a row or an
      // interval count was counted as finished.
      ASSERT_GE(f.samples_counted, f.interval_samples)
          << "poll " << polls_with_rows << ": drained " << f.drained << ", orders counted "
          << f.orders_counted;
      ASSERT_GE(f.orders_counted, f.interval_orders) << "poll " << polls_with_rows;
      ASSERT_GE(f.orders_counted, f.order_rows) << "poll " << polls_with_rows;
      // An order is two records: its records were counted as drained.
      ASSERT_GE(f.drained, 2 * f.order_rows) << "poll " << polls_with_rows;
      if (f.order_rows == kOrders && f.interval_samples == kSamples) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  // The check ran while the run went on, not only on the final figures.
  EXPECT_GE(polls_mid_run, 20) << ReadFile(log());
  EXPECT_EQ(WaitExit(producer, 120s), 0);
  Forget(producer);
  StopCollector(c);
  Figures end;
  ASSERT_TRUE(ReadFigures(db(), &end));
  EXPECT_EQ(end.samples_counted, kSamples);
  EXPECT_EQ(end.interval_samples, kSamples);
  EXPECT_EQ(end.orders_counted, kOrders);
  EXPECT_EQ(end.order_rows, kOrders);
  EXPECT_EQ(end.drained, 2 * kOrders);
}

}  // namespace
}  // namespace ticktrace::reliability
