// Live tests: the collector binary and real producer processes over shared
// memory. Behaviour only: nothing here bounds a latency (those checks are in
// live_timing_test.cc, a CTest entry labelled `timing`), and nothing waits a
// fixed time for something to happen: every wait polls for its condition,
// with a generous deadline.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/collector/live_fixture.h"

namespace ticktrace::collect {
namespace {

using namespace std::chrono_literals;
using testing::kCollector;
using testing::kProducer;
using testing::LiveTest;
using testing::ReadFile;
using testing::SegmentCount;
using testing::Spawn;
using testing::StoreQuery;
using testing::WaitExit;
using testing::WaitFor;

// The 8-byte order count the spin producer publishes in its --progress file.
uint64_t ReadProgress(const std::string& path) {
  uint64_t done = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&done), sizeof(done));
  return in ? done : 0;
}

// The size of `path` in bytes, or -1 when it does not exist.
int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? int64_t{st.st_size} : -1;
}

// Counter `name` as the running collector last wrote it to the store (it
// rewrites the counters about once a second), or -1 while the store cannot
// be read (not created yet, or locked for a moment by the writer).
int64_t LiveCounter(const std::string& db, const std::string& name) {
  try {
    StoreQuery q(db);
    const auto rows = q.Rows("SELECT value FROM counters WHERE name = '" + name + "'");
    return rows.empty() ? -1 : std::stoll(rows[0][0]);
  } catch (const std::exception&) {
    return -1;
  }
}

// Producers run and exit before the collector starts: their stale segments
// are drained completely, marked exited and removed; every order is stitched
// across the three processes.
TEST_F(LiveTest, StitchesKnownOrdersFromStaleSegments) {
  constexpr uint64_t kOrders = 3000;
  WaitProducers(StartChain({{"a_in", "a_out"}, {"b_in", "b_out"}, {"c_in", "c_out"}}, kOrders, 0));
  EXPECT_EQ(SegmentCount(session_), 3u);
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out"});
  FinishRun(c);

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), int64_t(6 * kOrders));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='dropped'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 0"), 0);
  EXPECT_EQ(q.Int("SELECT MIN(order_id) FROM orders"), 1);
  EXPECT_EQ(q.Int("SELECT MAX(order_id) FROM orders"), int64_t(kOrders));
  for (const char* stage : {"a_in->a_out", "a_out->b_in", "b_in->b_out", "b_out->c_in",
                            "c_in->c_out", "total"}) {
    EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM samples WHERE stage='", stage, "'")),
              int64_t(kOrders))
        << stage;
  }
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes WHERE exited_utc_ns IS NOT NULL"), 3);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT process_id) FROM stamps"), 3);
  EXPECT_NE(ReadFile(log()).find("orders_complete"), std::string::npos);
}

// A producer killed with SIGKILL mid-run: every record it published is
// drained, its orders are in the store, it is marked exited and its segment
// is removed.
TEST_F(LiveTest, ProducerKilledMidRunIsAccountedFor) {
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const std::string progress = dir_.File("progress");
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "2000", "--progress", progress});
  // Killed mid-run: once it has certainly published a few thousand orders.
  EXPECT_TRUE(WaitFor([&] { return ReadProgress(progress) >= 5000; }, 30s))
      << ReadFile(dir_.File("producer.log"));
  kill(p, SIGKILL);
  EXPECT_EQ(WaitExit(p, 5s), 128 + SIGKILL);
  Forget(p);
  // Orders whose two stamps had certainly been published.
  const uint64_t done = ReadProgress(progress);
  ASSERT_GE(done, 5000u);
  FinishRun(c);

  StoreQuery q(db());
  const int64_t drained = q.Int("SELECT value FROM counters WHERE name='drained'");
  // Published: 2 * done, plus at most the two stamps of the order in flight.
  EXPECT_GE(drained, int64_t(2 * done));
  EXPECT_LE(drained, int64_t(2 * done + 2));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='dropped'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), drained);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"),
            q.Int("SELECT MAX(order_id) FROM orders"));  // no gaps
  EXPECT_GE(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), int64_t(done));
  EXPECT_LE(q.Int("SELECT COUNT(*) FROM orders WHERE complete=0"), 1);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes WHERE exited_utc_ns IS NOT NULL"), 1);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='segments_removed'"), 1);
}

