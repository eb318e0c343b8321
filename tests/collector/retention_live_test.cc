// The store's size limit in a live run (docs/operations.md#retention-and-disk):
// a real collector and a real producer, the store's files measured on disk
// by this test as the run goes; and a replay of such a run under the same
// limit.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/collector/live_fixture.h"

namespace ticktrace::collect::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMB = 1'000'000;

// What the store's files take on disk: st_blocks x 512 of the database,
// -wal and -shm (a file that is not there: 0).
uint64_t StoreOnDisk(const std::string& db) {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st{};
    if (::stat((db + suffix).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// The 8-byte order count the spin producer publishes in its --progress file.
uint64_t ReadProgress(const std::string& path) {
  uint64_t done = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&done), sizeof(done));
  return in ? done : 0;
}

// "17.0 MB" -> 17e6 (the collector's byte figures: B, kB, MB, GB, TB).
double Bytes(const std::string& number, const std::string& unit) {
  const double v = std::stod(number);
  if (unit == "kB") return v * 1e3;
  if (unit == "MB") return v * 1e6;
  if (unit == "GB") return v * 1e9;
  if (unit == "TB") return v * 1e12;
  return v;
}

// The body of GET /metrics from 127.0.0.1:`port` ("" : no answer).
std::string ScrapeMetrics(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string all;
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) all.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return all;
}

class RetentionLiveTest : public LiveTest {
 protected:
  // Runs the viewer on the store; its stdout and stderr.
  std::string View(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TICKTRACE_VIEW_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--db");
    argv.push_back(db());
    const std::string out = dir_.File("view.log");
    const pid_t v = Spawn(argv, out);
    EXPECT_EQ(WaitExit(v, 60s), 0) << ReadFile(out);
    return ReadFile(out);
  }
};

