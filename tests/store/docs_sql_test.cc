// Every SQL example of docs/store.md (each ```sql block but the schema's)
// runs against a real store the writer made, and the ones whose answer can
// be counted by hand give that answer: the examples are what a user types
// first, so a schema change that breaks one fails here.

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/names.h"
#include "gtest/gtest.h"

namespace ticktrace::store {
namespace {

using Rows = std::vector<std::vector<std::string>>;

// The statements of docs/store.md's ```sql blocks, comment lines dropped,
// except the block that creates the schema.
std::vector<std::string> ExampleStatements() {
  std::ifstream in(std::string(TICKTRACE_SOURCE_DIR) + "/docs/store.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  std::vector<std::string> statements;
  for (size_t at = text.find("```sql\n"); at != std::string::npos;
       at = text.find("```sql\n", at)) {
    at += 7;
    const size_t end = text.find("```", at);
    if (end == std::string::npos) break;
    const std::string block = text.substr(at, end - at);
    at = end + 3;
    if (block.find("CREATE TABLE") != std::string::npos) continue;
    std::string code;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "--")) continue;
      code.append(line.data(), line.size()).push_back('\n');
    }
    for (absl::string_view s : absl::StrSplit(code, ';')) {
      s = absl::StripAsciiWhitespace(s);
      if (!s.empty()) statements.emplace_back(s);
    }
  }
  return statements;
}

Rows Query(sqlite3* db, const std::string& sql) {
  Rows rows;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    return rows;
  }
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    rows.emplace_back();
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      rows.back().emplace_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
  }
  if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  sqlite3_finalize(s);
  return rows;
}

// The example that contains `needle` (each example is told by a phrase
// of its own).
std::string ExampleWith(const std::vector<std::string>& examples, const std::string& needle) {
  for (const std::string& e : examples) {
    if (e.find(needle) != std::string::npos) return e;
  }
  ADD_FAILURE() << "docs/store.md has no SQL example with '" << needle << "'";
  return "SELECT 1 WHERE 0";
}

constexpr int64_t kSecond = 1'000'000'000;
// The examples' window starts here (docs/store.md).
constexpr int64_t kT = 1'764'590'000 * kSecond;

OrderDetail HopOrder(uint64_t id, int64_t first_utc_ns, int64_t hop_ns) {
  OrderDetail o;
  o.order_id = id;
  o.first_utc_ns = first_utc_ns;
  o.first_tsc = 1000;
  o.first_tsc_utc_ns = first_utc_ns;
  o.total_ns = static_cast<double>(hop_ns);
  o.complete = true;
  o.stamps.push_back({.tag = "strat_out", .process_id = 1, .tid = 1, .cpu = 0, .tsc = 1000,
                      .utc_ns = first_utc_ns});
  o.stamps.push_back({.tag = "gw_in", .process_id = 2, .tid = 2, .cpu = 1,
                      .tsc = 1000 + static_cast<uint64_t>(hop_ns),
                      .utc_ns = first_utc_ns + hop_ns});
  for (const std::string& stage : {std::string("strat_out->gw_in"), std::string(kTotalStage)}) {
    o.samples.push_back({.stage = stage, .start_utc_ns = first_utc_ns,
                         .latency_ns = static_cast<double>(hop_ns), .process_begin = 1,
                         .process_end = 2, .cpu_begin = 0, .cpu_end = 1});
  }
  return o;
}

IntervalDelta HopDelta(int64_t start, int64_t hop_ns) {
  IntervalDelta d;
  d.stage = "strat_out->gw_in";
  d.start_utc_ns = start;
  d.samples_all = 1;
  d.histogram.Add(static_cast<double>(hop_ns));
  return d;
}

