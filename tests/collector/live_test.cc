// Live tests: the collector binary and real producer processes over shared memory.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/process_util.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect {
namespace {

using namespace std::chrono_literals;
using testing::ReadFile;
using testing::RemoveSessionSegments;
using testing::SegmentCount;
using testing::Spawn;
using testing::StoreQuery;
using testing::TempDir;
using testing::TestTscHz;
using testing::WaitExit;
using testing::WaitFor;

#if defined(TICKTRACE_SANITIZED)  // set by cmake/TicktraceSanitizers.cmake
// Instrumented producers add hundreds of ns around each stamp: the timing
// bounds hold for optimized builds only.
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

const std::string kCollector = TICKTRACE_COLLECTOR_BIN;
const std::string kProducer = TICKTRACE_TEST_PRODUCER_BIN;

class LiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    session_ = absl::StrCat("t_", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                            "_", getpid());
  }
  void TearDown() override {
    for (pid_t p : pids_) {
      kill(p, SIGKILL);
      WaitExit(p, 2s);
    }
    RemoveSessionSegments(session_);
  }

  std::string db() const { return dir_.File("store.db"); }
  std::string log() const { return dir_.File("collector.log"); }

  // Starts the collector; `calibrate` false passes --tsc-hz.
  pid_t StartCollector(const std::vector<std::string>& extra, bool calibrate = false) {
    std::vector<std::string> argv = {kCollector, "--session", session_, "--db", db()};
    if (!calibrate) {
      argv.push_back("--tsc-hz");
      argv.push_back(absl::StrFormat("%.0f", TestTscHz()));
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    const pid_t pid = Spawn(argv, log());
    pids_.push_back(pid);
    // Ready once the calibration report is out (the drain loop starts right after).
    EXPECT_TRUE(WaitFor([&] { return ReadFile(log()).find("order timeout") != std::string::npos; },
                        20s))
        << ReadFile(log());
    return pid;
  }

  // SIGTERM, then expect a clean exit.
  void StopCollector(pid_t pid) {
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitExit(pid, 30s), 0) << ReadFile(log());
    Forget(pid);
  }

  void Forget(pid_t pid) { std::erase(pids_, pid); }

  pid_t StartProducer(std::vector<std::string> args, const std::vector<int>& keep = {}) {
    std::vector<std::string> argv = {kProducer, "--session", session_, "--ring", "1048576"};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = Spawn(argv, dir_.File("producer.log"), keep);
    pids_.push_back(pid);
    return pid;
  }

  struct ChainStage {
    std::string in_tag, out_tag;
    int64_t work_ns = 0;
    int64_t handoff_work_ns = 0;
  };

  // Three producer processes joined by pipes: first -> middle -> last.
  std::vector<pid_t> StartChain(const std::vector<ChainStage>& stages, uint64_t orders,
                                int64_t pace_us) {
    int ab[2], bc[2];
    EXPECT_EQ(pipe2(ab, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(bc, O_CLOEXEC), 0);
    auto args = [&](const ChainStage& s, const std::string& role, int in, int out) {
      return std::vector<std::string>{
          "--mode",    "chain",        "--role",     role,
          "--in-fd",   std::to_string(in), "--out-fd", std::to_string(out),
          "--orders",  std::to_string(orders), "--in-tag", s.in_tag,
          "--out-tag", s.out_tag,      "--work-ns",  std::to_string(s.work_ns),
          "--handoff-work-ns", std::to_string(s.handoff_work_ns),
          "--pace-us", std::to_string(pace_us),
          "--tsc-hz", absl::StrFormat("%.0f", TestTscHz())};
    };
    std::vector<pid_t> pids;
    pids.push_back(StartProducer(args(stages[0], "first", -1, ab[1]), {ab[1]}));
    pids.push_back(StartProducer(args(stages[1], "middle", ab[0], bc[1]), {ab[0], bc[1]}));
    pids.push_back(StartProducer(args(stages[2], "last", bc[0], -1), {bc[0]}));
    for (int fd : {ab[0], ab[1], bc[0], bc[1]}) close(fd);
    return pids;
  }

  void WaitProducers(const std::vector<pid_t>& pids) {
    for (pid_t p : pids) {
      EXPECT_EQ(WaitExit(p, 60s), 0) << ReadFile(dir_.File("producer.log"));
      Forget(p);
    }
  }

  void ExpectSegmentsRemoved() {
    EXPECT_TRUE(WaitFor([&] { return SegmentCount(session_) == 0; }, 15s))
        << SegmentCount(session_) << " segments left\n"
        << ReadFile(log());
  }

  std::string session_;
  TempDir dir_;
  std::vector<pid_t> pids_;
};

