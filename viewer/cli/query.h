// The filters that summary, percentiles and top share (--run, --stage,
// --process, --since, --until, --include-flagged), resolved against a store.
#ifndef TICKTRACE_VIEW_QUERY_H_
#define TICKTRACE_VIEW_QUERY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ticktrace/store/rows.h"
#include "ticktrace/store/reader.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace::view {

// The flags that keep a sample out of the percentiles unless
// --include-flagged is given, as the collector does (collector/sinks/stage_stats.h):
// migrated and negative samples are untrustworthy and saturated ones only a
// lower bound; cross_core alone is counted but kept, since every hop between
// processes on different cores has it.
inline constexpr uint32_t kExcludedFlags = store::kFlagsExcludedByDefault;

// What the user asked for, before it is checked against the store.
struct QueryOptions {
  std::optional<int64_t> run_id;       // unset: the latest run
  std::optional<std::string> stage;    // one stage name, e.g. "md->strategy" or "total"
  std::optional<std::string> process;  // an OS pid or a process name
  std::optional<TimeArg> since;
  std::optional<TimeArg> until;
  // Whether flagged samples count in the percentiles; unset: as the
  // collector counted them for this run (stage_stats.include_flagged, else
  // runs.settings.include_flagged, else not).
  std::optional<bool> include_flagged;
  // Compute the statistics exactly from the order detail (nearest rank over
  // the stored samples) even where the interval histograms could answer.
  bool exact = false;
};

// The run's own include_flagged setting (see QueryOptions::include_flagged).
absl::StatusOr<bool> RunIncludesFlagged(store::StoreReader& store, const store::RunRow& run);

// QueryOptions checked against one run of a store.
struct ResolvedQuery {
  store::RunRow run;
  store::SampleFilter filter;
  // The statistics window of --since/--until: [since, until + 1), intervals
  // by their start (store::StoreReader::StageWindowStats); unset ends do not limit.
  store::TimeWindow window;
  // True when --process, --since or --until narrow the samples.
  bool narrows_samples = false;
  // True when --process is given: interval statistics do not know processes.
  bool narrows_processes = false;
  bool include_flagged = false;  // resolved
  bool include_flagged_given = false;  // by the user, not the run's setting
  bool run_includes_flagged = false;   // the run's own setting (its histograms hold these)
  // The filters in words for report headers, e.g. "process md, since ...".
  std::string description;
};

// Resolves `options` on `store`. NotFound for an unknown run, stage or
// process; InvalidArgument when --since is after --until.
absl::StatusOr<ResolvedQuery> ResolveQuery(store::StoreReader& store, const QueryOptions& options);

// What a view built from the stored interval histograms (intervals, diff)
// says when asked what those cannot answer: --process (`process_refusal`),
// --exact (`exact_refusal`), and flagged samples counted otherwise than the
// run's histograms hold them ("...; <view> cannot <verb> them otherwise").
struct HistogramViewWords {
  const char* process_refusal;
  const char* exact_refusal;
  const char* cannot;  // e.g. "intervals cannot show"
};

// ResolveQuery for such a view: InvalidArgument in its words for the above.
absl::StatusOr<ResolvedQuery> ResolveHistogramQuery(store::StoreReader& store,
                                                    const QueryOptions& options,
                                                    const HistogramViewWords& words);

// The run's stage names in pipeline order, `total` last: stage_stats.position
// where the collector wrote it, otherwise consecutive pairs of runs.pipeline,
// then any other stage (spans) by name.
absl::StatusOr<std::vector<std::string>> OrderedStages(store::StoreReader& store, const store::RunRow& run);

// True when a sample with `flags` counts in the percentiles.
inline bool InPercentiles(uint32_t flags, bool include_flagged) {
  return include_flagged || (flags & kExcludedFlags) == 0;
}

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_QUERY_H_
