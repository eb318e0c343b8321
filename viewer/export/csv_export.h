// `ticktrace-view export --format csv`: a run's stage samples as CSV, one
// row per sample after a header row:
//
//   run_id,order_id,stage,start_utc_ns,latency_ns,process_begin,process_end,
//   cpu_begin,cpu_end,flags
//
// Empty cells are SQL NULLs; flags is the bit mask of docs/store.md;
// order_id is unsigned, as the traced program used it (FormatOrderId).
#ifndef TICKTRACE_VIEW_CSV_EXPORT_H_
#define TICKTRACE_VIEW_CSV_EXPORT_H_

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "viewer/export/export_common.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// The header row, without the line end.
inline constexpr char kCsvHeader[] =
    "run_id,order_id,stage,start_utc_ns,latency_ns,process_begin,process_end,cpu_begin,cpu_end,"
    "flags";

// Writes the samples of the orders `options` selects to `out`: with a limit,
// order by order in time order; without, every sample of the run by order ID.
absl::StatusOr<ExportResult> ExportCsv(store::StoreReader& store, const ExportOptions& options,
                                       std::ostream& out);

// `field` quoted for CSV when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& field);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_CSV_EXPORT_H_
