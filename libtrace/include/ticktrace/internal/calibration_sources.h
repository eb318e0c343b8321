// Internal: the inputs calibration reads, made replaceable so that tests can
// drive Calibrate() deterministically and exercise its error paths (a clock
// that fails, a thread that keeps moving). Not part of the public API: names
// in ticktrace::internal may change without notice. Users call Calibrate().

#ifndef TICKTRACE_INTERNAL_CALIBRATION_SOURCES_H_
#define TICKTRACE_INTERNAL_CALIBRATION_SOURCES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ticktrace/calibration.h"
#include "ticktrace/status.h"

namespace ticktrace::internal {

struct CalibrationSources {
  // CPUID leaf 0x15: false when the leaf is absent; else its eax, ebx, ecx.
  std::function<bool(uint32_t* eax, uint32_t* ebx, uint32_t* ecx)> cpuid_15;
  // One TSC read for a sandwich end, ordered against the code around it, and
  // where it ran: rdtscp's aux when the CPU reports rdtscp, else sched_getcpu().
  std::function<uint64_t(uint32_t* where)> read_tsc;
  // CLOCK_MONOTONIC_RAW in ns; false when the clock cannot be read.
  std::function<bool(int64_t* ns)> read_clock_ns;
  // Waits `ns` nanoseconds of the clock's time.
  std::function<void(int64_t ns)> sleep_ns;
};

// The sources Calibrate() uses on this machine.
CalibrationSources RealCalibrationSources();

// Calibrate() with the given sources. The anchor and the kernel's value are
// still read from the real machine. Any thread may call it.
Result<Calibration> CalibrateWithSources(const CalibrationOptions& options,
                                         const CalibrationSources& sources);

// The TSC frequency in a kernel log (dmesg text): the last
// "tsc: Refined TSC clocksource calibration: X MHz" of the latest boot, else
// "tsc: Detected X MHz TSC", else "tsc: Detected X MHz processor". `*line`
// gets the line used. NotFound when the text has none.
Result<double> ParseKernelLogTscHz(std::string_view log, std::string* line = nullptr);

}  // namespace ticktrace::internal

#endif  // TICKTRACE_INTERNAL_CALIBRATION_SOURCES_H_