// The collector is SIGKILLed twice while a producer runs and restarted on the
// same session and store: no published record is lost or counted twice.
TEST_F(LiveTest, CollectorKilledAndRestartedLosesAndDuplicatesNothing) {
  // 60000 orders on a fixed schedule of one per 150 us: the producer runs
  // for 9 s, longer than both kills and restarts take even under TSan (a
  // restart there takes seconds; at 15 us per order the producer once ended
  // before the second kill). Its 1 Mi-record ring holds every record while
  // no collector runs.
  constexpr uint64_t kOrders = 60000;
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "500"};
  const std::string progress = dir_.File("progress");
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "150000", "--orders",
                                 std::to_string(kOrders), "--progress", progress});
  const std::string journal = db() + ".ttjournal";
  pid_t c = StartCollector(args);
  for (int kill_round = 0; kill_round < 2; ++kill_round) {
    // Killed mid-run: once this collector has made at least 32 KiB (about a
    // thousand records) durable since it started, and the producer still runs.
    const int64_t journal_at_start = FileSize(journal);
    EXPECT_TRUE(WaitFor([&] { return FileSize(journal) >= journal_at_start + 32 * 1024; }, 30s))
        << "journal " << FileSize(journal) << " bytes\n"
        << ReadFile(log());
    EXPECT_LT(ReadProgress(progress), kOrders) << "the producer finished before the kill";
    kill(c, SIGKILL);
    EXPECT_EQ(WaitExit(c, 5s), 128 + SIGKILL);
    Forget(c);
    EXPECT_EQ(access(journal.c_str(), F_OK), 0) << "journal missing after a kill";
    std::remove(log().c_str());
    c = StartCollector(args);
    // Printed after the calibration report that StartCollector waits for.
    EXPECT_TRUE(WaitFor([&] { return ReadFile(log()).find("resuming run 1") != std::string::npos; },
                        10s))
        << ReadFile(log());
  }
  WaitProducers({p});
  FinishRun(c);

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), int64_t(2 * kOrders));
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='dropped'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='a->b'"), int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM samples WHERE stage='a->b'"),
            int64_t(kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), int64_t(2 * kOrders));
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), int64_t(kOrders));
  EXPECT_NE(access((db() + ".ttjournal").c_str(), F_OK), 0) << "journal left after a clean end";
}

// Spans whose thread is moved to another core between begin and end are all
// flagged migrated; spans of a pinned thread never are.
TEST_F(LiveTest, MovedSpansAreFlaggedMigratedPinnedOnesNever) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cpus";
  constexpr int kSpans = 200;
  const pid_t c = StartCollector({});
  const pid_t p = StartProducer({"--mode", "migrate", "--orders", std::to_string(kSpans)});
  WaitProducers({p});
  FinishRun(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT samples_all FROM stage_stats WHERE stage='moved'"), kSpans);
  EXPECT_EQ(q.Int("SELECT migrated FROM stage_stats WHERE stage='moved'"), kSpans);
  EXPECT_EQ(q.Int("SELECT samples_all FROM stage_stats WHERE stage='pinned'"), kSpans);
  EXPECT_EQ(q.Int("SELECT migrated FROM stage_stats WHERE stage='pinned'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='moved' AND flags & 1 AND "
                  "cpu_begin != cpu_end"),
            kSpans);
}

// A ring that filled up before any collector ran: what was published is
// drained, what was dropped is counted, and the two add up to what was attempted.
TEST_F(LiveTest, DroppedRecordsAreCounted) {
  constexpr uint64_t kOrders = 3000;  // 6000 records into a 1024-record ring
  std::vector<std::string> args = {"--mode", "spin", "--pace-ns", "0", "--orders",
                                   std::to_string(kOrders)};
  std::vector<std::string> argv = {kProducer, "--session", session_, "--ring", "1024"};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t p = Spawn(argv, dir_.File("producer.log"));
  EXPECT_EQ(WaitExit(p, 30s), 0);
  const pid_t c = StartCollector({"--pipeline", "a,b"});
  FinishRun(c);
  StoreQuery q(db());
  const int64_t drained = q.Int("SELECT value FROM counters WHERE name='drained'");
  const int64_t dropped = q.Int("SELECT value FROM counters WHERE name='dropped'");
  EXPECT_EQ(drained, 1024);
  EXPECT_EQ(drained + dropped, int64_t(2 * kOrders));
  EXPECT_EQ(q.Int("SELECT SUM(dropped) FROM threads"), dropped);
  EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads"), drained);
}

