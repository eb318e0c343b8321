// The collector's calibration report says when a check is not independent
// (clocksource tsc or kvm-clock: CLOCK_MONOTONIC_RAW is the TSC scaled by the
// kernel), and shows a CPUID 0x15 frequency beside a measurement of it.
// Expected text written by hand from docs/calibration.md.

#include <string>

#include "collector/app/console_report.h"
#include "collector/app/run_info.h"
#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

RunInfo SelfCalibrated(const std::string& clocksource) {
  RunInfo r;
  r.session = "s";
  r.tsc_hz = 2e9;
  r.calibration_source = "self-calibrated (CLOCK_MONOTONIC_RAW)";
  r.kernel_tsc_hz = 2e9;
  r.kernel_source = "sysfs";
  r.environment.push_back(EnvironmentNote{"clocksource", clocksource, "...", false});
  return r;
}

TEST(CalibrationReport, AgreementWithTheKernelIsNotACheckOnTscClocksources) {
  for (const char* cs : {"tsc", "kvm-clock"}) {
    const std::string out = CalibrationReport(SelfCalibrated(cs));
    EXPECT_NE(out.find(std::string("ours differs by +0.0 ppm (not an independent check: with "
                                   "clocksource ") + cs + " CLOCK_MONOTONIC_RAW is computed from "
                                   "the TSC)"),
              std::string::npos)
        << out;
  }
}

TEST(CalibrationReport, AgreementIsACheckOnOtherClocksources) {
  const std::string out = CalibrationReport(SelfCalibrated("hpet"));
  EXPECT_NE(out.find("ours differs by +0.0 ppm\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("not an independent check"), std::string::npos) << out;
}

TEST(CalibrationReport, CpuidFrequencyIsShownBesideAMeasurement) {
  RunInfo r = SelfCalibrated("tsc");
  r.calibration_source = "cpuid-0x15";
  r.measured_tsc_hz = 2e9 * (1 - 5e-6);  // CPUID reads 5.000025 ppm above it
  const std::string out = CalibrationReport(r);
  EXPECT_NE(out.find("measured       1.999990 GHz against CLOCK_MONOTONIC_RAW: CPUID's value "
                     "differs by +5.0 ppm"),
            std::string::npos)
      << out;
  // CPUID is not derived from the clock: agreeing with the kernel is a check.
  EXPECT_EQ(out.find("not an independent check"), std::string::npos) << out;
}

TEST(CalibrationReport, MeasuredFrequencyAndCoresSurviveTheJournal) {
  RunInfo r = SelfCalibrated("tsc");
  r.measured_tsc_hz = 1.5e9;
  r.cores.push_back(CoreSkew{0, 0, 0, true, 5});
  r.cores.push_back(CoreSkew{1, -2.5, 128.5, false, 6});
  absl::StatusOr<RunInfo> back = RunInfo::FromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->measured_tsc_hz.has_value());
  EXPECT_EQ(*back->measured_tsc_hz, 1.5e9);
  ASSERT_EQ(back->cores.size(), 2u);
  EXPECT_EQ(back->cores[1].cpu, 1);
  EXPECT_EQ(back->cores[1].offset_ns, -2.5);
  EXPECT_EQ(back->cores[1].bound_ns, 128.5);
  EXPECT_FALSE(back->cores[1].consistent);
  EXPECT_EQ(back->cores[1].measured_at_utc_ns, 6);
}

}  // namespace
}  // namespace ticktrace::collect
