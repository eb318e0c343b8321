#include "collector/time/external_clock.h"

#include <time.h>

#include <cstdint>
#include <limits>

#include "ticktrace/tsc.h"

namespace ticktrace::collect {

ExternalClockErrors MeasureAnchorError(double ns_per_tick, int tries) {
  ExternalClockErrors e;
  timespec res{};
  if (clock_getres(CLOCK_REALTIME, &res) == 0) {
    e.realtime_error_ns = static_cast<double>(res.tv_sec) * 1e9 + static_cast<double>(res.tv_nsec);
  }
  uint64_t best = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < tries; ++i) {
    timespec ts;
    const uint64_t before = ReadTscFencedBegin();
    clock_gettime(CLOCK_REALTIME, &ts);
    const uint64_t after = ReadTscFencedBegin();
    if (after >= before && after - before < best) best = after - before;
  }
  if (best != std::numeric_limits<uint64_t>::max()) {
    e.anchor_error_ns = static_cast<double>(best) / 2 * ns_per_tick + e.realtime_error_ns;
  }
  return e;
}

}  // namespace ticktrace::collect
