// The collector: ties calibration, the drainer, the journal, the analysis and
// the store together (docs/design.md#the-collector-drain-journal-analyse-store). main() parses flags into
// CollectorOptions, calls ValidateOptions() (usage errors) and RunCollector().

#ifndef TICKTRACE_COLLECTOR_COLLECTOR_H_
#define TICKTRACE_COLLECTOR_COLLECTOR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "collector/app/options.h"
#include "collector/sinks/stage_stats.h"

namespace ticktrace::collect {

// What a run did, for tests and the bench.
struct RunSummary {
  int64_t run_id = 0;          // 0 without a store
  bool resumed = false;        // continued an unfinished run from its journal
  uint64_t records = 0;        // records analysed (drained, or read from the archive)
  double elapsed_s = 0;        // wall time of the drain/replay loop
  std::vector<std::pair<std::string, int64_t>> counters;
  std::vector<StageSummary> stages;
  std::vector<std::string> pipeline;
  bool pipeline_learned = false;
  uint64_t journal_syncs = 0;
  double journal_sync_mean_us = 0;
  double journal_sync_max_us = 0;
  uint64_t passes = 0;

  // The value of counter `name`, or 0.
  int64_t counter(std::string_view name) const;
  // The summary of stage `name`, or nullptr.
  const StageSummary* stage(std::string_view name) const;
};

// Runs the collector: live from shared memory until SIGINT/SIGTERM, *stop or
// the duration; or, with replay_path, from a raw archive to its end.
// REQUIRES: ValidateOptions(options).ok(). Errors are runtime errors (bad
// files, a store that is not ours, calibration failure) with context; nothing
// is created or overwritten when they happen before the run starts.
// Call from one thread; installs SIGINT/SIGTERM handlers for its duration
// when options.handle_signals.
absl::Status RunCollector(const CollectorOptions& options, RunSummary* summary = nullptr);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_COLLECTOR_H_
