// End to end: ticktrace-demo runs the collector and the three pipeline
// programs; the store must hold exactly what the pipeline produced, each
// stage's p50 must match the work it was given, pinned spans must not be
// flagged migrated, and nothing may be left in /dev/shm or the process table —
// also after Ctrl-C and after a child fails.

#include <signal.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "absl/strings/str_join.h"
#include "demo_runner.h"
#include "demo_store.h"
#include "example_test_util.h"
#include "gtest/gtest.h"
#include "messages.h"

namespace ticktrace::examples {
namespace {

using ::ticktrace::examples::testing::HaveProgram;
using ::ticktrace::examples::testing::MakeTempDir;
using ::ticktrace::examples::testing::ProcessesWithArgument;
using ::ticktrace::examples::testing::RunProgram;
using ::ticktrace::examples::testing::StartProgram;

constexpr uint64_t kTicks = 4000;
constexpr uint64_t kFeedWorkNs = 500;
constexpr uint64_t kStrategyWorkNs = 2000;
constexpr uint64_t kGatewayWorkNs = 1000;

// Runs one SQL query returning (text, integer) rows.
std::map<std::string, int64_t> QueryPairs(const std::string& db_path, const std::string& sql) {
  std::map<std::string, int64_t> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db) << " in " << sql;
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* key = sqlite3_column_text(stmt, 0);
      out[key != nullptr ? reinterpret_cast<const char*>(key) : ""] = sqlite3_column_int64(stmt, 1);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

class DemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    session_ = absl::StrCat("demo-test-", getpid(), "-", ++counter_);
    db_ = dir_ + "/demo.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  bool NeedCollector() const { return HaveProgram("ticktrace-collector"); }

