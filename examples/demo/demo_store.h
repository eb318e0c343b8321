// What the demo reads from the ticktrace store (schema: docs/store.md), with
// the SQLite C API, read-only. Cold path; main thread.

#ifndef TICKTRACE_EXAMPLES_DEMO_DEMO_STORE_H_
#define TICKTRACE_EXAMPLES_DEMO_DEMO_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::examples {

enum class StoreFileKind {
  kAbsent,          // no file: the collector creates a store
  kTicktraceStore,  // meta.app = 'ticktrace': the collector appends a run
  kOther,           // anything else: refused, left untouched
};

// Says what `path` is, without writing to it. `why` explains kOther.
StoreFileKind ClassifyStoreFile(const std::string& path, std::string* why);

struct DemoRunFigures {
  store::RunRow run;
  std::vector<store::StageStatsRow> stages;  // pipeline order, 'total' last
  std::map<std::string, int64_t> counters;  // name -> value
};

// The latest run of `session` in `store`, or nullopt when there is none yet
// (also when the file or its tables do not exist yet: the collector may
// still be creating them).
absl::StatusOr<std::optional<store::RunRow>> FindRun(const store::StoreUri& store,
                                                     const std::string& session);

// Everything the demo prints about run `run_id`.
absl::StatusOr<DemoRunFigures> ReadRunSummary(const store::StoreUri& store, int64_t run_id);

// The id of run `run_id`'s order with the largest total, or 0 when none.
absl::StatusOr<uint64_t> SlowestOrder(const store::StoreUri& store, int64_t run_id);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_DEMO_DEMO_STORE_H_
