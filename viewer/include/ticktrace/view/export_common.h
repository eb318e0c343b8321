// What the exports (chrome_export.h, csv_export.h) share: their options,
// their result, and writing the output file without touching the store.
#ifndef TICKTRACE_VIEW_EXPORT_COMMON_H_
#define TICKTRACE_VIEW_EXPORT_COMMON_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace ticktrace::view {

// Which orders an export holds.
struct ExportOptions {
  std::optional<int64_t> run_id;  // unset: the latest run
  std::optional<int64_t> limit;   // the first N orders by first stamp; unset: all
};

// What an export wrote.
struct ExportResult {
  int64_t run_id = 0;
  int64_t orders = 0;  // orders exported
  int64_t stamps = 0;  // chrome: stamp and span events
  int64_t rows = 0;    // csv: sample rows (without the header)
};

// Runs `write` on a stream for `out_path` ("-" is stdout). A file is written
// beside its final name and renamed into place when `write` succeeds, so a
// failed export leaves no half file. InvalidArgument when `out_path` is the
// store itself (`store_path`).
absl::Status WriteOutput(const std::string& out_path, const std::string& store_path,
                         const std::function<absl::Status(std::ostream&)>& write);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_EXPORT_COMMON_H_