// Producers run and exit before the collector starts: their stale segments
// are drained completely, marked exited and removed; every order is stitched
// across the three processes.
TEST_F(LiveTest, StitchesKnownOrdersFromStaleSegments) {
  constexpr uint64_t kOrders = 3000;
  WaitProducers(StartChain({{"a_in", "a_out"}, {"b_in", "b_out"}, {"c_in", "c_out"}}, kOrders, 0));
  EXPECT_EQ(SegmentCount(session_), 3u);
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out"});
  ExpectSegmentsRemoved();
  StopCollector(c);

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

// Three processes with known busy-wait work in every stage. In-thread stages
// must come out within 2% + 100 ns of their work (the budget: the histogram's
// 0.4% bucket error, the collector's own calibration against the kernel's
// frequency the producers wait with, and the busy-wait's overshoot on a
// shared host); cross-process stages at
// least their work and at most kHandoffBoundNs above it (the pipe wake-up on
// this shared 2-core VM). The collector calibrates itself here; the producers
// time their work with the kernel's TSC frequency.
TEST_F(LiveTest, ThreeProcessStagesMatchInjectedWork) {
  constexpr uint64_t kOrders = 1500;
  constexpr double kHandoffBoundNs = 1e6;  // p50 of a pipe hand-off, stated bound
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out"},
                                 /*calibrate=*/true);
  const std::vector<ChainStage> stages = {{"a_in", "a_out", 20000, 10000},
                                          {"b_in", "b_out", 30000, 15000},
                                          {"c_in", "c_out", 25000, 0}};
  WaitProducers(StartChain(stages, kOrders, 300));
  ExpectSegmentsRemoved();
  StopCollector(c);

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete = 1"), int64_t(kOrders));
  auto p50 = [&](const std::string& stage) {
    return q.Real(absl::StrCat("SELECT p50_ns FROM stage_stats WHERE stage='", stage, "'"));
  };
  struct Expect {
    std::string stage;
    double work_ns;
    bool in_thread;
  } expects[] = {{"a_in->a_out", 20000, true},  {"a_out->b_in", 10000, false},
                 {"b_in->b_out", 30000, true},  {"b_out->c_in", 15000, false},
                 {"c_in->c_out", 25000, true}};
  for (const Expect& e : expects) {
    const double got = p50(e.stage);
    std::printf("stage %-12s work %8.0f ns  p50 %10.1f ns  (%+.1f ns)\n", e.stage.c_str(),
                e.work_ns, got, got - e.work_ns);
    if (kSanitized) {
      EXPECT_GE(got, e.work_ns) << e.stage;
    } else if (e.in_thread) {
      EXPECT_NEAR(got, e.work_ns, e.work_ns * 0.02 + 100) << e.stage;
    } else {
      EXPECT_GE(got, e.work_ns) << e.stage;
      EXPECT_LE(got, e.work_ns + kHandoffBoundNs) << e.stage;
    }
  }
}

// A producer killed with SIGKILL mid-run: every record it published is
// drained, its orders are in the store, it is marked exited and its segment
// is removed.
TEST_F(LiveTest, ProducerKilledMidRunIsAccountedFor) {
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const std::string progress = dir_.File("progress");
  const pid_t p = StartProducer({"--mode", "spin", "--pace-ns", "2000", "--progress", progress});
  std::this_thread::sleep_for(400ms);
  kill(p, SIGKILL);
  EXPECT_EQ(WaitExit(p, 5s), 128 + SIGKILL);
  Forget(p);
  uint64_t done = 0;  // orders whose two stamps had certainly been published
  {
    std::ifstream in(progress, std::ios::binary);
    in.read(reinterpret_cast<char*>(&done), sizeof(done));
  }
  ASSERT_GT(done, 1000u);
  ExpectSegmentsRemoved();
  StopCollector(c);

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
  constexpr uint64_t kOrders = 60000;
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "500"};
  const pid_t p = StartProducer(
      {"--mode", "spin", "--pace-ns", "15000", "--orders", std::to_string(kOrders)});
  pid_t c = StartCollector(args);
  for (int kill_round = 0; kill_round < 2; ++kill_round) {
    std::this_thread::sleep_for(250ms);
    kill(c, SIGKILL);
    EXPECT_EQ(WaitExit(c, 5s), 128 + SIGKILL);
    Forget(c);
    EXPECT_EQ(access((db() + ".ttjournal").c_str(), F_OK), 0) << "journal missing after a kill";
    std::remove(log().c_str());
    c = StartCollector(args);
    // Printed after the calibration report that StartCollector waits for.
    EXPECT_TRUE(WaitFor([&] { return ReadFile(log()).find("resuming run 1") != std::string::npos; },
                        10s))
        << ReadFile(log());
  }
  EXPECT_EQ(WaitExit(p, 60s), 0);
  Forget(p);
  ExpectSegmentsRemoved();
  StopCollector(c);

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
  EXPECT_EQ(WaitExit(p, 60s), 0);
  Forget(p);
  ExpectSegmentsRemoved();
  StopCollector(c);
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
  ExpectSegmentsRemoved();
  StopCollector(c);
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
  }
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
  const pid_t c = StartCollector({"--pipeline", "a,b"});
  EXPECT_TRUE(WaitFor([&] { return SegmentCount(session_) == 1; }, 15s));  // garbage stays
  std::this_thread::sleep_for(1500ms);  // past the open grace period
  StopCollector(c);
  std::remove(garbage.c_str());
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='segments_corrupt'"), 1);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='slots_corrupt'"), 1);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), 200);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 100);
}

// A live run's raw archive, replayed, gives exactly the live run's numbers.
TEST_F(LiveTest, RawArchiveReplaysToTheLiveResult) {
  const std::string raw = dir_.File("live.raw");
  const pid_t c = StartCollector({"--raw", raw, "--order-timeout-ms", "200"});
  WaitProducers(StartChain({{"a_in", "a_out"}, {"b_in", "b_out"}, {"c_in", "c_out"}}, 500, 50));
  ExpectSegmentsRemoved();
  StopCollector(c);
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
  EXPECT_EQ(WaitExit(p, 60s), 0);
  Forget(p);
  ExpectSegmentsRemoved();
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='drained'"), 10000);
  EXPECT_EQ(q.Int("SELECT value FROM counters WHERE name='index_gaps'"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 5000);
}

}  // namespace
}  // namespace ticktrace::collect
