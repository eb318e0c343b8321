#include "viewer/views/percentile_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace ticktrace::view {

std::vector<PercentileLine> PercentileDistribution(const std::vector<double>& sorted_ns,
                                                   int ticks_per_half_distance) {
  std::vector<PercentileLine> lines;
  const size_t n = sorted_ns.size();
  if (n == 0) return lines;
  const auto count_up_to = [&](double value) {
    return static_cast<int64_t>(std::upper_bound(sorted_ns.begin(), sorted_ns.end(), value) -
                                sorted_ns.begin());
  };
  double level = 0;  // in percent
  while (level < 100) {
    double rank = std::ceil(level / 100.0 * static_cast<double>(n) - 1e-9);
    rank = std::clamp(rank, 1.0, static_cast<double>(n));
    const double value = sorted_ns[static_cast<size_t>(rank) - 1];
    const int64_t total = count_up_to(value);
    if (total == static_cast<int64_t>(n)) break;  // the 100% line follows
    lines.push_back({value, level / 100.0, total});
    const double halvings = std::floor(std::log2(100.0 / (100.0 - level)));
    const double ticks = ticks_per_half_distance * std::pow(2.0, halvings + 1);
    level += 100.0 / ticks;
  }
  lines.push_back({sorted_ns.back(), 1.0, static_cast<int64_t>(n)});
  return lines;
}

std::string RenderPercentileDistribution(const std::vector<double>& sorted_ns, ValueUnit unit,
                                         const std::string& label) {
  double scale = 1;
  const char* unit_name = "ns";
  switch (unit) {
    case ValueUnit::kNanoseconds:
      break;
    case ValueUnit::kMicroseconds:
      scale = 1e3;
      unit_name = "us";
      break;
    case ValueUnit::kMilliseconds:
      scale = 1e6;
      unit_name = "ms";
      break;
  }
  std::string out = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n";
  for (const PercentileLine& line : PercentileDistribution(sorted_ns, 5)) {
    if (line.percentile < 1.0) {
      absl::StrAppendFormat(&out, "%12.3f %2.12f %10d %14.2f\n", line.value_ns / scale,
                            line.percentile, line.total_count, 1.0 / (1.0 - line.percentile));
    } else {
      absl::StrAppendFormat(&out, "%12.3f %2.12f %10d\n", line.value_ns / scale, line.percentile,
                            line.total_count);
    }
  }
  double mean = 0;
  double stddev = 0;
  if (!sorted_ns.empty()) {
    for (double v : sorted_ns) mean += v;
    mean /= static_cast<double>(sorted_ns.size());
    for (double v : sorted_ns) stddev += (v - mean) * (v - mean);
    stddev = std::sqrt(stddev / static_cast<double>(sorted_ns.size()));
  }
  const double max = sorted_ns.empty() ? 0 : sorted_ns.back();
  absl::StrAppendFormat(&out, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", mean / scale,
                        stddev / scale);
  absl::StrAppendFormat(&out, "#[Max     = %12.3f, Total count    = %12d]\n", max / scale,
                        sorted_ns.size());
  absl::StrAppendFormat(&out, "#[Unit    = %12s, %s]\n", unit_name, label);
  return out;
}

absl::StatusOr<StageValues> CollectStageValues(store::StoreReader& store, const QueryOptions& options) {
  if (!options.stage.has_value()) return absl::InvalidArgumentError("--stage is required");
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveQuery(store, options));
  StageValues out;
  out.run = q.run;
  out.include_flagged = q.include_flagged;
  TICKTRACE_ASSIGN_OR_RETURN(out.detail, store.DetailCompleteness(q.run.run_id, q.window));
  TICKTRACE_RETURN_IF_ERROR(store.ForEachSample(
      q.run.run_id, q.filter, /*ordered=*/false, [&](const store::SampleRow& sample) {
        if (InPercentiles(sample.flags, q.include_flagged)) {
          out.sorted_ns.push_back(sample.latency_ns);
        } else {
          ++out.excluded;
        }
      }));
  std::sort(out.sorted_ns.begin(), out.sorted_ns.end());
  return out;
}

}  // namespace ticktrace::view
