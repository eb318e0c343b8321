// Exact statistics over a set of latencies (used when a summary is filtered,
// so the collector's whole-run stage_stats do not apply).
#ifndef TICKTRACE_VIEW_STATS_H_
#define TICKTRACE_VIEW_STATS_H_

#include <cstdint>
#include <optional>
#include <string>
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

// What a stage's confidence verdict is made of (docs/viewer.md, `stages[].confidence`).
struct ConfidenceInputs {
  int64_t count = 0;                 // samples in the percentiles
  int64_t samples_all = 0;           // every sample of the stage
  int64_t flagged = 0;               // samples carrying a flag that makes them doubtful
  int64_t cross_core = 0;
  int64_t core_unknown = 0;  // samples with an unknown core at either end
  std::optional<double> p50_ns;
  double uncertainty_ns = 0;         // the cores' offset uncertainty (0: none or unknown)
  std::optional<double> tsc_step_ns; // the run's TSC step
  bool detail_sampled = false;       // the run's detail policy is not "all"
  double records_lost_share = 0;     // the run's records lost / written (store/losses.h)
};

// Thresholds of the verdict (docs/viewer.md).
inline constexpr double kQuantisedSteps = 20;          // p50 under 20 TSC steps
inline constexpr double kUncertaintyShare = 0.10;      // uncertainty over 10% of p50
inline constexpr double kFlaggedShare = 0.01;          // 1% of the samples flagged
inline constexpr int64_t kFewSamples = 100;            // p99 needs 100 samples
inline constexpr double kCoreUnknownShare = 0.005;     // 5 per mille with no known core

// The reasons not to trust a stage's figures as printed, in a fixed order:
// "records lost N%" (from store::kLostShareNoted up), "quantised", "cross-core ±X ns", "core
// unknown N%", "flagged N%", "few samples", "detail sampled". Empty: ok.
std::vector<std::string> ConfidenceReasons(const ConfidenceInputs& in);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_STATS_H_
