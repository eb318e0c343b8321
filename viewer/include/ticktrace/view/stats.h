// Exact statistics over a set of latencies (used when a summary is filtered,
// so the collector's whole-run stage_stats do not apply).
#ifndef TICKTRACE_VIEW_STATS_H_
#define TICKTRACE_VIEW_STATS_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace ticktrace::view {

// The nearest-rank percentile of `sorted_ns`: the smallest value v such that
// at least `percentile`% of the values are <= v. percentile 0 gives the
// minimum. REQUIRES: sorted_ns non-empty and ascending; 0 <= percentile <= 100.
double NearestRankPercentile(const std::vector<double>& sorted_ns, double percentile);

// count, min, max, mean, p50, p90, p99, p99.9 of a set of latencies; the
// optional members are unset when count is 0.
struct LatencyStats {
  int64_t count = 0;
  std::optional<double> min_ns;
  std::optional<double> max_ns;
  std::optional<double> mean_ns;
  std::optional<double> p50_ns;
  std::optional<double> p90_ns;
  std::optional<double> p99_ns;
  std::optional<double> p999_ns;
};

// Sorts `values_ns` in place and computes LatencyStats from it.
LatencyStats ComputeLatencyStats(std::vector<double>& values_ns);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_STATS_H_
