// How a live run starts: the checks that can refuse it before anything is
// created, and whether it is new or resumes an unfinished run from its
// journal (docs/collector.md, "Checkpoints and restart"). collector.cc's
// RunLive() follows the plan, then wires the stages.

#ifndef TICKTRACE_COLLECTOR_RUN_PLAN_H_
#define TICKTRACE_COLLECTOR_RUN_PLAN_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/app/options.h"
#include "collector/app/run_info.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

struct RunPlan {
  // The journal and checkpoint sit beside a SQLite store; for ClickHouse in
  // the current directory, named after the store and session (store::LocalStatePath, open.h).
  std::string local_state;
  std::string journal_path;  // empty: no journal (no store, or --no-journal)
  // Set: the journal holds an unfinished run of this session, to resume.
  std::optional<RunInfo> resume_info;
  int64_t resume_run = 0;

  bool journaled() const { return !journal_path.empty(); }
  bool resuming() const { return resume_info.has_value(); }
};

// Everything that can refuse the run before anything is created (an existing
// store that is not ours, --raw that exists or cannot be created, symlinks
// where our files go, a journal of another session or unreadable), and the
// journal's verdict. May remove a journal that a collector left while
// creating it (it holds no record), saying so on `out`.
absl::StatusOr<RunPlan> PlanLiveRun(const CollectorOptions& o, std::ostream& out);

// After the store is open: a journal whose run the store ended is stale
// (removed), one whose run the store does not have is moved aside (said on
// `out`); either way the run is new. For a resume, `state` gets the store's
// view of the run (its counters say what the store holds).
absl::Status SettlePlanWithStore(store::Writer* store, RunPlan* plan, store::RunState* state,
                                 std::ostream& out);

// The first chunk of an archive or journal if it is a run info chunk;
// nullopt when the first chunk is something else or absent. `own`: the
// collector's own journal, which must be ours (private_file.h,
// OpenOwnFileForReading); else an archive the user names. Neither is ever
// waited on (a FIFO at the path is refused, not opened for ever).
absl::StatusOr<std::optional<RunInfo>> ReadLeadingRunInfo(const std::string& path, bool own);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_RUN_PLAN_H_