TEST(StoreDocsSql, EveryExampleRunsAndTheCountableOnesGiveTheHandAnswer) {
  const std::vector<std::string> examples = ExampleStatements();
  ASSERT_GE(examples.size(), 4u);

  char tmpl[] = "/tmp/ticktrace_docs_sql_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/docs.db";
  {
    absl::StatusOr<std::unique_ptr<SqliteWriter>> w = SqliteWriter::OpenOrCreate(path);
    ASSERT_TRUE(w.ok()) << w.status();
    RunMeta meta;
    meta.tsc_hz = 1e9;
    int64_t run = 0;
    for (int i = 0; i < 3; ++i) {  // the examples ask about run 3
      absl::StatusOr<int64_t> r = (*w)->BeginRun(meta);
      ASSERT_TRUE(r.ok()) << r.status();
      run = *r;
    }
    ASSERT_EQ(run, 3);
    uint64_t already = 0;
    // Run 3: orders 100..111, one a second from kT, hops of 100..1200 ns;
    // order 112 at kT + 100 s (outside the examples' minute-long window),
    // 50 ns. The interval at kT + 5 s counted one order more than it kept.
    std::vector<OrderDetail> orders;
    std::vector<IntervalDelta> deltas;
    std::vector<IntervalOrders> counted;
    for (int k = 0; k < 12; ++k) {
      const int64_t start = kT + k * kSecond;
      orders.push_back(HopOrder(100 + k, start + 7, 100 * (k + 1)));
      deltas.push_back(HopDelta(start, 100 * (k + 1)));
      counted.push_back({.start_utc_ns = start, .orders = k == 5 ? 2u : 1u});
    }
    orders.push_back(HopOrder(112, kT + 100 * kSecond, 50));
    deltas.push_back(HopDelta(kT + 100 * kSecond, 50));
    counted.push_back({.start_utc_ns = kT + 100 * kSecond, .orders = 1});
    ASSERT_TRUE((*w)->Write(3, deltas, counted, orders, nullptr, &already).ok());
    // Run 1: a slower hop the examples' run_id = 3 must leave out.
    ASSERT_TRUE((*w)->Write(1, {HopDelta(kT, 99'999)}, {{.start_utc_ns = kT, .orders = 1}},
                            {HopOrder(100, kT + 3, 99'999)}, nullptr, &already)
                    .ok());
    ASSERT_EQ(already, 0u);
  }

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  for (const std::string& sql : examples) Query(db, sql);  // each runs

  // The 10 slowest hops of run 3: 1200 ns (order 111) down to 300 ns (102).
  const Rows slowest = Query(db, ExampleWith(examples, "LIMIT 10"));
  ASSERT_EQ(slowest.size(), 10u);
  EXPECT_EQ(slowest.front(), (std::vector<std::string>{"111", "0", "1200", "0"}));
  EXPECT_EQ(slowest.back(), (std::vector<std::string>{"102", "0", "300", "0"}));

  // Per stage in the window: 12 orders each, mean (100 + 1200) / 2 = 650.
  const Rows per_stage = Query(db, ExampleWith(examples, "GROUP BY stage"));
  EXPECT_EQ(per_stage, (Rows{{"strat_out->gw_in", "12", "650.0"}, {"total", "12", "650.0"}}));

  // Per minute from the intervals: kT .. kT + 11 s share minute 29409833
  // (kT / 60 s = 29409833.3), kT + 100 s is minute 29409835.
  const Rows per_minute = Query(db, ExampleWith(examples, "start_utc_ns / 60000000000"));
  EXPECT_EQ(per_minute, (Rows{{"strat_out->gw_in", "29409833", "12", "650.0", "1200.0"},
                              {"strat_out->gw_in", "29409835", "1", "50.0", "50.0"}}));

  // The one interval whose detail is incomplete: kT + 5 s, 2 counted, 1 kept.
  const Rows incomplete = Query(db, ExampleWith(examples, "orders_kept < orders"));
  EXPECT_EQ(incomplete,
            (Rows{{std::to_string(kT + 5 * kSecond), "2", "1", "0"}}));
  sqlite3_close(db);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace ticktrace::store
