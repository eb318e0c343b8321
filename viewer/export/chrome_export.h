// `ticktrace-view export --format chrome`: a run's orders as Chrome Trace
// Event JSON, which Perfetto's UI and chrome://tracing open.
//
// Layout: one process track per traced process (metadata "process_name")
// and one thread track per thread ("thread_name"); every stamp is a complete
// event ("ph":"X") 1 ns long (so that flow arrows bind to it) and every span a
// complete event with its duration, on the thread that recorded it; the stamps of one order are
// joined by flow events ("ph":"s" at the first, "t" between, "f" at the
// last, "id" = the order ID as a hex string "0x..."; args.order_id is the
// decimal string: JSON numbers lose IDs above 2^53 in JavaScript). A linked
// order (args.parent_order_id) gets one more flow ("cat":"link", "id" its own
// ID) from its parent's stamp that starts its chain (the parent's latest
// stamp at or before the child's first) to its first stamp, when the parent
// is in the export too. Timestamps are microseconds since
// otherData.base_utc (the first exported order's first stamp, or the run's
// start if earlier), so that a double keeps nanoseconds.
#ifndef TICKTRACE_VIEW_CHROME_EXPORT_H_
#define TICKTRACE_VIEW_CHROME_EXPORT_H_

#include <ostream>

#include "absl/status/statusor.h"
#include "viewer/export/export_common.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// Writes the trace of the orders `options` selects to `out`.
absl::StatusOr<ExportResult> ExportChrome(store::StoreReader& store, const ExportOptions& options,
                                          std::ostream& out);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_CHROME_EXPORT_H_
