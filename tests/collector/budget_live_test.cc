// Latency budgets end to end (docs/collector.md, Budgets): a producer with a
// known latency distribution, a live collector with --budget and --budgets,
// its breach counters, rows and stderr line, /metrics scraped by a real
// Prometheus (Debian's `prometheus`), and `ticktrace-view check` on the store.
//
// The producer (collector_test_producer --mode spin) stamps a, busy-waits on
// the TSC, stamps b: 2 us for every order but each 50th (n % 50 == 0), which
// waits 60 us. By hand, for an interval holding n >= 100 consecutive orders
// of stage a->b: at least floor(n / 50) >= 0.02 n - 1 of them are slow, more
// than the n - ceil(0.99 n) <= 0.01 n above the p99's rank, so its p99 is a
// slow one, >= 60 us (a preempted wait is only longer): every interval with
// 100 samples or more breaks `a->b:p99<30us`; one with fewer cannot be judged
// for p99 (it needs 100). Its p50 is a 2 us order unless half the orders
// were preempted for 28 us: `a->b:p50<30us` holds in every interval with 2
// samples or more. `a->b:max<=10s` holds.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/prometheus_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {
namespace {

constexpr char kOver[] = "a->b:p99<30us";
constexpr char kWithin[] = "a->b:p50<30us";
constexpr char kMax[] = "a->b:max<=10s";

// Occurrences of `needle` in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct ViewerRun {
  int exit_code = -1;
  std::string output;
};

