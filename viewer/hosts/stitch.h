// Orders stitched across hosts (docs/clickhouse.md#several-hosts-one-store). Each host's collector writes its own run to one store;
// an order whose stages ran on several hosts is one order id in several runs.
// Stitching joins them: the instances of the id in the runs of the store
// whose first stamp lies within `window_ns` of the reference instance's, the
// stamps of all of them ordered by UTC.
//
// A stage between two stamps of one host is computed as that host's
// collector computed it (its TSC, through the run's calibration). A stage
// whose two stamps come from different hosts is computed from UTC (TSC values
// of two hosts are never subtracted), flagged store::kFlagCrossHost, and
// carries an uncertainty: the sum of the two hosts' clock-sync error bounds
// (runs.clock_error_ns), unknown when either is unknown.
//
// Callers: the multi-host tests, and the viewer's cross-host views
// (stitched_views.h: summary, orders, order and report with --hosts).
// Thread model: as store::StoreReader (one thread at a time per reader).
#ifndef TICKTRACE_VIEW_STITCH_H_
#define TICKTRACE_VIEW_STITCH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

struct StitchOptions {
  // Instances of the id in other runs belong to the order when their first
  // stamp is within this of the reference instance's.
  int64_t window_ns = 10'000'000'000;
  // The stages' stamps in order, across hosts (`--pipeline`); empty: every
  // stamp (not spans) in UTC order.
  std::vector<std::string> pipeline;
  // Only runs of these hosts (runs.host) join the order; empty: every run.
  // The reference run always does.
  std::vector<std::string> hosts;
};

// A stamp of a stitched order, with where it was taken.
struct HostStamp {
  std::string host;
  int64_t run_id = 0;
  store::StampRow stamp;
};

// One stage of a stitched order: consecutive pipeline stamps `from` -> `to`.
struct StitchedStage {
  std::string stage;  // "from->to", as ticktrace/store/names.h names a hop
  std::string from_host, to_host;
  double latency_ns = 0;
  bool cross_host = false;
  std::optional<double> uncertainty_ns;  // cross-host only; unset: unknown
  uint32_t flags = 0;                    // store::kFlagCrossHost for cross-host stages
};

// One order's stamps from every host's run, joined by UTC time (hosts share
// no TSC). Not the collector's StitchedOrder (collector/stitch/), which joins
// one host's stamps in its TSC's ticks.
struct UtcStitchedOrder {
  int64_t order_id = 0;
  std::vector<HostStamp> stamps;      // by UTC
  std::vector<StitchedStage> stages;  // in pipeline order
  std::vector<std::string> hosts;     // in the order they first appear
  // Every pipeline stamp was found (always true without a pipeline).
  bool complete = true;
};

// Stitches `order_id`, the reference being its instance 0 in `run_id`.
// nullopt when that run does not hold the id.
absl::StatusOr<std::optional<UtcStitchedOrder>> StitchOrder(store::StoreReader& store, int64_t run_id,
                                                         int64_t order_id,
                                                         const StitchOptions& options);

// Per stage over many stitched orders: the breakdown's figures.
struct StitchedStageStats {
  std::string stage;
  std::string from_host, to_host;
  bool cross_host = false;
  std::optional<double> uncertainty_ns;
  int64_t count = 0;
  double min_ns = 0, max_ns = 0, mean_ns = 0;
  double p50_ns = 0, p99_ns = 0;  // exact (nearest rank) over the orders
};

// Every order of `run_id` (the reference host's run) whose first stamp is in
// `window` (instance 0 only, by first stamp), at most `limit` of them (0: no
// limit), each stitched as StitchOrder does.
absl::StatusOr<std::vector<UtcStitchedOrder>> StitchOrders(store::StoreReader& store, int64_t run_id,
                                                        const store::TimeWindow& window,
                                                        const StitchOptions& options,
                                                        int64_t limit);

// The end-to-end stage of a stitched order, named "total": the sum of its
// stages (each stage from its own clock, so never a TSC difference across
// hosts), from the first stage's host to the last's; cross_host when any
// stage is, with the sum of the cross-host stages' uncertainties (unknown
// when one is unknown). nullopt for an order without stages.
std::optional<StitchedStage> StitchedTotal(const UtcStitchedOrder& order);

// Per stage over `orders` (stages in the order they first appear), plus
// "total" last when `with_total`. A stage's uncertainty is its largest over
// the orders; unknown when any order's is.
std::vector<StitchedStageStats> SummarizeStitched(const std::vector<UtcStitchedOrder>& orders,
                                                  bool with_total);

// Stitches every order of `run_id` (the reference host's run) whose first
// stamp is in `window`, at most `limit` of them, and gives each stage's
// statistics in pipeline order, plus how many orders were stitched across
// more than one host (`*stitched`).
absl::StatusOr<std::vector<StitchedStageStats>> StitchedBreakdown(
    store::StoreReader& store, int64_t run_id, const store::TimeWindow& window, const StitchOptions& options,
    int64_t limit, int64_t* stitched);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_STITCH_H_
