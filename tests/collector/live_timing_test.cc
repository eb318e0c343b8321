// Latency bounds of a live run: measured stage latencies against the work the
// producers injected. Its CTest entry, collector_live_timing_test, is labelled
// `timing` and RUN_SERIAL (tests/collector/CMakeLists.txt): it runs alone, in
// the optimized pass only (the sanitizer passes leave `timing` out). The
// behaviour of live runs is checked in live_test.cc, in every pass.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/collector/live_fixture.h"

namespace ticktrace::collect {
namespace {

using testing::kSanitized;
using testing::LiveTest;
using testing::StoreQuery;

// The error budget shared by every bound below, as a fraction of the value:
//   0.4%  the histogram: percentiles are bucket midpoints, less than 0.4% from
//         the true value (docs/collector.md);
//   0.1%  calibration: the collector calibrates itself here, while the
//         producers busy-wait with the kernel's TSC frequency; the two agree
//         to tens of ppm on this host, and to 0.1% on any we know.
constexpr double kMeasurementError = 0.004 + 0.001;

// Three processes with known busy-wait work in every stage; p50 of each stage
// against that work.
//
// In-thread stages (both stamps in one thread, the work between them): within
// 2% + 100 ns of the work.
//   2% = kMeasurementError (0.5%), plus 1.5% for the busy-wait running long
//        when its thread is preempted on this shared 2-core host (the
//        collector and two other producers compete for the cores; the p50
//        moves only when most samples are stretched, which 1.5% allows);
//   100 ns = the second stamp's own cost (a TSC read and a 32-byte ring store,
//        20-40 ns) plus the busy-wait's overshoot (up to one TSC read, 10-30 ns
//        in a VM), about twice over.
// Cross-process stages (a stamp, busy work, a pipe write; the next process's
// read and stamp): at least the work less kMeasurementError, at most
// kHandoffBoundNs above the work.
//   1 ms = the pipe wake-up of the blocked reader (p50 5-8 us above the work
//        on this 2-core VM) and its wait for a core while both cores run
//        busy-waits and the collector's drain; the scheduler's wake-up
//        preemption puts it on a core well within 1 ms.
// Measured here (2-core KVM guest): in-thread +58..+160 ns, hand-offs
// +4.6..+8.0 us.
TEST_F(LiveTest, ThreeProcessStagesMatchInjectedWork) {
  if (kSanitized) GTEST_SKIP() << "latency bounds hold for optimized builds only";
  constexpr uint64_t kOrders = 1500;
  constexpr double kHandoffBoundNs = 1e6;
  const pid_t c = StartCollector({"--pipeline", "a_in,a_out,b_in,b_out,c_in,c_out"},
                                 /*calibrate=*/true);
  const std::vector<ChainStage> stages = {{"a_in", "a_out", 20000, 10000},
                                          {"b_in", "b_out", 30000, 15000},
                                          {"c_in", "c_out", 25000, 0}};
  WaitProducers(StartChain(stages, kOrders, 300));
  FinishRun(c);

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
    if (e.in_thread) {
      EXPECT_NEAR(got, e.work_ns, e.work_ns * 0.02 + 100) << e.stage;
    } else {
      EXPECT_GE(got, e.work_ns * (1 - kMeasurementError)) << e.stage;
      EXPECT_LE(got, e.work_ns + kHandoffBoundNs) << e.stage;
    }
  }
}

}  // namespace
}  // namespace ticktrace::collect