// About a minute of over 125 MB of detail (4 us between orders: 150 000 to
// 250 000 two-stamp orders/s at about 21 B each in compact blocks, 3 to 5
// MB/s) under a 25 MB limit.
//
// The bound, by hand: the writer checks the size after every write
// transaction and keeps room beside the live pages for the largest step it
// has seen (one transaction's growth, the WAL and -shm). What can exceed
// the limit is one step larger than any before: one transaction holds at
// most 2 x 20 000 orders (StoreSinkOptions::max_orders_per_transaction, and
// a transaction takes batches until it has that many), at most 150 B each
// on disk (an order of two stamps; docs/store.md measures 153 B for the
// demo's larger orders), written twice (WAL frames, then the database pages
// a checkpoint copies them into): 2 x 40 000 x 150 B = 12 MB.
TEST_F(RetentionLiveTest, SizeLimitHoldsOnDiskAndTheIntervalsCoverTheRun) {
  constexpr uint64_t kLimit = 25 * kMB;
  constexpr uint64_t kStep = 12 * kMB;
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300",
                                  "--retain-detail", "25MB", "--metrics-listen", "127.0.0.1:0"});
  std::smatch m;
  const std::string start_log = ReadFile(log());
  ASSERT_TRUE(std::regex_search(start_log, m,
                                std::regex("metrics at http://127\\.0\\.0\\.1:([0-9]+)/")))
      << start_log;
  const auto port = static_cast<uint16_t>(std::stoi(m[1]));
  EXPECT_NE(start_log.find("store: detail limit 25.0 MB (--retain-detail 25MB)"),
            std::string::npos)
      << start_log;

  // The producer: 4 us between orders, killed after 70 s.
  const std::string progress = dir_.File("progress");
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "4000", "--progress", progress,
                                 "--tsc-hz", absl::StrFormat("%.0f", TestTscHz())});
  const auto t0 = Clock::now();
  struct Sample {
    double t_s;
    uint64_t bytes;   // the store's files on disk
    uint64_t orders;  // the producer's orders so far
  };
  std::vector<Sample> samples;
  std::string metrics;
  double line_t_s = 0;  // when the projection line was first in the log
  while (Clock::now() - t0 < 70s) {
    const double t_s = std::chrono::duration<double>(Clock::now() - t0).count();
    samples.push_back({t_s, StoreOnDisk(db()), ReadProgress(progress)});
    if (line_t_s == 0 && ReadFile(log()).find("at this rate") != std::string::npos) {
      line_t_s = t_s;
    }
    if (metrics.empty() && t_s > 68) metrics = ScrapeMetrics(port);
    std::this_thread::sleep_for(250ms);
  }
  kill(p, SIGKILL);
  EXPECT_EQ(WaitExit(p, 5s), 128 + SIGKILL);
  Forget(p);
  FinishRun(c);
  const std::string collector_log = ReadFile(log());

  // 1. On disk: never above the limit plus one step (every 250 ms).
  uint64_t peak = 0;
  for (const Sample& s : samples) peak = std::max(peak, s.bytes);
  EXPECT_LE(peak, kLimit + kStep) << "peak " << peak << " B";

  // What an order costs on disk before the limit applies: the growth from
  // 10 MB to the last sample under 70 MB (retirement starts at about 90 MB)
  // over the orders produced meanwhile (the store lags the producer by a
  // fraction of a second, the same at both ends).
  const auto first = std::find_if(samples.begin(), samples.end(),
                                  [](const Sample& s) { return s.bytes >= kLimit / 10; });
  const auto after = std::find_if(first, samples.end(),
                                  [](const Sample& s) { return s.bytes > kLimit * 7 / 10; });
  ASSERT_TRUE(first != samples.end() && after != samples.end() && after - first >= 3)
      << "the store never grew from 10% to 70% of the limit in steps this test could see";
  const Sample& last_under = *(after - 1);
  ASSERT_GT(last_under.orders, first->orders);
  const double bytes_per_order = static_cast<double>(last_under.bytes - first->bytes) /
                                 static_cast<double>(last_under.orders - first->orders);
  // The run is worth the limit: unbounded, it would have written 5 times it.
  EXPECT_GT(bytes_per_order * static_cast<double>(samples.back().orders), 5.0 * kLimit)
      << bytes_per_order << " B/order, " << samples.back().orders << " orders";

  // 2. The projection line, after the first minute: its growth (over the
  // minute before it) within 20% of the bytes those orders cost unbounded:
  // bytes per order above x orders produced in that minute.
  ASSERT_GT(line_t_s, 60.0) << collector_log;
  auto orders_at = [&](double t_s) {
    const auto it = std::lower_bound(samples.begin(), samples.end(), t_s,
                                     [](const Sample& s, double t) { return s.t_s < t; });
    return it == samples.end() ? samples.back().orders : it->orders;
  };
  const double expected_bps =
      bytes_per_order * static_cast<double>(orders_at(line_t_s) - orders_at(line_t_s - 60)) / 60;
  ASSERT_TRUE(std::regex_search(
      collector_log, m,
      std::regex("store: \\+[0-9.]+ [kMGT]?B/h at this rate \\(([0-9.]+) ([kMGT]?B)/s\\); "
                 "detail limit 25.0 MB \\(--retain-detail 25MB\\): detail kept for about the "
                 "last [0-9.]+ (s|min)")))
      << collector_log;
  const double said_bps = Bytes(m[1], m[2]);
  std::cout << "peak on disk " << peak << " B (limit " << kLimit << " B); " << bytes_per_order
            << " B/order before the limit; expected " << expected_bps << " B/s, said: " << m[0]
            << "\n";
  EXPECT_NEAR(said_bps, expected_bps, 0.2 * expected_bps)
      << "said " << said_bps << " B/s, expected " << expected_bps << " B/s";
  // ... and on /metrics, as gauges.
  for (const char* gauge : {"ticktrace_store_bytes", "ticktrace_store_growth_bytes_per_second",
                            "ticktrace_store_detail_limit_bytes",
                            "ticktrace_store_detail_window_seconds"}) {
    EXPECT_NE(metrics.find(absl::StrCat("# TYPE ", gauge, " gauge\n")), std::string::npos)
        << gauge << "\n" << metrics;
  }
  EXPECT_NE(metrics.find("\nticktrace_store_detail_limit_bytes 25000000\n"), std::string::npos)
      << metrics;

  // 3. Every interval from the first to the last has its row and its
  // statistics, and the orders add up: stored + retired + not stored.
  StoreQuery q(db());
  auto counter = [&](const char* name) {
    return q.Int(absl::StrCat("SELECT value FROM counters WHERE run_id = 1 AND name = '", name, "'"));
  };
  const int64_t lo = q.Int("SELECT MIN(start_utc_ns) FROM interval_detail WHERE run_id = 1");
  const int64_t hi = q.Int("SELECT MAX(start_utc_ns) FROM interval_detail WHERE run_id = 1");
  const int64_t intervals = (hi - lo) / 1'000'000'000 + 1;
  EXPECT_GE(intervals, 60);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM interval_detail WHERE run_id = 1"), intervals);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM intervals i JOIN stages s ON s.run_id = i.run_id AND "
                  "s.stage_id = i.stage_id WHERE i.run_id = 1 AND s.name = 'a->b'"),
            intervals);
  const int64_t complete = counter("orders_complete");
  const int64_t orders = complete + counter("orders_incomplete");
  EXPECT_GE(complete, static_cast<int64_t>(ReadProgress(progress)));
  EXPECT_EQ(q.Int("SELECT SUM(orders) FROM interval_detail WHERE run_id = 1"), orders);
  EXPECT_EQ(q.Int("SELECT SUM(i.samples_all) FROM intervals i JOIN stages s ON s.run_id = "
                  "i.run_id AND s.stage_id = i.stage_id WHERE i.run_id = 1 AND s.name = 'a->b'"),
            complete);
  const int64_t stored = q.Int("SELECT COUNT(*) FROM orders WHERE run_id = 1");
  const int64_t retired = counter("orders_retired");
  EXPECT_GT(retired, 0);
  EXPECT_EQ(stored + retired + counter("orders_not_stored"), orders);
  // Oldest first: every interval whose detail went is older than every one kept.
  const int64_t deleted = q.Int("SELECT COUNT(*) FROM interval_detail WHERE detail_deleted = 1");
  EXPECT_GT(deleted, 0);
  EXPECT_LT(q.Int("SELECT MAX(start_utc_ns) FROM interval_detail WHERE detail_deleted = 1"),
            q.Int("SELECT MIN(start_utc_ns) FROM interval_detail WHERE detail_deleted = 0 AND "
                  "orders_kept > 0"));

  // 4. The viewer says how much detail went.
  const std::string summary = View({"summary"});
  EXPECT_NE(summary.find(absl::StrCat("retention deleted the detail of ", deleted, " intervals")),
            std::string::npos)
      << summary;
  const std::string runs = View({"runs"});
  EXPECT_NE(runs.find(absl::StrCat(retired, " orders' detail retired")), std::string::npos) << runs;
  EXPECT_NE(runs.find("detail limit 25.0 MB"), std::string::npos) << runs;
}

