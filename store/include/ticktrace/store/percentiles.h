// When a percentile is reported as a number (docs/viewer.md#summary). The one definition
// for the collector's whole-run statistics and every reader of the store
// (window statistics, intervals): the same rule everywhere, so a window and
// the whole run never disagree about what "p99" may show.

#ifndef TICKTRACE_STORE_PERCENTILES_H_
#define TICKTRACE_STORE_PERCENTILES_H_

#include <cstdint>

namespace ticktrace::store {

// The fewest samples for which a tail percentile says more than "the largest
// sample": 1 / (1 - q), i.e. 10 for p90, 100 for p99, 1000 for p99.9 (p99.9
// of 200 samples would be their maximum, printed as if it were a p99.9). With
// fewer it is not reported as a number. The median (and below) needs one
// sample.
inline constexpr uint64_t MinSamplesForPercentile(double percent) {
  return percent <= 50 ? 1 : static_cast<uint64_t>(100.0 / (100.0 - percent) + 0.5);
}

static_assert(MinSamplesForPercentile(50) == 1);
static_assert(MinSamplesForPercentile(90) == 10);
static_assert(MinSamplesForPercentile(99) == 100);
static_assert(MinSamplesForPercentile(99.9) == 1000);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_PERCENTILES_H_
