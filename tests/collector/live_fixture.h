// Test fixture for live tests: the collector binary and real producer
// processes over shared memory. Each test gets its own session (named after
// the test and this process) and temporary directory; every process it
// started is killed and reaped, and the session's segments removed, when the
// test ends, also when an assertion returned early.

#ifndef TICKTRACE_TESTS_COLLECTOR_LIVE_FIXTURE_H_
#define TICKTRACE_TESTS_COLLECTOR_LIVE_FIXTURE_H_

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
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

namespace ticktrace::collect::testing {

#if defined(TICKTRACE_SANITIZED)  // set by cmake/TicktraceSanitizers.cmake
// Instrumented producers add hundreds of ns around each stamp: timing bounds
// hold for optimized builds only.
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

inline const std::string kCollector = TICKTRACE_COLLECTOR_BIN;
inline const std::string kProducer = TICKTRACE_TEST_PRODUCER_BIN;

class LiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Unique also when a test runs again in this process (--gtest_repeat);
    // the test name is cut so that the session stays within 64 characters.
    static int runs = 0;
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    session_ = absl::StrCat("t_", test.substr(0, 36), "_", getpid(), "_", ++runs);
  }
  void TearDown() override {
    for (pid_t p : pids_) {
      kill(p, SIGKILL);
      WaitExit(p, std::chrono::seconds(2));
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
                        std::chrono::seconds(20)))
        << ReadFile(log());
    return pid;
  }

  // SIGTERM, then expect a clean exit. The bound is generous: under TSan a
  // collector that drains a refused segment's neighbours and flushes its
  // store took over 30 s to finish on a loaded 2-vCPU machine (the CI pass
  // failed there); a hang still fails, well inside the test's CTest timeout.
  void StopCollector(pid_t pid) {
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitExit(pid, std::chrono::seconds(120)), 0) << ReadFile(log());
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
      EXPECT_EQ(WaitExit(p, std::chrono::seconds(60)), 0) << ReadFile(dir_.File("producer.log"));
      Forget(p);
    }
  }

  void ExpectSegmentsRemoved() {
    EXPECT_TRUE(WaitFor([&] { return SegmentCount(session_) == 0; },
                        std::chrono::seconds(15)))
        << SegmentCount(session_) << " segments left\n"
        << ReadFile(log());
  }

  // The end of a live run: every segment drained and removed, then the
  // collector stopped cleanly.
  void FinishRun(pid_t collector) {
    ExpectSegmentsRemoved();
    StopCollector(collector);
  }

  std::string session_;
  TempDir dir_;
  std::vector<pid_t> pids_;
};

}  // namespace ticktrace::collect::testing

#endif  // TICKTRACE_TESTS_COLLECTOR_LIVE_FIXTURE_H_
