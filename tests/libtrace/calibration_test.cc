// Calibration: agreement with CLOCK_MONOTONIC_RAW, the error paths, double
// conversion, the UTC anchor, and the kernel-log parser. Correctness bounds
// only: the machine is shared, so nothing here asserts how long anything took.

#include "ticktrace/calibration.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <array>
#include <cstdio>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/environment.h"
#include "ticktrace/internal/calibration_sources.h"
#include "ticktrace/tsc.h"

namespace ticktrace {
namespace {

// gmock is not linked into these tests; a small substring check instead.
template <typename Text>
::testing::AssertionResult Contains(const Text& text_in, std::string_view part) {
  const std::string_view text(text_in.data(), text_in.size());
  if (text.find(part) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// A refused calibration: FailedPrecondition naming `reason`, with the two ways
// out every such message gives (pin the thread, or pass the frequency).
void ExpectRefusedWithAdvice(const Result<Calibration>& cal, std::string_view reason) {
  ASSERT_FALSE(cal.ok());
  EXPECT_EQ(cal.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(cal.status().message(), reason));
  EXPECT_TRUE(Contains(cal.status().message(), "taskset"));
  EXPECT_TRUE(Contains(cal.status().message(), "--tsc-hz"));
}

// Pins the calling thread to the core it is on now; restores the old mask on
// destruction. Cores may have different TSC offsets, so any measurement that
// subtracts two reads must stay on one core.
class PinToCurrentCpu {
 public:
  PinToCurrentCpu() {
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_ = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    pinned_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinToCurrentCpu() { sched_setaffinity(0, sizeof(old_), &old_); }
  bool pinned() const { return pinned_; }
  int cpu() const { return cpu_; }

 private:
  cpu_set_t old_;
  int cpu_ = -1;
  bool pinned_ = false;
};

int64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The tightest of `tries` sandwiches TSC | clock | TSC on this core, independent
// of the library's code: returns the TSC midpoint and the clock value.
struct Pair {
  double tsc;
  int64_t clock_ns;
};
Pair TightestPair(clockid_t clock, bool rdtscp, int tries = 15) {
  auto read = [rdtscp] {
    uint32_t aux;
    return rdtscp ? ReadTscFencedEnd(&aux) : ReadTscFencedBegin();
  };
  Pair best{0, 0};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < tries; ++i) {
    const uint64_t a = read();
    const int64_t c = NowNs(clock);
    const uint64_t b = read();
    if (b >= a && b - a < best_width) {
      best_width = b - a;
      best = Pair{static_cast<double>(a) + static_cast<double>(b - a) / 2, c};
    }
  }
  return best;
}

TEST(CalibrationTest, AgreesWithMonotonicRawOverHalfASecond) {
  PinToCurrentCpu pin;
  ASSERT_TRUE(pin.pinned());
  CalibrationOptions options;
  options.allow_cpuid = false;  // test the self-calibration itself
  Result<Calibration> cal = Calibrate(options);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->source, "self-calibrated (CLOCK_MONOTONIC_RAW)");
  EXPECT_EQ(cal->rounds_used, options.rounds);
  EXPECT_GT(cal->tsc_hz, 0);
  EXPECT_DOUBLE_EQ(cal->ns_per_tick, 1e9 / cal->tsc_hz);
  EXPECT_GE(cal->spread_ppm, 0);

  // Re-measure over >= 0.5 s with our own sandwiches.
  const bool rdtscp = ProbeTscEnvironment().has_rdtscp;
  const Pair begin = TightestPair(CLOCK_MONOTONIC_RAW, rdtscp);
  timespec wait{0, 600'000'000};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  const Pair end = TightestPair(CLOCK_MONOTONIC_RAW, rdtscp);
  const double elapsed_ns = static_cast<double>(end.clock_ns - begin.clock_ns);
  ASSERT_GE(elapsed_ns, 5e8);
  const double reference_hz = (end.tsc - begin.tsc) * 1e9 / elapsed_ns;
  const double ppm = std::fabs(cal->tsc_hz - reference_hz) / reference_hz * 1e6;
  EXPECT_LT(ppm, 50) << "calibrated " << cal->tsc_hz << " Hz, re-measured " << reference_hz
                     << " Hz\n"
                     << cal->Report();
  std::printf("%s\nre-measured over %.3f s: %.1f Hz (%.2f ppm apart)\n", cal->Report().c_str(),
              elapsed_ns / 1e9, reference_hz, ppm);
}

// A fake machine: a TSC at exactly `hz` and a clock, both driven by one
// simulated time that advances a little with every read and by each sleep.
struct FakeMachine {
  double hz = 3.6e9;
  int64_t time_ns = 1'000'000'000;
  uint32_t next_where = 3;
  bool alternate_where = false;
  bool clock_fails = false;
  std::optional<std::array<uint32_t, 3>> leaf15;  // eax, ebx, ecx

  internal::CalibrationSources Sources() {
    internal::CalibrationSources s;
    s.cpuid_15 = [this](uint32_t* a, uint32_t* b, uint32_t* c) {
      if (!leaf15) return false;
      *a = (*leaf15)[0];
      *b = (*leaf15)[1];
      *c = (*leaf15)[2];
      return true;
    };
    s.read_tsc = [this](uint32_t* where) {
      time_ns += 10;
      *where = next_where;
      if (alternate_where) next_where ^= 1;
      return static_cast<uint64_t>(std::llround(static_cast<double>(time_ns) * hz / 1e9));
    };
    s.read_clock_ns = [this](int64_t* ns) {
      if (clock_fails) return false;
      time_ns += 25;
      *ns = time_ns;
      return true;
    };
    s.sleep_ns = [this](int64_t ns) { time_ns += ns; };
    return s;
  }
};

TEST(CalibrationTest, SelfCalibrationArithmeticOnAFakeMachine) {
  FakeMachine m;
  internal::CalibrationSources s = m.Sources();
  CalibrationOptions options;
  Result<Calibration> cal = internal::CalibrateWithSources(options, s);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->source, "self-calibrated (CLOCK_MONOTONIC_RAW)");
  EXPECT_EQ(cal->rounds_used, 5);
  EXPECT_EQ(cal->rounds_discarded, 0);
  // The fake TSC rounds to whole ticks: agreement to well under 1 ppm.
  EXPECT_NEAR(cal->tsc_hz, 3.6e9, 3.6e9 * 1e-7);
  EXPECT_LT(cal->spread_ppm, 0.1);
}

TEST(CalibrationTest, UsesCpuidLeaf15OnlyWhenComplete) {
  FakeMachine m;
  m.leaf15 = std::array<uint32_t, 3>{2, 188, 38'400'000};  // 38.4 MHz * 188 / 2
  Result<Calibration> cal = internal::CalibrateWithSources({}, m.Sources());
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->source, "cpuid-0x15");
  EXPECT_DOUBLE_EQ(cal->tsc_hz, 38.4e6 * 188 / 2);
  EXPECT_EQ(cal->spread_ppm, 0);

