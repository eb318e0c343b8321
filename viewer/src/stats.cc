#include "ticktrace/view/stats.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace ticktrace::view {

double NearestRankPercentile(const std::vector<double>& sorted_ns, double percentile) {
  const size_t n = sorted_ns.size();
  // rank = ceil(p/100 * n), at least 1. The small epsilon keeps 99.9% of
  // 1000 values at rank 999 despite 0.999 * 1000 = 999.0000000000001.
  double rank = std::ceil(percentile / 100.0 * static_cast<double>(n) - 1e-9);
  rank = std::clamp(rank, 1.0, static_cast<double>(n));
  return sorted_ns[static_cast<size_t>(rank) - 1];
}

LatencyStats ComputeLatencyStats(std::vector<double>& values_ns) {
  LatencyStats stats;
  stats.count = static_cast<int64_t>(values_ns.size());
  if (values_ns.empty()) return stats;
  std::sort(values_ns.begin(), values_ns.end());
  double sum = 0;
  for (double v : values_ns) sum += v;
  stats.min_ns = values_ns.front();
  stats.max_ns = values_ns.back();
  stats.mean_ns = sum / static_cast<double>(values_ns.size());
  // A tail percentile is reported only with at least 1 / (1 - q) samples (10
  // for p90, 100 for p99, 1000 for p99.9: the collector's rule, stage_stats.h);
  // with fewer it would be the maximum under another name. Otherwise unset,
  // printed "-" and null in JSON.
  const auto percentile = [&values_ns](double percent, size_t min_samples) {
    return values_ns.size() >= min_samples
               ? std::optional<double>(NearestRankPercentile(values_ns, percent))
               : std::nullopt;
  };
  stats.p50_ns = percentile(50, 1);
  stats.p90_ns = percentile(90, 10);
  stats.p99_ns = percentile(99, 100);
  stats.p999_ns = percentile(99.9, 1000);
  return stats;
}

}  // namespace ticktrace::view
