// ticktrace-demo stops cleanly whatever happens: Ctrl-C, the demo itself
// killed, a child that fails; and it rejects bad flags and a --db file that is
// not a ticktrace store. Nothing of the session may remain in /dev/shm or in
// the process table.

#include <signal.h>

#include <fstream>
#include <thread>

#include "demo_fixture.h"

namespace ticktrace::examples {
namespace {

using ::ticktrace::examples::testing::DemoTest;
using ::ticktrace::examples::testing::PollUntil;
using ::ticktrace::examples::testing::ProcessesWithArgument;
using ::ticktrace::examples::testing::RunProgram;
using ::ticktrace::examples::testing::StartProgram;
using ::ticktrace::examples::testing::TestChild;

// The demo's pipeline runs: the feed, strategy and gateway carry the session
// as an argument, and their queues and trace segments exist (three segments
// and two queues, ticktrace-example.<session>.*; the collector's own segment
// count is not relied on).
bool PipelineRuns(const std::string& session) {
  if (ProcessesWithArgument(session).size() < 3) return false;
  size_t queues = 0, segments = 0;
  for (const std::string& name : SessionShmEntries(session)) {
    if (name.rfind("ticktrace-example.", 0) == 0) ++queues;
    if (name.rfind("ticktrace.", 0) == 0) ++segments;
  }
  return queues >= 2 && segments >= 3;
}

TEST_F(DemoTest, CtrlCStopsEverythingAndLeavesNothing) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  absl::StatusOr<TestChild> demo = StartProgram(
      "ticktrace-demo", DemoArgs({"--ticks", "10000000", "--rate", "10000", "--tsc-hz", "2e9"}),
      dir_, "demo");
  ASSERT_TRUE(demo.ok()) << demo.status();
  // Interrupt once the pipeline runs (its programs, queues and segments exist).
  ASSERT_TRUE(PollUntil(
      [&] {
        return demo->Poll() ||
               (ReadFileOrEmpty(demo->log_path()).find("== running") != std::string::npos &&
                PipelineRuns(session_));
      },
      std::chrono::seconds(60)))
      << ReadFileOrEmpty(demo->log_path());
  ASSERT_FALSE(demo->Poll()) << ReadFileOrEmpty(demo->log_path());
  demo->Signal(SIGINT);
  ASSERT_TRUE(demo->WaitFor(std::chrono::seconds(60))) << ReadFileOrEmpty(demo->log_path());
  EXPECT_EQ(demo->exit_code(), kDemoInterrupted) << ReadFileOrEmpty(demo->log_path());
  ExpectNothingLeftBehind();
}

TEST_F(DemoTest, AKilledDemoTakesItsChildrenAlongAndTheNextDemoSweepsTheRest) {
  if (!NeedCollector()) GTEST_SKIP() << "ticktrace-collector is not built";
  // No --session: the demo names it demo-<time>-<its pid>, which the sweep recognises.
  absl::StatusOr<TestChild> demo = StartProgram(
      "ticktrace-demo",
      {"--db", db_, "--bin-dir", testing::BinDir(), "--ticks", "10000000", "--tsc-hz", "2e9"},
      dir_, "demo");
  ASSERT_TRUE(demo.ok()) << demo.status();
  ASSERT_TRUE(PollUntil(
      [&] {
        return demo->Poll() ||
               ReadFileOrEmpty(demo->log_path()).find("session demo-") != std::string::npos;
      },
      std::chrono::seconds(60)))
      << ReadFileOrEmpty(demo->log_path());
  const std::string log = ReadFileOrEmpty(demo->log_path());
  const size_t at = log.find("session demo-");
  ASSERT_NE(at, std::string::npos) << log;
  SetSession(log.substr(at + 8, log.find(',', at) - (at + 8)));
  ASSERT_EQ(session_, absl::StrCat(session_.substr(0, session_.rfind('-')), "-", demo->pid()));
  // Kill it once its pipeline runs.
  ASSERT_TRUE(PollUntil([&] { return demo->Poll() || PipelineRuns(session_); },
                        std::chrono::seconds(60)))
      << ReadFileOrEmpty(demo->log_path());
  ASSERT_FALSE(demo->Poll()) << ReadFileOrEmpty(demo->log_path());
  demo->Signal(SIGKILL);
  ASSERT_TRUE(demo->WaitFor(std::chrono::seconds(10)));
  // The children got SIGTERM from the kernel (parent-death signal) and stop.
  EXPECT_TRUE(PollUntil([&] { return ProcessesWithArgument(session_).empty(); },
                        std::chrono::seconds(30)));
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