  // A zero crystal frequency (ecx) means "not reported": self-calibrate.
  m.leaf15 = std::array<uint32_t, 3>{2, 188, 0};
  cal = internal::CalibrateWithSources({}, m.Sources());
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->source, "self-calibrated (CLOCK_MONOTONIC_RAW)");

  // allow_cpuid = false skips a complete leaf too.
  m.leaf15 = std::array<uint32_t, 3>{2, 188, 38'400'000};
  CalibrationOptions no_cpuid;
  no_cpuid.allow_cpuid = false;
  cal = internal::CalibrateWithSources(no_cpuid, m.Sources());
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->source, "self-calibrated (CLOCK_MONOTONIC_RAW)");
}

TEST(CalibrationTest, FailsWithAdviceWhenTheThreadNeverStaysPut) {
  FakeMachine m;
  m.alternate_where = true;  // every read on another core
  CalibrationOptions options;
  options.rounds = 3;
  options.max_retries = 2;
  Result<Calibration> cal = internal::CalibrateWithSources(options, m.Sources());
  ExpectRefusedWithAdvice(cal, "5 of 5 rounds were discarded");
}

TEST(CalibrationTest, FailsWithAdviceWhenEverySourceFails) {
  FakeMachine m;
  m.leaf15 = std::array<uint32_t, 3>{0, 0, 0};  // leaf present, nothing reported (as in VMs)
  m.clock_fails = true;
  Result<Calibration> cal = internal::CalibrateWithSources({}, m.Sources());
  ExpectRefusedWithAdvice(cal, "CLOCK_MONOTONIC_RAW");
}

