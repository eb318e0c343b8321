// The three pipeline programs on their own, without a collector (their trace
// segments fill and count drops; the test removes them): counts, clean exits
// on a signal, and a peer that dies without closing its queue.

#include <signal.h>
#include <sys/mman.h>

#include <filesystem>
#include <thread>

#include "demo_runner.h"
#include "example_test_util.h"
#include "gtest/gtest.h"
#include "messages.h"
#include "shared_queue.h"

namespace ticktrace::examples {
namespace {

using ::ticktrace::examples::testing::PollUntil;
using ::ticktrace::examples::testing::RunProgram;
using ::ticktrace::examples::testing::ScopedSessionCleanup;
using ::ticktrace::examples::testing::ScopedTempDir;
using ::ticktrace::examples::testing::StartProgram;

// Whether process `pid` maps the shared-memory object `name`.
bool Maps(pid_t pid, const std::string& name) {
  return ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/maps")).find("/dev/shm/" + name) !=
         std::string::npos;
}

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_dir_ = temp_.path();
    ASSERT_FALSE(log_dir_.empty());
    session_ = absl::StrCat("pipeline-test-", getpid(), "-", ++counter_);
    cleanup_.set_session(session_);
  }
  void TearDown() override {
    // The example's queues must already be gone; report them if not (the
    // trace segments stay: no collector ran). cleanup_ removes both.
    for (const std::string& name : SessionShmEntries(session_)) {
      EXPECT_EQ(name.rfind("ticktrace-example.", 0), std::string::npos)
          << "queue left behind: " << name;
    }
  }
  std::vector<std::string> Stage(uint64_t work_ns) const {
    return {"--session", session_, "--work-ns", absl::StrCat(work_ns), "--tsc-hz", "2.6e9"};
  }
  // Both queues and both programs' trace segments exist.
  bool QueuesUp() const { return SessionShmEntries(session_).size() >= 4; }

  static inline int counter_ = 0;
  ScopedTempDir temp_;
  ScopedSessionCleanup cleanup_;
  std::string log_dir_;
  std::string session_;
};

TEST_F(PipelineTest, StandaloneRunProducesTheExpectedCounts) {
  auto gateway = StartProgram("ticktrace-example-gateway", Stage(100), log_dir_, "gateway");
  auto strategy = StartProgram("ticktrace-example-strategy", Stage(100), log_dir_, "strategy");
  ASSERT_TRUE(gateway.ok() && strategy.ok());
  std::vector<std::string> feed_args = Stage(100);
  feed_args.insert(feed_args.end(), {"--ticks", "3001", "--rate", "0"});
  const auto feed = RunProgram("ticktrace-example-feed", feed_args, log_dir_, "feed",
                               std::chrono::seconds(30));
  EXPECT_EQ(feed.exit_code, 0) << feed.output;
  ASSERT_TRUE(strategy->WaitFor(std::chrono::seconds(30)));
  ASSERT_TRUE(gateway->WaitFor(std::chrono::seconds(30)));
  EXPECT_EQ(strategy->exit_code(), 0);
  EXPECT_EQ(gateway->exit_code(), 0);
  const ExpectedCounts c = CountsForTicks(3001);
  EXPECT_NE(feed.output.find("sent 3001 ticks"), std::string::npos) << feed.output;
  const std::string strategy_out = ReadFileOrEmpty(strategy->log_path());
  EXPECT_NE(strategy_out.find(absl::StrCat("received 3001 ticks, sent ", c.orders, " orders (ticks with 0/1/2 orders: ",
                                           c.ticks_without_order, "/", c.ticks_with_one_order, "/",
                                           c.ticks_with_two_orders, ")")),
            std::string::npos)
      << strategy_out;
  const std::string gateway_out = ReadFileOrEmpty(gateway->log_path());
  EXPECT_NE(gateway_out.find(absl::StrCat("received ", c.orders, " orders, sent ", c.orders)),
            std::string::npos)
      << gateway_out;
}

TEST_F(PipelineTest, SigtermStopsTheStrategyAndTheGatewayFinishes) {
  auto gateway = StartProgram("ticktrace-example-gateway", Stage(100), log_dir_, "gateway");
  auto strategy = StartProgram("ticktrace-example-strategy", Stage(100), log_dir_, "strategy");
  ASSERT_TRUE(gateway.ok() && strategy.ok());
  // Wait until both queues exist, i.e. both programs are in their loops.
  ASSERT_TRUE(PollUntil([&] { return QueuesUp(); }, std::chrono::seconds(30)));
  strategy->Signal(SIGTERM);
  ASSERT_TRUE(strategy->WaitFor(std::chrono::seconds(10)));
  EXPECT_EQ(strategy->exit_code(), 3) << ReadFileOrEmpty(strategy->log_path());
  ASSERT_TRUE(gateway->WaitFor(std::chrono::seconds(10)));
  EXPECT_EQ(gateway->exit_code(), 0) << ReadFileOrEmpty(gateway->log_path());
}

TEST_F(PipelineTest, GatewayNoticesAStrategyKilledWithoutClosing) {
  auto gateway = StartProgram("ticktrace-example-gateway", Stage(100), log_dir_, "gateway");
  auto strategy = StartProgram("ticktrace-example-strategy", Stage(100), log_dir_, "strategy");
  ASSERT_TRUE(gateway.ok() && strategy.ok());
  ASSERT_TRUE(PollUntil([&] { return QueuesUp(); }, std::chrono::seconds(30)));
  // The strategy has opened (mapped) the gateway's "orders" queue.
  ASSERT_TRUE(PollUntil(
      [&] { return Maps(strategy->pid(), QueueSegmentName(session_, kOrdersChannel)); },
      std::chrono::seconds(30)));
  strategy->Signal(SIGKILL);
  ASSERT_TRUE(strategy->WaitFor(std::chrono::seconds(10)));
  ASSERT_TRUE(gateway->WaitFor(std::chrono::seconds(10)));
  EXPECT_EQ(gateway->exit_code(), 1);
  EXPECT_NE(ReadFileOrEmpty(gateway->log_path()).find("exited without closing"), std::string::npos);
  // The strategy created the ticks queue and could not remove it: clean up here.
  EXPECT_TRUE(RemoveQueueSegment(QueueSegmentName(session_, kTicksChannel)));
}

TEST_F(PipelineTest, BadFlagsExitTwoWithOneLine) {
  const auto r = RunProgram("ticktrace-example-feed", {"--ticks", "lots"}, log_dir_, "feed",
                            std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "ticktrace-example-feed: --ticks: expected a non-negative integer, got 'lots' (see --help)\n");
}

}  // namespace
}  // namespace ticktrace::examples
