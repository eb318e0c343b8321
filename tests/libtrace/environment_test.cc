// The environment probe: every finding is present and explained; the TSC step
// and read cost obey the properties that must hold on any machine. No timing
// bounds: the machine is shared.

#include "ticktrace/environment.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace ticktrace {
namespace {

const EnvironmentFinding* Find(const TscEnvironment& env, const std::string& name) {
  const auto it = std::find_if(env.findings.begin(), env.findings.end(),
                               [&name](const EnvironmentFinding& f) { return f.name == name; });
  return it == env.findings.end() ? nullptr : &*it;
}

TEST(EnvironmentTest, EveryFindingIsPresentAndExplained) {
  const TscEnvironment env = ProbeTscEnvironment();
  for (const char* name : {"tsc", "rdtscp", "tsc_aux", "invariant_tsc", "constant_tsc",
                           "nonstop_tsc", "clocksource", "hypervisor"}) {
    const EnvironmentFinding* f = Find(env, name);
    ASSERT_NE(f, nullptr) << "missing finding " << name;
    EXPECT_FALSE(f->value.empty()) << name;
    EXPECT_FALSE(f->meaning.empty()) << name;
    EXPECT_EQ(f->meaning.find('\n'), std::string::npos) << name << ": meaning is one line";
  }
  for (const EnvironmentFinding& f : env.findings) {
    std::printf("%-14s %-26s %s%s\n", f.name.c_str(), f.value.c_str(),
                f.is_warning ? "WARNING: " : "", f.meaning.c_str());
  }
}

TEST(EnvironmentTest, FindingsAgreeWithTheFields) {
  const TscEnvironment env = ProbeTscEnvironment();
  EXPECT_TRUE(env.has_tsc) << "ticktrace's tests need a TSC";
  EXPECT_EQ(Find(env, "tsc")->value, env.has_tsc ? "yes" : "no");
  EXPECT_EQ(Find(env, "rdtscp")->value, env.has_rdtscp ? "yes" : "no (emulated)");
  // Without rdtscp, libtrace emulates it: a fact, not a warning.
  EXPECT_FALSE(Find(env, "rdtscp")->is_warning);
  EXPECT_EQ(Find(env, "invariant_tsc")->value, env.invariant_tsc ? "yes" : "no");
  EXPECT_EQ(Find(env, "hypervisor")->is_warning, env.hypervisor);
  if (!env.clocksource.empty()) {
    EXPECT_EQ(Find(env, "clocksource")->value, env.clocksource);
    EXPECT_EQ(Find(env, "clocksource")->is_warning, env.clocksource != "tsc");
  }
  if (env.hypervisor) {
    EXPECT_FALSE(env.hypervisor_vendor.empty());
  } else {
    EXPECT_TRUE(env.hypervisor_vendor.empty());
  }
}

TEST(EnvironmentTest, StepIsPositive) {
  const uint64_t step = MeasureTscStepTicks();
  EXPECT_GT(step, 0u);
  std::printf("TSC step: %llu ticks\n", static_cast<unsigned long long>(step));
  // Fewer reads can only find a step at least as large; it stays non-zero.
  EXPECT_GT(MeasureTscStepTicks(1000), 0u);
}

TEST(EnvironmentTest, ReadCostIsOrderedWithinEachFlavour) {
  const ReadCost c = MeasureReadCost();
  // What must hold: a minimum is no larger than the median of the same set.
  // (Fenced >= plain is likely but not guaranteed, so it is not asserted.)
  EXPECT_LE(c.rdtsc_min_ticks, c.rdtsc_median_ticks);
  EXPECT_LE(c.fenced_min_ticks, c.fenced_median_ticks);
  // Two reads in a row cannot be instantaneous: the second one sees a larger value
  // on any counter that is not broken; a step bounds the cost from below.
  EXPECT_GT(c.rdtsc_median_ticks, 0u);
  EXPECT_GT(c.fenced_median_ticks, 0u);
  std::printf("rdtsc pair: min %llu median %llu ticks; fenced pair: min %llu median %llu ticks\n",
              static_cast<unsigned long long>(c.rdtsc_min_ticks),
              static_cast<unsigned long long>(c.rdtsc_median_ticks),
              static_cast<unsigned long long>(c.fenced_min_ticks),
              static_cast<unsigned long long>(c.fenced_median_ticks));
  EXPECT_EQ(MeasureReadCost(0).rdtsc_median_ticks, 0u);
}

}  // namespace
}  // namespace ticktrace
