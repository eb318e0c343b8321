// `ticktrace-view report`: one self-contained HTML file about one run — the
// run header with its loss counters, the per-stage breakdown, per-stage
// latency histograms and percentile plots, the slowest orders as waterfalls
// and the flag counts. Inline SVG and CSS only: no script, no font, no
// network, so the file opens the same anywhere (and in a test's headless
// browser). The numbers behind every plot come from report_model.h; this
// header is the entry point the command line uses.
#ifndef TICKTRACE_VIEW_REPORT_H_
#define TICKTRACE_VIEW_REPORT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "ticktrace/store/uri.h"
#include "viewer/hosts/stitched_views.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace::view {

// How many slowest orders the report draws unless --slowest says otherwise.
inline constexpr int64_t kDefaultReportSlowest = 5;

// What `ticktrace-view report` was asked for.
struct ReportRequest {
  store::StoreUri store_uri;                // the store (store::OpenReader; never written)
  std::string out_path;                     // the HTML file; "-" writes to stdout
  std::optional<int64_t> run_id;            // unset: the latest run
  int64_t slowest = kDefaultReportSlowest;  // waterfalls drawn; >= 1
  std::optional<TimeArg> since, until;      // --since/--until: only that window
  // The line saying what was written as one JSON object (docs/viewer.md,
  // "report --json") instead of text.
  bool json = false;
  // Replace `out_path` when it exists. Without it an existing file is an
  // error (AlreadyExists) and is left untouched.
  bool force = false;
  // --hosts: the report of the reference run plus its orders stitched across
  // hosts (stitched_views.h); its run_id is --run too.
  std::optional<CrossHostRequest> cross_host;
};

// Builds the report of `request` and writes it to request.out_path (beside
// it first, renamed into place, so a failure leaves no half file); one line
// saying what was written goes to `log`. Errors name the path: NotFound for
// a missing store or run, AlreadyExists for an existing --out without
// --force, InvalidArgument for an --out that is the store.
// Call from one thread; the store is opened for the call only.
absl::Status WriteHtmlReport(const ReportRequest& request, std::ostream& log);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_REPORT_H_
