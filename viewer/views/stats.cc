#include "viewer/views/stats.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ticktrace/store/losses.h"

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

std::vector<std::string> ConfidenceReasons(const ConfidenceInputs& in) {
  std::vector<std::string> reasons;
  // Lost records are missing from every stage, and not at random.
  if (in.records_lost_share >= store::kLostShareNoted) {
    reasons.push_back(absl::StrCat("records lost ", store::LostPercentText(in.records_lost_share)));
  }
  const double p50 = in.p50_ns.has_value() ? std::fabs(*in.p50_ns) : 0;
  if (in.p50_ns.has_value() && in.tsc_step_ns.has_value() && *in.tsc_step_ns > 0 &&
      p50 < kQuantisedSteps * *in.tsc_step_ns) {
    reasons.push_back("quantised");
  }
  if (in.cross_core > 0 && in.uncertainty_ns > 0 &&
      (!in.p50_ns.has_value() || in.uncertainty_ns > kUncertaintyShare * p50)) {
    reasons.push_back(absl::StrFormat("cross-core \u00b1%.0f ns", in.uncertainty_ns));
  }
  // Such a sample may have crossed cores, by an offset nobody measured.
  if (in.samples_all > 0 && in.core_unknown > 0) {
    const double share = static_cast<double>(in.core_unknown) / static_cast<double>(in.samples_all);
    if (share >= kCoreUnknownShare) {
      reasons.push_back(
          absl::StrFormat("core unknown %.*f%%", share < 0.1 ? 1 : 0, std::min(share, 1.0) * 100));
    }
  }
  if (in.samples_all > 0 && in.flagged > 0) {
    const double share = static_cast<double>(in.flagged) / static_cast<double>(in.samples_all);
    if (share >= kFlaggedShare) {
      reasons.push_back(absl::StrFormat("flagged %.*f%%", share < 0.1 ? 1 : 0,
                                        std::min(share, 1.0) * 100));
    }
  }
  if (in.count < kFewSamples) reasons.push_back("few samples");
  if (in.detail_sampled) reasons.push_back("detail sampled");
  return reasons;
}

}  // namespace ticktrace::view
