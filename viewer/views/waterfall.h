// `ticktrace-view orders --slowest N`: the slowest orders of a run, each
// with its stages drawn as a text waterfall on the order's own time axis.
#ifndef TICKTRACE_VIEW_WATERFALL_H_
#define TICKTRACE_VIEW_WATERFALL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace::view {

// One ranked order with its samples in pipeline order.
struct SlowOrder {
  store::OrderRow order;
  double latency_ns = 0;  // in the ranking stage
  uint32_t flags = 0;     // of the ranking sample
  std::vector<store::SampleRow> samples;
  // A linked order's parent's samples (its chain starts at the parent's
  // stamp), `total` left out, in pipeline order; empty otherwise.
  std::vector<store::SampleRow> parent_samples;
};

// The slowest orders of one run by one stage.
struct SlowestReport {
  store::RunRow run;
  std::string stage;  // the ranking stage ("total" unless --stage)
  std::string filters;  // --since/--until in words; empty when not given
  std::vector<SlowOrder> orders;  // slowest first; ties by order_id
};

// Finds the `n` slowest orders of run `run_id` (latest when unset) by
// `stage` (default "total"). Every sample counts, flagged or not: flags are
// shown, not filtered. With `since`/`until`, only orders whose first stamp
// is in that window (--since/--until, time_arg.h). NotFound for an unknown
// run or stage; InvalidArgument when since is after until.
// REQUIRES: n >= 1.
absl::StatusOr<SlowestReport> FindSlowestOrders(store::StoreReader& store, std::optional<int64_t> run_id,
                                                std::optional<std::string> stage, int64_t n,
                                                const std::optional<TimeArg>& since = std::nullopt,
                                                const std::optional<TimeArg>& until = std::nullopt);

// The report as text: per order a header line, then one line per stage with
// its latency, flags and a bar `bar_width` characters wide; a linked order's
// parent's stages first, marked "^".
std::string RenderWaterfall(const SlowestReport& report, int bar_width = 50);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_WATERFALL_H_
