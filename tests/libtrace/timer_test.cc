// IntervalTimer (accumulation, the one-read switch) and CalibratedTimer.
// Correctness bounds only; nothing asserts how fast anything ran.

#include "ticktrace/timer.h"

#include <sched.h>
#include <time.h>

#include <cstdint>

#include "gtest/gtest.h"
#include "ticktrace/calibration.h"
#include "ticktrace/environment.h"

namespace ticktrace {
namespace {

enum Slot : size_t { kParse = 0, kDecide = 1, kSend = 2 };

TEST(IntervalTimerTest, AccumulatesIntervalsPerSlot) {
  IntervalTimer<3> t;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t.ticks(i), 0u);
    EXPECT_EQ(t.count(i), 0u);
  }
  t.start_at(kParse, 100);
  t.stop_at(kParse, 130);
  t.start_at(kParse, 200);
  t.stop_at(kParse, 250);
  t.start_at(kSend, 1000);
  t.stop_at(kSend, 1007);
  EXPECT_EQ(t.ticks(kParse), 80u);
  EXPECT_EQ(t.count(kParse), 2u);
  EXPECT_EQ(t.ticks(kDecide), 0u);
  EXPECT_EQ(t.count(kDecide), 0u);
  EXPECT_EQ(t.ticks(kSend), 7u);
  EXPECT_EQ(t.count(kSend), 1u);
  EXPECT_EQ(t.last_start_tsc(kParse), 200u);
  EXPECT_EQ(t.last_stop_tsc(kParse), 250u);

  const Calibration two_ghz = CalibrationFromHz(2e9);
  EXPECT_DOUBLE_EQ(t.ns(kParse, two_ghz), 40.0);
  EXPECT_DOUBLE_EQ(t.mean_ns(kParse, two_ghz), 20.0);
  EXPECT_DOUBLE_EQ(t.mean_ns(kDecide, two_ghz), 0.0);

  t.reset();
  EXPECT_EQ(t.ticks(kParse), 0u);
  EXPECT_EQ(t.count(kSend), 0u);
}

TEST(IntervalTimerTest, RealReadsAddUpToTheirEdges) {
  IntervalTimer<2> t;
  uint64_t expected = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t b = t.start(kParse);
    const uint64_t e = t.stop(kParse);
    EXPECT_EQ(t.last_start_tsc(kParse), b);
    EXPECT_EQ(t.last_stop_tsc(kParse), e);
    expected += e - b;
  }
  EXPECT_EQ(t.ticks(kParse), expected);
  EXPECT_EQ(t.count(kParse), 100u);
}

TEST(IntervalTimerTest, SwitchUsesOneReadForBothEdges) {
  IntervalTimer<3> t;
  const uint64_t begin = t.start(kParse);
  const uint64_t boundary = t.switch_to(kParse, kDecide);
  const uint64_t boundary2 = t.switch_to(kDecide, kSend);
  const uint64_t end = t.stop(kSend);

  // The shared read is exactly the end of one slot and the start of the next.
  EXPECT_EQ(t.last_stop_tsc(kParse), boundary);
  EXPECT_EQ(t.last_start_tsc(kDecide), boundary);
  EXPECT_EQ(t.last_stop_tsc(kDecide), boundary2);
  EXPECT_EQ(t.last_start_tsc(kSend), boundary2);
  EXPECT_EQ(t.ticks(kParse), boundary - begin);
  EXPECT_EQ(t.ticks(kDecide), boundary2 - boundary);
  EXPECT_EQ(t.ticks(kSend), end - boundary2);
  // No gap between phases: the slots add up to the whole.
  EXPECT_EQ(t.ticks(kParse) + t.ticks(kDecide) + t.ticks(kSend), end - begin);
  EXPECT_EQ(t.count(kParse), 1u);
  EXPECT_EQ(t.count(kDecide), 1u);
  EXPECT_EQ(t.count(kSend), 1u);
}

