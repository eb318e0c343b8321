// `ticktrace-view summary`: the per-stage breakdown of one run, as a text
// table or as the JSON object documented in docs/viewer.md.
#ifndef TICKTRACE_VIEW_SUMMARY_H_
#define TICKTRACE_VIEW_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "viewer/cli/query.h"
#include "ticktrace/store/rows.h"
#include "viewer/views/stats.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// One row of the summary.
struct SummaryStage {
  std::string stage;
  LatencyStats stats;  // over the samples in the percentiles
  int64_t migrated = 0;
  int64_t negative = 0;
  int64_t cross_core = 0;
  int64_t skew = 0;
  int64_t out_of_order = 0;
  int64_t late = 0;
  // Samples with an unknown core at either end, over the whole run (the
  // store's counter "core_unknown:<stage>").
  int64_t core_unknown = 0;
  int64_t samples_all = 0;   // every sample, in the percentiles or not
  double uncertainty_ns = 0; // the cores' offset uncertainty of its cross-core samples
  // The clocks other than the TSC that read an end of its samples, as the
  // store has them (side "begin" or "end"; clock "realtime", "phc",
  // "exchange"); empty for a stage of TSC stamps only. Such samples are
  // flagged external.
  std::vector<store::StageClockRow> clocks;
  // Why its figures are not to be taken as printed (ConfidenceReasons); empty: ok.
  std::vector<std::string> confidence;
};

// A run's summary: header data and the stages in pipeline order, total last.
struct Summary {
  store::RunRow run;
  std::vector<store::CoreRow> cores;  // the latest offset of each core measured
  // How much order detail the window holds (store::StoreReader::DetailCompleteness);
  // detail_sampled: not all of it ("detail sampled").
  store::DetailCoverage detail;
  bool detail_sampled = false;
  std::map<std::string, int64_t> counters;
  std::vector<store::RunNote> notes;  // what the collector said about the run
  std::vector<SummaryStage> stages;
  // True when the rows are the merge of the run's interval histograms over
  // the window (log-linear histogram percentiles, every order counted);
  // false when computed here, exactly, from the stored samples.
  bool from_intervals = false;
  bool include_flagged = false;
  int64_t samples_read = 0;  // samples read when !from_intervals
  std::string filters;       // the filters in words; empty when none
};

// Builds the summary of the run `options` names. Merges the run's interval
// histograms over the window (--since/--until; the whole run without them)
// unless --process narrows the samples, the include_flagged in force is not
// the run's own (its histograms hold the run's choice), or options.exact;
// then computes exact statistics from the stored samples, which are
// "detail sampled" where the store does not hold every order's detail.
absl::StatusOr<Summary> BuildSummary(store::StoreReader& store, const QueryOptions& options);

// The stages with an end read by another clock (stamp_at) in one line:
// which end, which clock, how far the stage may be off ("other clocks
// (...): wire_rx->md_rx (wire_rx by realtime; uncertain by up to 1.13 µs)");
// empty when the run has none. Text and the HTML report print it.
std::string OtherClocksLine(const Summary& summary);

// The summary as the text table with its header.
std::string RenderSummaryText(const Summary& summary);

// The summary as one JSON object (docs/viewer.md, "summary --json").
std::string RenderSummaryJson(const Summary& summary);

// A counter of the summary's run, 0 when the collector did not write it.
int64_t CounterValue(const Summary& summary, const std::string& name);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_SUMMARY_H_
