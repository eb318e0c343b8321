// `ticktrace-view summary`: the per-stage breakdown of one run, as a text
// table or as the JSON object documented in docs/viewer.md.
#ifndef TICKTRACE_VIEW_SUMMARY_H_
#define TICKTRACE_VIEW_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/view/query.h"
#include "ticktrace/view/records.h"
#include "ticktrace/view/stats.h"
#include "ticktrace/view/store.h"

namespace ticktrace::view {

// One row of the summary.
struct StageSummary {
  std::string stage;
  LatencyStats stats;  // over the samples in the percentiles
  int64_t migrated = 0;
  int64_t negative = 0;
  int64_t cross_core = 0;
  int64_t skew = 0;
  int64_t out_of_order = 0;
  int64_t late = 0;
  int64_t samples_all = 0;   // every sample, in the percentiles or not
  double uncertainty_ns = 0; // the cores' offset uncertainty of its cross-core samples
  // Why its figures are not to be taken as printed (ConfidenceReasons); empty: ok.
  std::vector<std::string> confidence;
};

// A run's summary: header data and the stages in pipeline order, total last.
struct Summary {
  RunInfo run;
  std::vector<CoreRow> cores;  // the latest offset of each core measured
  bool detail_sampled = false; // the run's settings say "detail" is not "all"
  std::map<std::string, int64_t> counters;
  std::vector<StageSummary> stages;
  // True when the rows are the collector's stage_stats (log-linear histogram
  // percentiles); false when computed here, exactly, from samples.
  bool from_stage_stats = false;
  bool include_flagged = false;
  int64_t samples_read = 0;  // samples read when !from_stage_stats
  std::string filters;       // the filters in words; empty when none
};

// Builds the summary of the run `options` names. Uses stage_stats when no
// filter narrows the samples, the run has stage_stats, and they were computed
// with the include_flagged in force (by default the run's own, so an
// unfiltered summary always uses them); otherwise reads the samples.
absl::StatusOr<Summary> BuildSummary(Store& store, const QueryOptions& options);

// The summary as the text table with its header.
std::string RenderSummaryText(const Summary& summary);

// The summary as one JSON object (docs/viewer.md, "summary --json").
std::string RenderSummaryJson(const Summary& summary);

// A counter of the summary's run, 0 when the collector did not write it.
int64_t CounterValue(const Summary& summary, const std::string& name);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_SUMMARY_H_
