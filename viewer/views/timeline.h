// `ticktrace-view order ID`: one order's timeline — every stamp and span of
// the order and of the orders it is linked to (its parent chain), with
// process, thread, core, UTC time, the delta from the previous stamp and
// the flags.
#ifndef TICKTRACE_VIEW_TIMELINE_H_
#define TICKTRACE_VIEW_TIMELINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// One line of a timeline.
struct TimelineEntry {
  store::StampRow stamp;
  std::string process;  // "name[pid]", or "process <id>" when unknown
  std::string thread;   // "tid name", or the tid alone
  // TSC ticks since the previous entry, in ns (run calibration); unset for
  // the first entry.
  std::optional<double> delta_ns;
};

// The timeline of one order.
struct Timeline {
  store::RunRow run;
  // The order's parent chain, root first, the order itself last.
  std::vector<store::OrderRow> chain;
  std::vector<int64_t> children;  // orders linked to this one
  std::vector<TimelineEntry> entries;  // by TSC
};

// Builds the timeline of `order_id` in run `run_id`, or when unset in the
// latest run that holds the order. NotFound for an unknown run or order.
absl::StatusOr<Timeline> BuildTimeline(store::StoreReader& store, int64_t order_id,
                                       std::optional<int64_t> run_id);

// The timeline as text: a header naming the order, its chain and state,
// then a table with one line per stamp.
std::string RenderTimeline(const Timeline& timeline);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_TIMELINE_H_