ViewerRun RunViewer(const TempDir& dir, const std::vector<std::string>& args) {
  const std::string log = dir.File("viewer.out");
  std::remove(log.c_str());
  std::vector<std::string> argv = {TICKTRACE_VIEW_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  ViewerRun r;
  r.exit_code = WaitExit(Spawn(argv, log), std::chrono::seconds(60));
  r.output = ReadFile(log);
  return r;
}

TEST(BudgetLiveTest, BreachesAreCountedStoredSaidScrapedAndChecked) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (Debian package 'prometheus'; .ci/quickstart.sh "
                    "installs it in test mode)";
  }
  TempDir dir;
  const std::string session = "t_budget_live_" + std::to_string(getpid());
  const std::string db = dir.File("b.db");
  const std::string clog = dir.File("collector.log");
  const std::string budgets_file = dir.File("budgets.txt");
  std::ofstream(budgets_file) << "# the maximum, from a file\n" << kMax << "\n";
  const std::string tsc_hz = absl::StrFormat("%.0f", TestTscHz());
  const pid_t collector =
      Spawn({TICKTRACE_COLLECTOR_BIN, "--session", session, "--db", db, "--pipeline", "a,b",
             "--tsc-hz", tsc_hz, "--metrics-listen", "127.0.0.1:0", "--budget", kOver,
             "--budget", kWithin, "--budgets", budgets_file},
            clog);
  const uint16_t port = WaitMetricsPort(clog);
  const bool ready = port != 0;
  pid_t prom = -1;
  auto cleanup = [&] {
    if (prom > 0) {
      kill(prom, SIGTERM);
      WaitExit(prom, std::chrono::seconds(30));
      prom = -1;
    }
    kill(collector, SIGTERM);
    WaitExit(collector, std::chrono::seconds(120));
    RemoveSessionSegments(session);
  };
  if (!ready) {
    cleanup();
    FAIL() << ReadFile(clog);
  }

  // About 3 s of orders at ~45 k/s (2 us + 20 us of pause each).
  const pid_t producer =
      Spawn({TICKTRACE_TEST_PRODUCER_BIN, "--session", session, "--mode", "spin", "--orders",
             "150000", "--pace-ns", "20000", "--work-ns", "2000", "--slow-every", "50",
             "--slow-work-ns", "60000", "--tsc-hz", tsc_hz},
            dir.File("producer.log"));
  EXPECT_EQ(WaitExit(producer, std::chrono::seconds(120)), 0) << ReadFile(dir.File("producer.log"));

  // Every interval of the run is judged while the collector still runs: the
  // stream's clock anchors move on while it is idle (about 4 s after the
  // last order: the order timeout, the linger, two intervals).
  const std::string stage_intervals =
      "FROM intervals i JOIN stages s ON s.run_id = i.run_id AND s.stage_id = i.stage_id "
      "WHERE s.name = 'a->b'";
  auto counter = [&db](const std::string& name) {
    StoreQuery q(db);
    return q.Int("SELECT value FROM counters WHERE name = '" + name + "'");
  };
  const bool judged = WaitFor(
      [&] {
        StoreQuery q(db);
        const int64_t orders = q.Int("SELECT sum(i.samples_all) " + stage_intervals);
        const int64_t last = q.Int("SELECT max(i.start_utc_ns) " + stage_intervals);
        return orders == 150000 && counter("budget_judged_through_utc_ns") >= last;
      },
      std::chrono::seconds(60));
  if (!judged) {
    cleanup();
    FAIL() << ReadFile(clog);
  }
  StoreQuery q(db);
  const int64_t enough_for_p99 = q.Int("SELECT count(*) " + stage_intervals + " AND i.count >= 100");
  const int64_t too_few_for_p99 =
      q.Int("SELECT count(*) " + stage_intervals + " AND i.count BETWEEN 1 AND 99");
  const int64_t enough_for_p50 = q.Int("SELECT count(*) " + stage_intervals + " AND i.count >= 2");
  const int64_t with_samples = q.Int("SELECT count(*) " + stage_intervals + " AND i.count >= 1");
  const int64_t in_percentiles = q.Int("SELECT sum(i.count) " + stage_intervals);
  ASSERT_GE(enough_for_p99, 2);  // ~3 s of orders at ~45 k/s fill two whole intervals at least
  const int64_t breaches = counter(std::string("budget_breaches:") + kOver);
  EXPECT_EQ(breaches, enough_for_p99);
  EXPECT_EQ(counter(std::string("budget_judged:") + kOver), enough_for_p99);
  EXPECT_EQ(counter(std::string("budget_unjudged:") + kOver), too_few_for_p99);
  EXPECT_EQ(counter(std::string("budget_judged:") + kWithin), enough_for_p50);
  EXPECT_EQ(counter(std::string("budget_breaches:") + kWithin), 0);
  EXPECT_EQ(counter(std::string("budget_judged:") + kMax), with_samples);
  EXPECT_EQ(counter(std::string("budget_breaches:") + kMax), 0);
  EXPECT_EQ(counter("budget_breaches"), breaches);

  // One row per breach, each with its interval's own sample count, the
  // limit, and a p99 at or above the 60 us wait (the histogram's bucket
  // reports within 1/256).
  EXPECT_EQ(q.Int("SELECT count(*) FROM budget_breaches"), breaches);
  EXPECT_EQ(q.Int(std::string("SELECT count(*) FROM budget_breaches b JOIN intervals i ON "
                              "i.run_id = b.run_id AND i.start_utc_ns = b.interval_start_utc_ns "
                              "JOIN stages s ON s.run_id = i.run_id AND s.stage_id = i.stage_id "
                              "AND s.name = 'a->b' WHERE b.budget = '") +
                  kOver + "' AND b.stat = 'p99' AND b.limit_ns = 30000 AND b.samples = i.count "
                          "AND b.measured_ns >= 60000 * (1 - 1.0 / 256)"),
            breaches);

  // Prometheus scrapes the same count, and the limit in seconds.
  const uint16_t prom_port = FreePort();
  prom = StartPrometheus(prometheus, dir, port, prom_port);
  const std::string breaches_series =
      "ticktrace_budget_breaches_total{job=\"ticktrace\",stage=\"a->b\",quantile=\"0.99\"}";
  const bool scraped = WaitFor(
      [&] { return PromQuery(prom_port, breaches_series) == static_cast<double>(breaches); },
      std::chrono::seconds(60));
  const std::optional<double> within = PromQuery(
      prom_port, "ticktrace_budget_breaches_total{stage=\"a->b\",quantile=\"0.5\"}");
  const std::optional<double> limit =
      PromQuery(prom_port, "ticktrace_budget_limit_seconds{stage=\"a->b\",quantile=\"0.99\"}");
  const std::optional<double> max_limit =
      PromQuery(prom_port, "ticktrace_budget_limit_seconds{stage=\"a->b\",quantile=\"max\"}");
  const std::string prom_log = ReadFile(dir.File("prometheus.log"));
  cleanup();
  EXPECT_TRUE(scraped) << PromQuery(prom_port, breaches_series).value_or(-1) << "\n" << prom_log;
  EXPECT_EQ(within, 0.0);
  EXPECT_EQ(limit, 30e-6);
  EXPECT_EQ(max_limit, 10.0);

  // stderr: the run is shorter than a minute, so one line for the budget
  // broken, none for the others; the exit report sums up each budget.
  const std::string log = ReadFile(clog);
  EXPECT_EQ(Count(log, std::string("budget ") + kOver + " broken: p99 "), 1u) << log;
  EXPECT_EQ(Count(log, std::string("budget ") + kWithin + " broken"), 0u) << log;
  EXPECT_NE(log.find(absl::StrFormat("budget %s: %d of %d intervals over", kOver, breaches,
                                     enough_for_p99)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(absl::StrFormat("budget %s: 0 of %d intervals over", kWithin,
                                     enough_for_p50)),
            std::string::npos)
      << log;

  // The viewer's gate on the whole run: the p99 over its budget (exit 1),
  // the p50 within (exit 0).
  const ViewerRun over = RunViewer(dir, {"check", "--db", db, "--budget", kOver, "--json"});
  EXPECT_EQ(over.exit_code, 1) << over.output;
  const nlohmann::json j = nlohmann::json::parse(over.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << over.output;
  EXPECT_EQ(j["breaches"], 1);
  EXPECT_EQ(j["budgets"][0]["verdict"], "BREACH");
  EXPECT_GE(j["budgets"][0]["measured_ns"].get<double>(), 60000 * (1 - 1.0 / 256));
  EXPECT_EQ(j["budgets"][0]["samples"], in_percentiles);
  const ViewerRun ok = RunViewer(dir, {"check", "--db", db, "--budget", kWithin});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("1 budget: 0 breaches, 1 OK, 0 not enough samples"), std::string::npos)
      << ok.output;
}

}  // namespace
}  // namespace ticktrace::collect::testing
