// `ticktrace-view top`: the summary of a store that a collector is writing,
// redrawn every interval until SIGINT/SIGTERM (Ctrl-C) or, for tests, a
// fixed number of iterations.
#ifndef TICKTRACE_VIEW_TOP_H_
#define TICKTRACE_VIEW_TOP_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "ticktrace/store/uri.h"
#include "viewer/cli/query.h"

namespace ticktrace::view {

struct TopOptions {
  QueryOptions query;  // run unset: follow the latest run as new ones start
  int64_t iterations = 0;       // 0: until a signal
  int64_t interval_ms = 1000;
  bool clear_screen = false;    // redraw in place (a terminal) or append
  // Each frame one line of JSON (docs/viewer.md, "top --json") instead of
  // the text; never clears the screen.
  bool json = false;
};

// Runs the loop on the store `store_uri` names (store::OpenReader), writing to `out`. Installs
// handlers for SIGINT and SIGTERM while it runs (restoring the previous ones
// after) and returns OK when one of them stops it. Call from the main
// thread only.
absl::Status RunTop(const store::StoreUri& store_uri, const TopOptions& options, std::ostream& out);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_TOP_H_