  std::vector<std::string> DemoArgs(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--session", session_, "--db", db_, "--bin-dir",
                                     testing::BinDir()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Nothing of the session may outlive the demo: no /dev/shm entry, no process.
  void ExpectNothingLeftBehind() const {
    EXPECT_TRUE(SessionShmEntries(session_).empty())
        << "left in /dev/shm: " << absl::StrJoin(SessionShmEntries(session_), ", ");
    EXPECT_TRUE(ProcessesWithArgument(session_).empty()) << "processes of the session still run";
  }

  static inline int counter_ = 0;
  std::string dir_;
  std::string session_;
  std::string db_;
};

TEST_F(DemoTest, StoreHoldsWhatThePipelineProducedWithTheConfiguredWork) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  const auto result = RunProgram(
      "ticktrace-demo",
      DemoArgs({"--ticks", absl::StrCat(kTicks), "--rate", "8000", "--work-ns",
                absl::StrCat(kFeedWorkNs, ",", kStrategyWorkNs, ",", kGatewayWorkNs), "--pin"}),
      dir_, "demo", std::chrono::seconds(90));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("TSC frequency"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("where the time went"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("--slowest 5"), std::string::npos) << result.output;
  ExpectNothingLeftBehind();

  absl::StatusOr<std::optional<RunInfo>> run = FindRun(db_, session_);
  ASSERT_TRUE(run.ok() && run->has_value()) << run.status();
  absl::StatusOr<RunSummary> summary = ReadRunSummary(db_, (*run)->run_id);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const ExpectedCounts expected = CountsForTicks(kTicks);

  // Every stage present, with the count the pipeline produced: tick stages
  // once per tick, order stages once per order (a linked order's chain starts
  // at its tick, but the tick's own stages are counted once).
  const std::map<std::string, uint64_t> want_counts = {
      {"md_rx->md_decoded", expected.ticks},   {"md_decoded->strat_in", expected.ticks},
      {"decide", expected.ticks},              {"strat_in->strat_out", expected.orders},
      {"strat_out->gw_in", expected.orders},   {"gw_in->gw_sent", expected.orders},
      {"total", expected.orders}};
  std::map<std::string, StageStats> stages;
  for (const StageStats& s : summary->stages) stages[s.stage] = s;
  for (const auto& [stage, count] : want_counts) {
    ASSERT_EQ(stages.count(stage), 1u) << "missing stage " << stage;
    EXPECT_EQ(static_cast<uint64_t>(stages[stage].count), count) << stage;
    EXPECT_EQ(stages[stage].migrated, 0) << stage << ": pinned threads must not migrate";
  }
  EXPECT_EQ(stages.size(), want_counts.size());
  EXPECT_EQ(summary->stages.back().stage, "total");

  // The per-sample table agrees with the aggregates.
  EXPECT_EQ(summary->counters["samples_not_stored"], 0);
  const auto sample_counts = QueryPairs(
      db_, absl::StrCat("SELECT stage, COUNT(*) FROM samples WHERE run_id = ", (*run)->run_id,
                        " GROUP BY stage"));
  for (const auto& [stage, count] : want_counts) {
    EXPECT_EQ(static_cast<uint64_t>(sample_counts.count(stage) ? sample_counts.at(stage) : 0),
              count)
        << stage;
  }

  // Counters: nothing lost; every order complete; the incomplete ones are the
  // ticks that made no order.
  EXPECT_EQ(summary->counters["dropped"], 0);
  EXPECT_EQ(summary->counters["malformed"], 0);
  EXPECT_EQ(static_cast<uint64_t>(summary->counters["orders_complete"]), expected.orders);
  EXPECT_EQ(static_cast<uint64_t>(summary->counters["orders_incomplete"]),
            expected.ticks_without_order);

  // Fan-out: how many ticks have one and two linked orders, and each order's
  // parent is its own tick.
  const auto fan_out = QueryPairs(
      db_, absl::StrCat("SELECT children, COUNT(*) FROM (SELECT parent_order_id, COUNT(*) AS "
                        "children FROM orders WHERE run_id = ", (*run)->run_id,
                        " AND parent_order_id IS NOT NULL GROUP BY parent_order_id) "
                        "GROUP BY children"));
  EXPECT_EQ(fan_out.size(), 2u);
  EXPECT_EQ(static_cast<uint64_t>(fan_out.count("1") ? fan_out.at("1") : 0),
            expected.ticks_with_one_order);
  EXPECT_EQ(static_cast<uint64_t>(fan_out.count("2") ? fan_out.at("2") : 0),
            expected.ticks_with_two_orders);
  const auto wrong_parent = QueryPairs(
      db_, absl::StrCat("SELECT 'n', COUNT(*) FROM orders WHERE run_id = ", (*run)->run_id,
                        " AND parent_order_id IS NOT NULL AND parent_order_id != ((order_id - ",
                        kOrderIdBase, ") >> 1)"));
  EXPECT_EQ(wrong_parent.at("n"), 0);

  // p50 against the configured work. In-thread stages: the work plus the
  // stamps' own cost (tens of ns), within the histogram's 1% and a fixed 200 ns
  // of slack for a VM. strat_in->strat_out also holds the span's two rdtscp,
  // the link and, for a second order, one more queue push: within 1 us.
  auto expect_work = [&](const std::string& stage, uint64_t work_ns, double slack_ns) {
    const double p50 = stages[stage].p50_ns;
    EXPECT_GE(p50, work_ns * 0.99 - 20) << stage;
    EXPECT_LE(p50, work_ns * 1.01 + slack_ns) << stage;
  };
  expect_work("md_rx->md_decoded", kFeedWorkNs, 200);
  expect_work("decide", kStrategyWorkNs, 200);
  expect_work("gw_in->gw_sent", kGatewayWorkNs, 200);
  expect_work("strat_in->strat_out", kStrategyWorkNs, 1000);
  // Queue hops carry no injected work: positive, and (on a machine shared
  // with other work) under 100 ms at the median.
  for (const char* hop : {"md_decoded->strat_in", "strat_out->gw_in"}) {
    EXPECT_GT(stages[hop].p50_ns, 0) << hop;
    EXPECT_LT(stages[hop].p50_ns, 100e6) << hop;
  }
  EXPECT_GE(stages["total"].p50_ns, 0.99 * (kFeedWorkNs + kStrategyWorkNs + kGatewayWorkNs));
}

TEST_F(DemoTest, CtrlCStopsEverythingAndLeavesNothing) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  absl::StatusOr<Child> demo = StartProgram(
      "ticktrace-demo", DemoArgs({"--ticks", "10000000", "--rate", "10000", "--tsc-hz", "2e9"}),
      dir_, "demo");
  ASSERT_TRUE(demo.ok()) << demo.status();
  // Interrupt once the feed runs (its queue exists and ticks flow).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && !demo->Poll() &&
         ReadFileOrEmpty(demo->log_path()).find("== running") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_FALSE(demo->Poll()) << ReadFileOrEmpty(demo->log_path());
  EXPECT_FALSE(ProcessesWithArgument(session_).empty()) << "the pipeline should be running";
  demo->Signal(SIGINT);
  ASSERT_TRUE(demo->WaitFor(std::chrono::seconds(60))) << ReadFileOrEmpty(demo->log_path());
  EXPECT_EQ(demo->exit_code(), kDemoInterrupted) << ReadFileOrEmpty(demo->log_path());
  ExpectNothingLeftBehind();
}

TEST_F(DemoTest, AKilledDemoTakesItsChildrenAlongAndTheNextDemoSweepsTheRest) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  // No --session: the demo names it demo-<time>-<its pid>, which the sweep recognises.
  absl::StatusOr<Child> demo = StartProgram(
      "ticktrace-demo",
      {"--db", db_, "--bin-dir", testing::BinDir(), "--ticks", "10000000", "--tsc-hz", "2e9"},
      dir_, "demo");
  ASSERT_TRUE(demo.ok()) << demo.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && !demo->Poll() &&
         ReadFileOrEmpty(demo->log_path()).find("== running") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string log = ReadFileOrEmpty(demo->log_path());
  const size_t at = log.find("session demo-");
  ASSERT_NE(at, std::string::npos) << log;
  session_ = log.substr(at + 8, log.find(',', at) - (at + 8));
  ASSERT_EQ(session_, absl::StrCat(session_.substr(0, session_.rfind('-')), "-", demo->pid()));
  demo->Signal(SIGKILL);
  ASSERT_TRUE(demo->WaitFor(std::chrono::seconds(10)));
  // The children got SIGTERM from the kernel (parent-death signal) and stop.
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!ProcessesWithArgument(session_).empty() && std::chrono::steady_clock::now() < gone_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ProcessesWithArgument(session_).empty());
  // What the next ticktrace-demo does first. A process that has just exited
  // may not be reaped yet (kill(pid, 0) still succeeds), and the sweep leaves
  // the segments of live pids alone: retry for a while.
  const auto swept_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    SweepStaleDemoSessions();
    if (SessionShmEntries(session_).empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < swept_by);
  ExpectNothingLeftBehind();
}

