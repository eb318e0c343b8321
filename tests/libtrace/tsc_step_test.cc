// EstimateTscStepTicks on synthetic counters whose step is known by
// construction (the expected value is the step the counter was built with),
// and MeasureTscStepTicks on this machine against the kernel-independent
// definition: every advance of the real counter is a multiple of the step.

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/environment.h"

namespace ticktrace {
namespace {

// Reads of a counter that advances by `step_ticks` at once, read every
// `min_gap`..`max_gap` ticks of real time. With `plus_one`, a read within
// the step it already returned gives the previous value + 1 (AMD's
// behaviour); otherwise it repeats the value.
std::vector<uint64_t> Counter(uint64_t step_ticks, uint64_t min_gap, uint64_t max_gap,
                              bool plus_one, int n = 20000, uint32_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> gap(min_gap, max_gap);
  std::vector<uint64_t> reads;
  uint64_t real = 1'000'000'007;
  uint64_t last = 0;
  for (int i = 0; i < n; ++i) {
    real += gap(rng);
    const uint64_t value = real / step_ticks * step_ticks;
    uint64_t r = value;
    if (!reads.empty() && value <= last) r = plus_one ? last + 1 : last;
    reads.push_back(r);
    last = r;
  }
  return reads;
}

TEST(TscStep, FineCounterReadSlowerThanItsStep) {
  // Intel-like: step 2 ticks, a read every 36..62 ticks.
  EXPECT_EQ(EstimateTscStepTicks(Counter(2, 36, 62, false)), 2u);
  // Step 1.
  EXPECT_EQ(EstimateTscStepTicks(Counter(1, 30, 70, false)), 1u);
}

TEST(TscStep, AmdCounterThatReturnsPlusOneWithinAStep) {
  // 2.096 GHz AMD EPYC guest: 21-tick steps, rdtsc about 11 ns = 23 ticks
  // apart, with jitter. The smallest non-zero difference here is 1.
  const std::vector<uint64_t> amd = Counter(21, 8, 30, true);
  EXPECT_EQ(EstimateTscStepTicks(amd), 21u);
  // 2.445 GHz Zen 3 guest: 24-tick steps.
  EXPECT_EQ(EstimateTscStepTicks(Counter(24, 8, 30, true)), 24u);
  // Reads much faster than the step (several +1s per step).
  EXPECT_EQ(EstimateTscStepTicks(Counter(36, 3, 9, true)), 36u);
}

TEST(TscStep, CounterThatRepeatsItsValueWithinAStep) {
  EXPECT_EQ(EstimateTscStepTicks(Counter(50, 5, 20, false)), 50u);
}

TEST(TscStep, ABackwardsReadRestartsTheMeasurement) {
  std::vector<uint64_t> reads = Counter(21, 8, 30, true, 10000, 1);
  std::vector<uint64_t> other = Counter(21, 8, 30, true, 10000, 2);
  for (uint64_t& v : other) v -= 500'000;  // another core, 500k ticks behind
  reads.insert(reads.end(), other.begin(), other.end());
  EXPECT_EQ(EstimateTscStepTicks(reads), 21u);
}

TEST(TscStep, NoAdvanceIsZero) {
  EXPECT_EQ(EstimateTscStepTicks({}), 0u);
  EXPECT_EQ(EstimateTscStepTicks({5, 5, 5, 5}), 0u);
  EXPECT_EQ(EstimateTscStepTicks({5, 6, 7, 8}), 1u);
}

// On this machine: independent reads of the real counter, spaced unevenly by
// the test itself. At least 90% of the advances (from one value that is not
// previous + 0/1 to the next) are multiples of the step, and fewer are
// multiples of twice the step (1 would pass the first check anywhere).
TEST(TscStep, ThisMachine) {
  const uint64_t step = MeasureTscStepTicks();
  ASSERT_GT(step, 0u);
  std::printf("TSC step on this machine: %llu ticks\n", static_cast<unsigned long long>(step));
  std::vector<uint64_t> reads;
  uint64_t sink = 3;
  for (int i = 0; i < 50000; ++i) {
    for (int k = i % 23; k > 0; --k) sink = sink * 2862933555777941757ull + 3;
    asm volatile("" : "+r"(sink));
    unsigned lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    reads.push_back((uint64_t(hi) << 32) | lo);
  }
  size_t advances = 0, multiples = 0, multiples_of_twice = 0;
  uint64_t base = 0;
  bool have_base = false;
  for (size_t i = 1; i < reads.size(); ++i) {
    if (reads[i] < reads[i - 1]) { have_base = false; continue; }
    if (reads[i] - reads[i - 1] <= 1) continue;
    if (have_base) {
      ++advances;
      multiples += (reads[i] - base) % step == 0;
      multiples_of_twice += (reads[i] - base) % (2 * step) == 0;
    }
    base = reads[i];
    have_base = true;
  }
  ASSERT_GT(advances, 1000u);
  EXPECT_GE(multiples * 10, advances * 9) << multiples << " of " << advances;
  // And it is the largest such step: twice it does not divide 90%.
  EXPECT_LT(multiples_of_twice * 10, advances * 9) << multiples_of_twice << " of " << advances;
}

}  // namespace
}  // namespace ticktrace
