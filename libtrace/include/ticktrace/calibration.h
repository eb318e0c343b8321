// The TSC frequency, found once, off every hot path, and how far to trust it.
//
// Sources, in order (docs/calibration.md#where-the-frequency-comes-from):
//   1. CPUID leaf 0x15 when it reports both the crystal frequency and the ratio;
//   2. self-calibration against CLOCK_MONOTONIC_RAW: each clock read paired with
//      the tightest of several rdtsc sandwiches at both ends of a ~100 ms
//      baseline, several rounds, the median; a round whose rdtscp aux changed
//      (the thread moved) is discarded and retried, a bounded number of times.
// Never a hard-coded frequency and never CPUID 0x16 (a marketing base
// frequency, not the TSC's). The kernel's own value (sysfs tsc_khz, or dmesg's
// "tsc: ... MHz") is reported beside ours when readable, not used.

#ifndef TICKTRACE_CALIBRATION_H_
#define TICKTRACE_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ticktrace/status.h"

namespace ticktrace {

struct CalibrationOptions {
  int baseline_ms = 100;        // per round
  int rounds = 5;
  int max_retries = 5;          // extra rounds allowed to replace discarded ones
  int sandwich_tries = 7;       // rdtsc/clock/rdtsc tries per end; the tightest wins
  bool allow_cpuid = true;      // false: skip CPUID 0x15 (tests, or to cross-check)
};

struct Calibration {
  double tsc_hz = 0;            // ticks per second
  double ns_per_tick = 0;       // 1e9 / tsc_hz
  std::string source;           // "cpuid-0x15" or "self-calibrated (CLOCK_MONOTONIC_RAW)"
  int rounds_used = 0;
  int rounds_discarded = 0;     // migrated mid-round
  double spread_ppm = 0;        // (max - min) / median of the rounds, in ppm; 0 for CPUID
  double kernel_tsc_hz = 0;     // 0 when the kernel's value is not readable
  std::string kernel_source;    // where kernel_tsc_hz came from
  // (TSC, CLOCK_REALTIME) read back to back (tightest sandwich): ticks -> UTC.
  uint64_t anchor_tsc = 0;
  int64_t anchor_realtime_ns = 0;

  // Converts with doubles: ticks * ns_per_tick. Never ticks * 1e9 / hz in integers.
  double TicksToNs(double ticks) const { return ticks * ns_per_tick; }
  // UTC nanoseconds of a TSC value, through the anchor.
  int64_t TscToUtcNs(uint64_t tsc) const;
  // One paragraph a person can read: value, source, rounds, spread, kernel value.
  std::string Report() const;
};

// Calibrates. Takes ~rounds × baseline_ms. Error (FailedPrecondition) when no
// source works, saying what to do: pin the thread to one core, or pass the
// frequency explicitly (the collector's --tsc-hz).
Result<Calibration> Calibrate(const CalibrationOptions& options = {});

// A Calibration for a frequency given by the user (e.g. --tsc-hz): source
// "given", anchor taken now.
Calibration CalibrationFromHz(double tsc_hz);

// The kernel's TSC frequency: sysfs tsc_khz if present, else dmesg's
// "tsc: Refined TSC clocksource calibration" / "tsc: Detected ... MHz".
// NotFound when neither is readable.
Result<double> ReadKernelTscHz(std::string* where = nullptr);

// Reads the TSC and CLOCK_REALTIME back to back, the tightest of `tries`.
void ReadTscRealtimeAnchor(uint64_t* tsc, int64_t* realtime_ns, int tries = 7);

}  // namespace ticktrace

#endif  // TICKTRACE_CALIBRATION_H_
