// `ticktrace-view export --format hlog`: a run's interval statistics as an
// HdrHistogram interval log, which HdrHistogram's own tools read
// (HistogramLogReader in Java, C, Go, Python and JavaScript;
// HistogramLogProcessor; HdrHistogram's plotters).
//
// Layout (HdrHistogram's log format 1.3):
//   #[Histogram log format version 1.3]
//   #[ticktrace ...]                       what the file holds, in comments
//   #[StartTime: <run start, s since the epoch> (seconds since epoch), <UTC>]
//   #[BaseTime: <the same> (seconds since epoch)]
//   "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//   Tag=<stage>,<start s after BaseTime>,<interval s>,<max ms>,<base64 V2 histogram>
//   ...                                    one line per stage per interval, by time
//
// Values are latencies in ns (integers; Interval_Max is in ms, HdrHistogram's
// usual unit ratio of 10^6 for ns values). Each line is one interval of the
// store (runs.interval_ns) of one stage: the samples the stage's percentiles
// count (flagged ones as the collector counted them for the run). Each
// store bucket goes into the HdrHistogram bucket of its value (its midpoint,
// clamped to the exact min and max), with 3 significant digits: a
// percentile read back is within the store's 0.4% plus HdrHistogram's 0.1%.
// HdrHistogram holds no negative values: negative latencies (cross-core
// differences) are counted at 0, and a comment at the end says how many.
#ifndef TICKTRACE_VIEW_HLOG_EXPORT_H_
#define TICKTRACE_VIEW_HLOG_EXPORT_H_

#include <ostream>

#include "absl/status/statusor.h"
#include "viewer/export/export_common.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// Writes the interval log of the run `options` selects (its window when
// set; `limit` does not apply) to `out`. result.rows: the interval lines.
absl::StatusOr<ExportResult> ExportHlog(store::StoreReader& store, const ExportOptions& options,
                                        std::ostream& out);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_HLOG_EXPORT_H_