// The interval_detail rows of run 1, one line each, to say what a failed
// comparison saw.
std::string DetailRows(StoreQuery& q) {
  return q.Text(
      "SELECT group_concat(start_utc_ns || ' orders ' || orders || ' kept ' || orders_kept || "
      "' deleted ' || detail_deleted, char(10)) || char(10) FROM (SELECT * FROM interval_detail "
      "WHERE run_id = 1 ORDER BY start_utc_ns)");
}

// A replay of a live run's raw archive under the same limit keeps what the
// live run kept: the detail of the newest intervals, give or take one
// interval (each retires after its own write transactions, which a replay
// makes larger), and its files within the limit plus one step.
TEST_F(RetentionLiveTest, ReplayKeepsWhatTheLiveRunKept) {
  constexpr uint64_t kLimit = 10 * kMB;
  constexpr uint64_t kStep = 12 * kMB;  // as in the test above
  const std::string raw = dir_.File("live.raw");
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300",
                                  "--retain-detail", "10MB", "--raw", raw});
  // 1 200 000 orders, about 25 MB of detail unbounded, over about 10 s (8 us
  // between orders): intervals of 2 to 3 MB, so that the 10 MB keeps some.
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "8000", "--orders", "1200000",
                                 "--tsc-hz", absl::StrFormat("%.0f", TestTscHz())});
  EXPECT_EQ(WaitExit(p, 120s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(p);
  FinishRun(c);
  const std::string replay_db = dir_.File("replay.db");
  const int rc = WaitExit(Spawn({kCollector, "--replay", raw, "--db", replay_db, "--pipeline",
                                 "a,b", "--order-timeout-ms", "300", "--retain-detail", "10MB"},
                                dir_.File("replay.log")),
                          120s);
  ASSERT_EQ(rc, 0) << ReadFile(dir_.File("replay.log"));
  EXPECT_LE(StoreOnDisk(replay_db), kLimit + kStep);
  StoreQuery live(db()), replay(replay_db);
  // The oldest interval whose detail was not retired; when every one was,
  // the end of the newest (a replay's transactions are larger, so its step
  // is, and under a small limit it may keep one interval fewer: a whole
  // second of orders at this rate).
  const std::string first_kept =
      "SELECT COALESCE((SELECT MIN(start_utc_ns) FROM interval_detail WHERE detail_deleted = 0), "
      "(SELECT MAX(start_utc_ns) + 1000000000 FROM interval_detail))";
  const std::string deleted = "SELECT COUNT(*) FROM interval_detail WHERE detail_deleted = 1";
  ASSERT_GT(live.Int(deleted), 0);
  EXPECT_NEAR(replay.Int(deleted), live.Int(deleted), 1);
  EXPECT_LE(std::llabs(replay.Int(first_kept) - live.Int(first_kept)), 1'000'000'000)
      << "live keeps from " << live.Int(first_kept) << ", the replay from "
      << replay.Int(first_kept) << "; live orders_not_stored "
      << live.Int("SELECT value FROM counters WHERE name = 'orders_not_stored'") << "\nlive:\n"
      << DetailRows(live) << "replay:\n"
      << DetailRows(replay);
  // Same orders, same statistics.
  EXPECT_EQ(replay.Int("SELECT SUM(orders) FROM interval_detail"),
            live.Int("SELECT SUM(orders) FROM interval_detail"));
}

// --retain-detail none: every order's detail stays, nothing is retired.
TEST_F(RetentionLiveTest, NoneKeepsEveryOrder) {
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300",
                                  "--retain-detail", "none"});
  EXPECT_NE(ReadFile(log()).find("store: no detail size limit (--retain-detail none)"),
            std::string::npos)
      << ReadFile(log());
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "0", "--orders", "300000"});
  EXPECT_EQ(WaitExit(p, 60s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(p);
  FinishRun(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'orders_complete'"), 300000);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), 300000);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM interval_detail WHERE detail_deleted = 1"), 0);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name = 'orders_retired'"), 0);
}

// Without the flag: the default limit, said at start, is 10% of the space
// the store may use (its directory's free space, the new store ~nothing),
// at most 10 GB.
TEST_F(RetentionLiveTest, TheDefaultLimitIsSaidAtStart) {
  struct statvfs st{};
  ASSERT_EQ(statvfs(dir_.path().c_str(), &st), 0);
  const double expected =
      std::min(0.10 * static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize), 10e9);
  const pid_t c = StartCollector({"--pipeline", "a,b"});
  const std::string text = ReadFile(log());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      text, m,
      std::regex("store: detail limit ([0-9.]+) ([kMGT]?B) \\(default: 10% of (.*)'s free "
                 "space and the store, at most 10.0 GB\\)")))
      << text;
  EXPECT_NEAR(Bytes(m[1], m[2]), expected, 0.01 * expected) << text;
  EXPECT_EQ(m[3].str(), dir_.path());
  StopCollector(c);
}

}  // namespace
}  // namespace ticktrace::collect::testing
