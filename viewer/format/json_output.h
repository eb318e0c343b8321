// The --json forms of the subcommands whose text lives elsewhere: orders
// (waterfall.h), order (timeline.h), percentiles (percentile_report.h),
// runs (runs_report.h), and the one-line results of export and report.
// Every shape is documented in docs/viewer.md ("JSON contract"); fields are
// only ever added. Latencies are JSON numbers in ns, order ids unsigned
// decimal strings (a JSON number is a double in JavaScript), times UTC ns
// since the epoch as integers; `null` where the text prints "-".
#ifndef TICKTRACE_VIEW_JSON_OUTPUT_H_
#define TICKTRACE_VIEW_JSON_OUTPUT_H_

#include <string>

#include "absl/status/statusor.h"
#include "viewer/export/export_common.h"
#include "viewer/views/percentile_report.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/timeline.h"
#include "viewer/views/waterfall.h"

namespace ticktrace::view {

// orders --json: {"run", "stage", "orders": [{"order_id", "latency_ns", ...,
// "samples": [...]}]}.
std::string RenderSlowestJson(const SlowestReport& report);

// order --json: {"run", "chain": [...], "children": [...], "stamps": [...]}.
std::string RenderTimelineJson(const Timeline& timeline);

// percentiles --json: {"run", "stage", "count", "excluded", "lines":
// [{"value_ns", "percentile", "total_count"}], "mean_ns", "max_ns"}.
std::string RenderPercentilesJson(const StageValues& values, const std::string& stage);

// runs --json: {"store", "schema", "runs": [...]} with each run's counters.
absl::StatusOr<std::string> RenderRunsJson(store::StoreReader& store);

// export --json: {"run", "format", "out", "orders", "stamps", "rows"}.
std::string RenderExportJson(const ExportResult& result, const std::string& format,
                             const std::string& out_path);

// A compact (one-line) form of a JSON document from one of the renderers,
// for `top --json` (one object per frame and line).
std::string CompactJson(const std::string& json);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_JSON_OUTPUT_H_