TEST_F(DemoTest, AFailingChildStopsEverythingAndLeavesNothing) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  // cpu 1000 does not exist here: the gateway fails to pin itself and exits 1.
  const auto result = RunProgram(
      "ticktrace-demo",
      DemoArgs({"--ticks", "100000", "--rate", "10000", "--cpus", "0,0,1000", "--tsc-hz", "2e9"}),
      dir_, "demo", std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, kDemoFailed) << result.output;
  EXPECT_NE(result.output.find("ticktrace-example-gateway exited 1"), std::string::npos)
      << result.output;
  ExpectNothingLeftBehind();
}

TEST_F(DemoTest, BadFlagsGetOneLineAndExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--ticks", "many"}, {"--work-ns", "1,2"}, {"--rate=-5"},
        {"--no-such-flag"}, {"--pin=perhaps"}}) {
    const auto r = RunProgram("ticktrace-demo", args, dir_, "demo", std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, kDemoBadInput) << args[0] << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(r.output.rfind("ticktrace-demo: ", 0), 0u) << r.output;
  }
}

TEST_F(DemoTest, RefusesAnExistingFileThatIsNotAStoreAndLeavesItUntouched) {
  const std::string precious = dir_ + "/precious.db";
  const std::string content = "not a database, and not yours to overwrite\n";
  std::ofstream(precious) << content;
  const auto r = RunProgram("ticktrace-demo", DemoArgs({"--db", precious}), dir_, "demo",
                            std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, kDemoBadInput) << r.output;
  EXPECT_NE(r.output.find("refusing"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFileOrEmpty(precious), content);
  ExpectNothingLeftBehind();
}

}  // namespace
}  // namespace ticktrace::examples
