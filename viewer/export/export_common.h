// What the exports (chrome_export.h, csv_export.h, hlog_export.h) and the
// report share: their options, their result, and writing the output file
// without touching the store or anything already there.
#ifndef TICKTRACE_VIEW_EXPORT_COMMON_H_
#define TICKTRACE_VIEW_EXPORT_COMMON_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::view {

// Which orders (or intervals) an export holds.
struct ExportOptions {
  std::optional<int64_t> run_id;  // unset: the latest run
  std::optional<int64_t> limit;   // the first N orders by first stamp; unset: all
  // --since/--until: hlog, the intervals that start in it; chrome and csv,
  // the orders whose first stamp is in it (before --limit).
  store::TimeWindow window;
  // Narrower selections (chrome, csv, otlp), applied before --limit:
  std::optional<int64_t> slowest;   // the N slowest orders by 'total' (FindSlowest's ranking)
  bool flagged = false;             // only orders with a sample flag in excluded_flags
  uint32_t excluded_flags = 0;      // the flags the run's percentiles leave out
  std::optional<int64_t> order_id;  // every instance of this one order
};

// The orders a chrome, csv or otlp export holds: the run's orders by first
// stamp (then order_id, instance) whose first stamp is in options.window, the
// first options.limit of them when set. With options.order_id, that order's
// instances; with options.slowest, the N slowest orders (slowest first, each
// with all its instances); with options.flagged, only orders with a sample
// flag in options.excluded_flags.
absl::StatusOr<std::vector<store::OrderRow>> OrdersToExport(store::StoreReader& store, int64_t run_id,
                                                     const ExportOptions& options);

// What an export wrote.
struct ExportResult {
  int64_t run_id = 0;
  int64_t orders = 0;  // orders exported
  int64_t stamps = 0;  // chrome: stamp and span events
  int64_t links = 0;   // chrome: parent -> linked child flows
  int64_t rows = 0;    // csv: sample rows (without the header); hlog: interval lines
  int64_t spans = 0;    // otlp: spans (a root per order and one per sample)
  int64_t batches = 0;  // otlp to an endpoint: bodies POSTed
  int64_t retries = 0;  // otlp to an endpoint: requests sent again
};

// Runs `write` on a stream for `out_path` ("-" is stdout). A file is written
// beside its final name (created afresh, never through a symlink) and
// renamed into place when `write` succeeds, so a failed export leaves no
// half file. An `out_path` that exists as a file of any mode, a directory or
// a symlink (dangling or not) is AlreadyExists, checked before `write` runs
// and again, atomically, at the rename, unless `force`: then a file or
// symlink is replaced (the link itself, never its target). A node that is
// not a file is never replaced, --force or not (docs/viewer.md): a
// character device (/dev/null, a terminal; also through a symlink, as
// /dev/stdout) is written in place; a FIFO, socket or block device is
// FailedPrecondition. InvalidArgument when `out_path` is the store itself
// (`store_path`).
absl::Status WriteOutput(const std::string& out_path, const std::string& store_path,
                         const std::function<absl::Status(std::ostream&)>& write,
                         bool force = false);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_EXPORT_COMMON_H_