TEST(IntervalTimerTest, SwitchToTheSameSlotClosesAndReopens) {
  IntervalTimer<1> t;
  t.start_at(0, 10);
  t.stop_at(0, 15);
  const uint64_t b = t.start(0);
  const uint64_t m = t.switch_to(0, 0);
  const uint64_t e = t.stop(0);
  EXPECT_EQ(t.count(0), 3u);
  EXPECT_EQ(t.ticks(0), 5 + (m - b) + (e - m));
}

TEST(IntervalTimerTest, FencedFlavourBehavesTheSame) {
  IntervalTimer<2, TimerRead::kFenced> t;
  const uint64_t b = t.start(0);
  const uint64_t m = t.switch_to(0, 1);
  const uint64_t e = t.stop(1);
  EXPECT_EQ(t.ticks(0) + t.ticks(1), e - b);
  EXPECT_EQ(t.last_stop_tsc(0), m);
  EXPECT_EQ(t.last_start_tsc(1), m);
}

// Pins to the current core for the test's lifetime: cores may have different
// TSC offsets, and a stopwatch subtracts two reads.
class Pinned {
 public:
  Pinned() {
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ok_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~Pinned() { sched_setaffinity(0, sizeof(old_), &old_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t old_;
  bool ok_ = false;
};

TEST(CalibratedTimerTest, ProbesCalibratesAndMeasures) {
  Pinned pin;
  ASSERT_TRUE(pin.ok());
  CalibrationOptions options;
  options.rounds = 3;
  options.baseline_ms = 50;
  CalibratedTimer timer(options);
  ASSERT_TRUE(timer.ok()) << timer.status();
  const TscEnvironment env = ProbeTscEnvironment();
  EXPECT_GT(timer.frequency_hz(), 0);
  EXPECT_EQ(timer.frequency_hz(), timer.calibration().tsc_hz);
  EXPECT_EQ(timer.invariant_tsc(), env.invariant_tsc);
  EXPECT_EQ(timer.has_rdtscp(), env.has_rdtscp);
  EXPECT_FALSE(timer.environment().findings.empty());
  EXPECT_FALSE(timer.calibration().source.empty());

  // A sleep of 20 ms lasts at least 20 ms; the stopwatch must see at least
  // that, less the calibration's error (far below 1%).
  timer.start();
  timespec wait{0, 20'000'000};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  EXPECT_GE(timer.elapsed_ns(), 20e6 * 0.99);
  EXPECT_DOUBLE_EQ(timer.ticks_to_ns(1000), 1000 * timer.calibration().ns_per_tick);
}

TEST(CalibratedTimerTest, CreateReturnsTheTimer) {
  CalibrationOptions options;
  options.rounds = 1;
  options.baseline_ms = 10;
  Result<CalibratedTimer> t = CalibratedTimer::Create(options);
  // Unpinned, a round can be discarded; only a FailedPrecondition is acceptable.
  if (!t.ok()) {
    EXPECT_EQ(t.status().code(), ErrorCode::kFailedPrecondition) << t.status();
    return;
  }
  EXPECT_GT(t->frequency_hz(), 0);
}

TEST(CalibratedTimerTest, KnownFrequencySkipsCalibration) {
  CalibratedTimer timer(3.0e9);
  EXPECT_TRUE(timer.ok());
  EXPECT_EQ(timer.frequency_hz(), 3.0e9);
  EXPECT_EQ(timer.calibration().source, "given");
  EXPECT_DOUBLE_EQ(timer.ticks_to_ns(3000), 1000.0);
}

TEST(CalibratedTimerTest, InvalidOptionsLeaveItNotOk) {
  CalibrationOptions bad;
  bad.baseline_ms = 0;
  CalibratedTimer timer(bad);
  EXPECT_FALSE(timer.ok());
  EXPECT_EQ(timer.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(timer.frequency_hz(), 0);
}

}  // namespace
}  // namespace ticktrace