// Garbage under a segment name, and a real segment whose ring indices were
// corrupted: both are skipped and counted; the collector keeps running and
// drains the healthy rings.
TEST_F(LiveTest, CorruptSegmentsAreSkippedAndCounted) {
  const std::string garbage = "/dev/shm/ticktrace." + session_ + ".999999999";
  {
    std::ofstream out(garbage, std::ios::binary);
    out << std::string(4096, '\x5a');
  }  // removed with the session's segments at the end of the test
  // A healthy producer, done before the collector starts.
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "0", "--orders", "100"});
  EXPECT_EQ(WaitExit(p, 30s), 0);
  Forget(p);
  // A second producer whose ring we break: write index far beyond the ring.
  const pid_t p2 = StartProducer({"--mode", "spin", "--pace-ns", "0", "--orders", "10"});
  EXPECT_EQ(WaitExit(p2, 30s), 0);
  Forget(p2);
  {
    const std::string name = "ticktrace." + session_ + "." + std::to_string(p2);
    absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
    ASSERT_TRUE(r.ok()) << r.status();
    auto* header = reinterpret_cast<abi::SegmentHeader*>((*r)->base_for_testing());
    auto* slot0 = reinterpret_cast<abi::SlotControl*>((*r)->base_for_testing() +
                                                      header->slots_offset);
    slot0->write_index.store(uint64_t{1} << 40);
  }
  // A third producer keeps the collector busy (an order a millisecond, ids from
  // 1000000 on), so that it writes its counters to the store about once a
  // second: the test reads them there while the collector runs.
  const pid_t ticker = StartProducer(
      {"--mode", "spin", "--pace-ns", "1000000", "--first-id", "1000000"});
  const pid_t c = StartCollector({"--pipeline", "a,b"});
  // The garbage is counted only after its open grace period (1 s): wait for
  // the counters themselves.
  EXPECT_TRUE(WaitFor(
      [&] {
        return LiveCounter(db(), "segments_corrupt") == 1 &&
               LiveCounter(db(), "slots_corrupt") == 1;
      },
      30s))
      << ReadFile(log());
  kill(ticker, SIGKILL);
  EXPECT_EQ(WaitExit(ticker, 5s), 128 + SIGKILL);
  Forget(ticker);
  // Every segment but the garbage is drained and removed.
  EXPECT_TRUE(WaitFor([&] { return SegmentCount(session_) == 1; }, 15s))
      << SegmentCount(session_) << " segments left\n"
      << ReadFile(log());
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='segments_corrupt'"), 1);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='slots_corrupt'"), 1);
  auto drained_of = [&](pid_t pid) {
    return q.Int(absl::StrCat("SELECT COALESCE(SUM(t.drained), 0) FROM threads t JOIN processes p "
                              "USING (run_id, process_id) WHERE p.pid = ",
                              pid));
  };
  EXPECT_EQ(drained_of(p), 200);
  EXPECT_EQ(drained_of(p2), 0);  // its only ring is the corrupt one
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), 200 + drained_of(ticker));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id <= 100"), 100);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE order_id > 100 AND order_id < 1000000"), 0);
}

// A live run's raw archive, replayed, gives exactly the live run's numbers.
TEST_F(LiveTest, RawArchiveReplaysToTheLiveResult) {
  const std::string raw = dir_.File("live.raw");
  const pid_t c = StartCollector({"--raw", raw, "--order-timeout-ms", "200"});
  WaitProducers(StartChain({{"a_in", "a_out"}, {"b_in", "b_out"}, {"c_in", "c_out"}}, 500, 50));
  FinishRun(c);
  const std::string replay_db = dir_.File("replay.db");
  const int rc = WaitExit(Spawn({kCollector, "--replay", raw, "--db", replay_db,
                                 "--order-timeout-ms", "200"},
                                dir_.File("replay.log")),
                          30s);
  EXPECT_EQ(rc, 0) << ReadFile(dir_.File("replay.log"));
  StoreQuery live(db()), replay(replay_db);
  const std::string sql =
      "SELECT stage, count, min_ns, p50_ns, p99_ns, max_ns FROM stage_stats ORDER BY stage";
  EXPECT_EQ(live.Rows(sql), replay.Rows(sql));
  EXPECT_EQ(live.Text("SELECT pipeline FROM runs"), replay.Text("SELECT pipeline FROM runs"));
  EXPECT_EQ(live.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 500);
  EXPECT_EQ(replay.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 500);
}

// One collector per session: a second one (same store or another) refuses
// with one line and exit 1, creates nothing, and the first is unaffected.
TEST_F(LiveTest, SecondCollectorOnTheSessionIsRefused) {
  const pid_t c = StartCollector({"--pipeline", "a,b"});
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "20000", "--orders", "5000"});
  for (const std::string& other_db : {db(), dir_.File("other.db")}) {
    const std::string log2 = dir_.File("second.log");
    std::remove(log2.c_str());
    const int rc = WaitExit(Spawn({kCollector, "--session", session_, "--db", other_db,
                                   "--tsc-hz", "2e9", "--duration-s", "2"},
                                  log2),
                            30s);
    EXPECT_EQ(rc, 1) << ReadFile(log2);
    EXPECT_NE(ReadFile(log2).find("already being drained"), std::string::npos) << ReadFile(log2);
  }
  EXPECT_NE(access(dir_.File("other.db").c_str(), F_OK), 0);
  WaitProducers({p});
  FinishRun(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), 10000);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='index_gaps'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 5000);
}

}  // namespace
}  // namespace ticktrace::collect
