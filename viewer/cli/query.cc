#include "viewer/cli/query.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "viewer/format/format_units.h"
#include "common/status_macros.h"

namespace ticktrace::view {

absl::StatusOr<std::vector<std::string>> OrderedStages(store::StoreReader& store, const store::RunRow& run) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<std::string> names, store.StageNames(run.run_id));
  std::set<std::string> remaining(names.begin(), names.end());
  std::vector<std::string> ordered;
  const auto take = [&](const std::string& stage) {
    if (stage != store::kTotalStage && remaining.erase(stage) > 0) ordered.push_back(stage);
  };
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StageStatsRow> stats, store.StageStats(run.run_id));
  for (const store::StageStatsRow& row : stats) take(row.stage);
  const std::vector<std::string> tags =
      absl::StrSplit(run.pipeline, ',', absl::SkipWhitespace());
  for (size_t i = 0; i + 1 < tags.size(); ++i) take(absl::StrCat(tags[i], "->", tags[i + 1]));
  std::vector<std::string> rest(remaining.begin(), remaining.end());  // sorted by name
  for (const std::string& stage : rest) take(stage);
  if (remaining.count(std::string(store::kTotalStage)) > 0) ordered.emplace_back(store::kTotalStage);
  return ordered;
}

absl::StatusOr<bool> RunIncludesFlagged(store::StoreReader& store, const store::RunRow& run) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StageStatsRow> stats, store.StageStats(run.run_id));
  if (!stats.empty()) return stats.front().include_flagged;
  const nlohmann::json settings = nlohmann::json::parse(run.settings, nullptr,
                                                        /*allow_exceptions=*/false);
  if (settings.is_object() && settings.contains("include_flagged") &&
      settings["include_flagged"].is_boolean()) {
    return settings["include_flagged"].get<bool>();
  }
  return false;
}

absl::StatusOr<ResolvedQuery> ResolveQuery(store::StoreReader& store, const QueryOptions& options) {
  ResolvedQuery q;
  TICKTRACE_ASSIGN_OR_RETURN(q.run, store.GetRun(options.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(q.run_includes_flagged, RunIncludesFlagged(store, q.run));
  q.include_flagged = options.include_flagged.value_or(q.run_includes_flagged);
  q.include_flagged_given = options.include_flagged.has_value();
  std::vector<std::string> words;

  if (options.stage.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<std::string> stages, OrderedStages(store, q.run));
    if (std::find(stages.begin(), stages.end(), *options.stage) == stages.end()) {
      return absl::NotFoundError(absl::StrCat(
          "stage '", *options.stage, "' not found in run ", q.run.run_id, " (stages: ",
          stages.empty() ? "none" : absl::StrJoin(stages, ", "), ")"));
    }
    q.filter.stage = *options.stage;
    words.push_back(absl::StrCat("stage ", *options.stage));
  }

  if (options.process.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::ProcessRow> processes, store.Processes(q.run.run_id));
    int64_t pid = 0;
    const bool numeric = absl::SimpleAtoi(*options.process, &pid);
    std::vector<std::string> known;
    for (const store::ProcessRow& p : processes) {
      if ((numeric && p.pid == pid) || p.name == *options.process) {
        q.filter.process_ids.push_back(p.process_id);
      }
      known.push_back(absl::StrCat(p.name, "[", p.pid, "]"));
    }
    if (q.filter.process_ids.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "process '", *options.process, "' not found in run ", q.run.run_id, " (processes: ",
          known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    q.narrows_samples = true;
    q.narrows_processes = true;
    // Names come from the kernel's 15-character comm, so several processes
    // may share one: say so rather than pick one.
    words.push_back(absl::StrCat(
        "process ", *options.process,
        q.filter.process_ids.size() > 1
            ? absl::StrCat(" (", q.filter.process_ids.size(), " processes match)")
            : ""));
  }

  if (options.since.has_value() || options.until.has_value()) {
    // Relative times count from the data, not from runs.started/ended_utc_ns:
    // a replayed run's row carries the replay's wall-clock times.
    TICKTRACE_ASSIGN_OR_RETURN(auto span, store.SampleSpanUtcNs(q.run.run_id));
    const int64_t first_utc_ns = span.has_value() ? span->first : q.run.started_utc_ns;
    const int64_t last_utc_ns =
        span.has_value() ? span->second : q.run.ended_utc_ns.value_or(q.run.started_utc_ns);
    if (options.since.has_value()) {
      q.filter.since_utc_ns = ResolveTimeArg(*options.since, first_utc_ns, last_utc_ns);
      words.push_back(absl::StrCat("since ", FormatUtcNs(*q.filter.since_utc_ns)));
    }
    if (options.until.has_value()) {
      q.filter.until_utc_ns = ResolveTimeArg(*options.until, first_utc_ns, last_utc_ns);
      words.push_back(absl::StrCat("until ", FormatUtcNs(*q.filter.until_utc_ns)));
    }
    if (q.filter.since_utc_ns.has_value() && q.filter.until_utc_ns.has_value() &&
        *q.filter.since_utc_ns > *q.filter.until_utc_ns) {
      return absl::InvalidArgumentError(
          absl::StrCat("--since ", FormatUtcNs(*q.filter.since_utc_ns), " is after --until ",
                       FormatUtcNs(*q.filter.until_utc_ns)));
    }
    q.narrows_samples = true;
    // --until is inclusive on whole ns: the half-open window ends 1 ns later.
    q.window.since_utc_ns = q.filter.since_utc_ns;
    if (q.filter.until_utc_ns.has_value() &&
        *q.filter.until_utc_ns < std::numeric_limits<int64_t>::max()) {
      q.window.until_utc_ns = *q.filter.until_utc_ns + 1;
    }
  }
  if (options.include_flagged.has_value()) {
    words.push_back(*options.include_flagged ? "--include-flagged" : "--exclude-flagged");
  }
  q.description = absl::StrJoin(words, ", ");
  return q;
}

absl::StatusOr<ResolvedQuery> ResolveHistogramQuery(store::StoreReader& store,
                                                    const QueryOptions& options,
                                                    const HistogramViewWords& words) {
  if (options.process.has_value()) return absl::InvalidArgumentError(words.process_refusal);
  if (options.exact) return absl::InvalidArgumentError(words.exact_refusal);
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveQuery(store, options));
  if (q.include_flagged != q.run_includes_flagged) {
    return absl::InvalidArgumentError(absl::StrCat("run ", q.run.run_id, "'s interval histograms ",
                                                   q.run_includes_flagged ? "include" : "exclude",
                                                   " flagged samples, as its collector did; ",
                                                   words.cannot, " them otherwise"));
  }
  return q;
}

}  // namespace ticktrace::view
