// `ticktrace-view runs`: every run in a store with its time span, host,
// calibration, pipeline, processes and counters.
#ifndef TICKTRACE_VIEW_RUNS_REPORT_H_
#define TICKTRACE_VIEW_RUNS_REPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// One block of text per run, oldest first.
absl::StatusOr<std::string> RenderRuns(store::StoreReader& store);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_RUNS_REPORT_H_
