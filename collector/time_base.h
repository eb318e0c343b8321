// Conversion of TSC ticks to nanoseconds and to UTC, from one calibration.
// Doubles throughout (ticks × ns_per_tick), never ticks * 1e9 / hz in integers.
// A value type; any thread may use its own copy.

#ifndef TICKTRACE_COLLECTOR_TIME_BASE_H_
#define TICKTRACE_COLLECTOR_TIME_BASE_H_

#include <time.h>

#include <cmath>
#include <cstdint>

namespace ticktrace::collect {

// CLOCK_REALTIME now, in ns since the Unix epoch (cold paths: process
// discovery, run start and end).
inline int64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct TimeBase {
  double tsc_hz = 0;
  double ns_per_tick = 0;
  uint64_t anchor_tsc = 0;      // a TSC value read back to back with ...
  int64_t anchor_utc_ns = 0;    // ... this CLOCK_REALTIME value

  static TimeBase FromHz(double tsc_hz, uint64_t anchor_tsc, int64_t anchor_utc_ns) {
    return TimeBase{tsc_hz, 1e9 / tsc_hz, anchor_tsc, anchor_utc_ns};
  }
  // A signed tick difference in ns.
  double TicksToNs(int64_t ticks) const { return static_cast<double>(ticks) * ns_per_tick; }
  // The difference later - earlier in ns; negative when `later` is below `earlier`.
  double DiffNs(uint64_t later, uint64_t earlier) const {
    return TicksToNs(static_cast<int64_t>(later - earlier));
  }
  // UTC ns of a TSC value, through the anchor.
  int64_t UtcNs(uint64_t tsc) const {
    return anchor_utc_ns + std::llround(DiffNs(tsc, anchor_tsc));
  }
  // Ticks in `ms` milliseconds (rounded up).
  uint64_t MsToTicks(double ms) const {
    return static_cast<uint64_t>(std::ceil(ms * 1e-3 * tsc_hz));
  }
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_TIME_BASE_H_