TEST(CalibrationTest, RecoversFromAFewMigratedRounds) {
  FakeMachine m;
  internal::CalibrationSources s = m.Sources();
  // The first two rounds see a core change; the rest do not.
  int reads = 0;
  constexpr int reads_per_round = 2 * (CalibrationOptions{}.sandwich_tries + 1);
  auto inner = s.read_tsc;
  s.read_tsc = [&reads, inner](uint32_t* where) {
    const uint64_t tsc = inner(where);
    if (reads < 2 * reads_per_round && reads % reads_per_round == reads_per_round - 1) *where = 99;
    ++reads;
    return tsc;
  };
  Result<Calibration> cal = internal::CalibrateWithSources({}, s);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->rounds_used, 5);
  EXPECT_EQ(cal->rounds_discarded, 2);
  EXPECT_NEAR(cal->tsc_hz, 3.6e9, 3.6e9 * 1e-7);
}

TEST(CalibrationTest, RejectsNonsenseOptions) {
  FakeMachine m;
  CalibrationOptions o;
  o.rounds = 0;
  EXPECT_EQ(internal::CalibrateWithSources(o, m.Sources()).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(CalibrationTest, ConvertsTenSecondsAt3_6GHzWithoutOverflow) {
  const Calibration c = CalibrationFromHz(3.6e9);
  EXPECT_EQ(c.source, "given");
  const uint64_t ticks = 36'000'000'000ull;  // 10 s
  // The integer way, ticks * 1e9 in 64 bits, would wrap: 3.6e19 > 2^64.
  static_assert(36'000'000'000ull > UINT64_MAX / 1'000'000'000ull);
  EXPECT_NEAR(c.TicksToNs(static_cast<double>(ticks)), 1e10, 1e-3);
  EXPECT_EQ(c.TscToUtcNs(c.anchor_tsc + ticks), c.anchor_realtime_ns + 10'000'000'000);
  // Before the anchor maps to earlier times.
  EXPECT_EQ(c.TscToUtcNs(c.anchor_tsc - 3'600'000'000ull), c.anchor_realtime_ns - 1'000'000'000);
}

TEST(CalibrationTest, AnchorMapsToRealtimeWithinMicroseconds) {
  PinToCurrentCpu pin;
  ASSERT_TRUE(pin.pinned());
  // A frequency good to a few ppm; the check below spans microseconds, so
  // even 100 ppm would add well under a ns.
  const Pair a = TightestPair(CLOCK_MONOTONIC_RAW, false);
  timespec wait{0, 50'000'000};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  const Pair b = TightestPair(CLOCK_MONOTONIC_RAW, false);
  const double hz = (b.tsc - a.tsc) * 1e9 / static_cast<double>(b.clock_ns - a.clock_ns);

  const Calibration c = CalibrationFromHz(hz);  // takes the anchor now
  const Pair now = TightestPair(CLOCK_REALTIME, false);
  const int64_t mapped = c.TscToUtcNs(static_cast<uint64_t>(now.tsc));
  EXPECT_LT(std::llabs(mapped - now.clock_ns), 10'000)
      << "anchor maps " << mapped << ", CLOCK_REALTIME " << now.clock_ns;
}

TEST(CalibrationTest, ParsesTheKernelLog) {
  std::string line;
  const char* detected =
      "<6>[    0.000000] tsc: Fast TSC calibration using PIT\n"
      "<6>[    0.000262] tsc: Detected 2096.028 MHz processor\n";
  Result<double> hz = internal::ParseKernelLogTscHz(detected, &line);
  ASSERT_TRUE(hz.ok()) << hz.status();
  EXPECT_DOUBLE_EQ(*hz, 2096.028e6);
  EXPECT_EQ(line, "[    0.000262] tsc: Detected 2096.028 MHz processor");

  // Refined beats Detected; the TSC line beats the processor line.
  const char* refined =
      "[    0.000262] tsc: Detected 3600.000 MHz processor\n"
      "[    0.000263] tsc: Detected 3593.000 MHz TSC\n"
      "[    1.512000] tsc: Refined TSC clocksource calibration: 3593.248 MHz\n"
      "[    1.512100] clocksource: Switched to clocksource tsc\n";
  hz = internal::ParseKernelLogTscHz(refined, &line);
  ASSERT_TRUE(hz.ok());
  EXPECT_DOUBLE_EQ(*hz, 3593.248e6);
  hz = internal::ParseKernelLogTscHz(
      "tsc: Detected 3600.000 MHz processor\ntsc: Detected 3593.000 MHz TSC\n");
  ASSERT_TRUE(hz.ok());
  EXPECT_DOUBLE_EQ(*hz, 3593e6);

  // kern.log with two boots: only the last boot counts.
  const char* two_boots =
      "Jan 1 kernel: tsc: Detected 3000.000 MHz processor\n"
      "Jan 1 kernel: tsc: Refined TSC clocksource calibration: 3000.100 MHz\n"
      "Jan 2 kernel: tsc: Detected 2900.000 MHz processor\n";
  hz = internal::ParseKernelLogTscHz(two_boots, &line);
  ASSERT_TRUE(hz.ok());
  EXPECT_DOUBLE_EQ(*hz, 2900e6);

  EXPECT_EQ(internal::ParseKernelLogTscHz("nothing here\n").status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(internal::ParseKernelLogTscHz("tsc: Detected garbage MHz processor").status().code(),
            ErrorCode::kNotFound);
}

// The frequencies, in Hz, of every "tsc: ... <number> MHz ..." line of `text`,
// parsed here without libtrace's parser.
std::vector<double> TscMhzLinesHz(const std::string& text) {
  std::vector<double> hz;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("tsc: ") == std::string::npos) continue;
    const size_t mhz = line.find(" MHz");
    if (mhz == std::string::npos) continue;
    const size_t start = line.rfind(' ', mhz - 1);
    if (start == std::string::npos) continue;
    try {
      hz.push_back(std::stod(line.substr(start + 1, mhz - start - 1)) * 1e6);
    } catch (const std::exception&) {
    }
  }
  return hz;
}

std::string CommandOutput(const char* command) {
  std::string out;
  if (FILE* p = ::popen(command, "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// ReadKernelTscHz against the same facts read independently: the sysfs file
// when the kernel exports it (then exactly its value), else a tsc line that
// the dmesg program or /var/log/kern.log shows; NotFound only when none of
// these has one.
TEST(CalibrationTest, ReadKernelTscHzAgreesWithTheKernelsOwnRecords) {
  std::string where;
  Result<double> hz = ReadKernelTscHz(&where);
  std::printf("kernel TSC frequency: %s (%s)\n",
              hz.ok() ? std::to_string(*hz).c_str() : hz.status().ToString().c_str(),
              where.c_str());

  std::ifstream sysfs("/sys/devices/system/cpu/cpu0/tsc_freq_khz");
  double khz = 0;
  if (sysfs >> khz && khz > 0) {
    ASSERT_TRUE(hz.ok()) << hz.status();
    EXPECT_EQ(*hz, khz * 1e3);
    EXPECT_EQ(where, "/sys/devices/system/cpu/cpu0/tsc_freq_khz");
    return;
  }
  std::vector<double> logged = TscMhzLinesHz(CommandOutput("dmesg 2>/dev/null"));
  const std::vector<double> kern_log =
      TscMhzLinesHz(CommandOutput("cat /var/log/kern.log 2>/dev/null"));
  logged.insert(logged.end(), kern_log.begin(), kern_log.end());
  if (logged.empty()) {
    EXPECT_EQ(hz.status().code(), ErrorCode::kNotFound) << hz.status();
    return;
  }
  ASSERT_TRUE(hz.ok()) << hz.status() << " although the kernel log has a tsc line";
  EXPECT_NE(std::find(logged.begin(), logged.end(), *hz), logged.end())
      << *hz << " Hz is in no tsc line of the kernel log";
  EXPECT_NE(where.find("MHz"), std::string::npos) << where;  // names the line it used
}

TEST(CalibrationTest, ReportMentionsWhatMatters) {
  FakeMachine m;
  Result<Calibration> cal = internal::CalibrateWithSources({}, m.Sources());
  ASSERT_TRUE(cal.ok());
  const std::string r = cal->Report();
  EXPECT_TRUE(Contains(r, "3600.000000 MHz"));
  EXPECT_TRUE(Contains(r, "CLOCK_MONOTONIC_RAW"));
  EXPECT_TRUE(Contains(r, "5 rounds used"));
  EXPECT_TRUE(Contains(r, "ppm"));
  EXPECT_TRUE(Contains(r, "Kernel's value"));
}

}  // namespace
}  // namespace ticktrace
