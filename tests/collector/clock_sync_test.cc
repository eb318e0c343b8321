// The clock-sync bound (collector/time/clock_sync.h): chrony's and pmc's answers
// as those programs print them, and the fallback to --clock-error-ns.

#include "collector/time/clock_sync.h"

#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

// `chronyc -n tracking` of a synchronised host (chrony 4.3's layout).
constexpr char kChrony[] =
    "Reference ID    : C0A80101 (192.168.1.1)\n"
    "Stratum         : 3\n"
    "Ref time (UTC)  : Tue Dec 01 04:00:00 2026\n"
    "System time     : 0.000012000 seconds fast of NTP time\n"
    "Last offset     : -0.000001000 seconds\n"
    "RMS offset      : 0.000005000 seconds\n"
    "Frequency       : 1.234 ppm slow\n"
    "Residual freq   : +0.001 ppm\n"
    "Skew            : 0.050 ppm\n"
    "Root delay      : 0.000400000 seconds\n"
    "Root dispersion : 0.000030000 seconds\n"
    "Update interval : 64.0 seconds\n"
    "Leap status     : Normal\n";

TEST(ClockSync, ChronyBoundIsOffsetPlusDispersionPlusHalfTheDelay) {
  // 12 us + 30 us + 400 us / 2 = 242 us.
  const std::optional<double> bound = ParseChronyTracking(kChrony);
  ASSERT_TRUE(bound.has_value());
  EXPECT_NEAR(*bound, 242000, 1e-6);
}

TEST(ClockSync, UnsynchronisedChronyGivesNoBound) {
  std::string text = kChrony;
  text.replace(text.find("Normal"), 6, "Not synchronised");
  EXPECT_FALSE(ParseChronyTracking(text).has_value());
  EXPECT_FALSE(ParseChronyTracking("506 Cannot talk to daemon\n").has_value());
  EXPECT_FALSE(ParseChronyTracking("").has_value());
}

TEST(ClockSync, PmcMasterOffsetWithAGrandmaster) {
  const char* pmc =
      "sending: GET TIME_STATUS_NP\n"
      "\t001122.fffe.334455-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP\n"
      "\t\tmaster_offset              -87\n"
      "\t\tingress_time               1764561600000000000\n"
      "\t\tgmPresent                  true\n";
  const std::optional<double> bound = ParsePmcTimeStatus(pmc);
  ASSERT_TRUE(bound.has_value());
  EXPECT_DOUBLE_EQ(*bound, 87);
  std::string none = pmc;
  none.replace(none.find("true"), 4, "false");
  EXPECT_FALSE(ParsePmcTimeStatus(none).has_value());
}

TEST(ClockSync, WithoutDaemonsTheFlagOrUnknown) {
  const ClockSync flag = ReadClockSync(1500, /*ask_daemons=*/false);
  EXPECT_EQ(flag.source, "flag");
  ASSERT_TRUE(flag.error_ns.has_value());
  EXPECT_DOUBLE_EQ(*flag.error_ns, 1500);
  const ClockSync unknown = ReadClockSync(std::nullopt, /*ask_daemons=*/false);
  EXPECT_EQ(unknown.source, "unknown");
  EXPECT_FALSE(unknown.error_ns.has_value());
  EXPECT_NE(unknown.detail.find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace ticktrace::collect
