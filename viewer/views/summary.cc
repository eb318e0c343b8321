#include "viewer/views/summary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "viewer/format/format_units.h"
#include "viewer/format/json_optional.h"
#include "viewer/format/text_table.h"
#include "viewer/views/losses_view.h"
#include "viewer/views/flag_words.h"
#include "viewer/views/run_notes_text.h"
#include "common/status_macros.h"
#include "ticktrace/store/names.h"

namespace ticktrace::view {
namespace {

// The counters the header names; every other non-zero counter is listed
// after them, so that nothing is lost silently.
constexpr const char* kHeaderCounters[] = {"drained", "dropped", "malformed", "orders_complete",
                                           "orders_incomplete"};
// Also always in the JSON counters (0 when the collector did not write them).
constexpr const char* kJsonCounters[] = {"late_records", "orders_late"};

// The verdict of each stage (stats.h, ConfidenceReasons).
void SetConfidence(Summary* summary) {
  for (SummaryStage& s : summary->stages) {
    s.core_unknown = CounterValue(*summary, "core_unknown:" + s.stage);
    ConfidenceInputs in;
    in.count = s.stats.count;
    in.samples_all = std::max(s.samples_all, s.stats.count);
    // Doubtful: kept out of the percentiles, or within the cores' skew, or late.
    in.flagged = std::min(in.samples_all, (in.samples_all - s.stats.count) + s.skew + s.late);
    if (summary->include_flagged) {
      in.flagged = std::min(in.samples_all,
                            s.migrated + s.negative + s.out_of_order + s.skew + s.late);
    }
    in.cross_core = s.cross_core;
    in.core_unknown = s.core_unknown;
    in.p50_ns = s.stats.p50_ns;
    in.uncertainty_ns = s.uncertainty_ns;
    in.tsc_step_ns = summary->run.tsc_step_ns;
    // Interval statistics count every order whatever the detail keeps.
    in.detail_sampled = summary->detail_sampled && !summary->from_intervals;
    in.records_lost_share = store::ComputeRecordLoss(summary->counters).LostShare();
    s.confidence = ConfidenceReasons(in);
  }
}

// "1.23us ±80 ns" for a cross-core stage with a measured uncertainty.
std::string P50Text(const SummaryStage& s) {
  std::string p50 = FormatDurationNs(s.stats.p50_ns);
  if (s.cross_core > 0 && s.uncertainty_ns > 0) {
    absl::StrAppendFormat(&p50, " \u00b1%.0fns", s.uncertainty_ns);
  }
  return p50;
}

// Names each stage's other clocks (stamp_at's), from the store's stage_clocks.
// Samples do not keep their uncertainty: a stage computed from samples takes
// the run's largest (stage_stats), an upper bound for any window of it.
absl::Status AttachClocks(store::StoreReader& store, int64_t run_id, Summary* summary) {
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StageClockRow> clocks, store.StageClocks(run_id));
  if (clocks.empty()) return absl::OkStatus();
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::StageStatsRow> whole, store.StageStats(run_id));
  for (SummaryStage& s : summary->stages) {
    for (const store::StageClockRow& c : clocks) {
      if (c.stage == s.stage) s.clocks.push_back(c);
    }
    if (s.clocks.empty() || s.uncertainty_ns > 0) continue;
    for (const store::StageStatsRow& w : whole) {
      if (w.stage == s.stage && w.uncertainty_ns.has_value()) s.uncertainty_ns = *w.uncertainty_ns;
    }
  }
  return absl::OkStatus();
}

SummaryStage FromWindowRow(const store::WindowStageStatsRow& row) {
  SummaryStage s;
  s.stage = row.stage;
  s.stats.count = row.count;
  s.stats.min_ns = row.min_ns;
  s.stats.max_ns = row.max_ns;
  s.stats.mean_ns = row.mean_ns;
  s.stats.p50_ns = row.p50_ns;
  s.stats.p90_ns = row.p90_ns;
  s.stats.p99_ns = row.p99_ns;
  s.stats.p999_ns = row.p999_ns;
  s.migrated = row.flag_count(store::kFlagMigrated);
  s.negative = row.flag_count(store::kFlagNegative);
  s.cross_core = row.flag_count(store::kFlagCrossCore);
  s.skew = row.flag_count(store::kFlagSkew);
  s.out_of_order = row.flag_count(store::kFlagOutOfOrder);
  s.late = row.flag_count(store::kFlagLate);
  s.samples_all = row.samples_all.value_or(row.count);
  s.uncertainty_ns = row.uncertainty_ns.value_or(0);
  return s;
}

}  // namespace

int64_t CounterValue(const Summary& summary, const std::string& name) {
  const auto it = summary.counters.find(name);
  return it == summary.counters.end() ? 0 : it->second;
}

absl::StatusOr<Summary> BuildSummary(store::StoreReader& store, const QueryOptions& options) {
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveQuery(store, options));
  Summary summary;
  summary.run = q.run;
  summary.include_flagged = q.include_flagged;
  summary.filters = q.description;
  TICKTRACE_ASSIGN_OR_RETURN(summary.counters, store.Counters(q.run.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(summary.notes, store.Notes(q.run.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(summary.cores, store.Cores(q.run.run_id));
  TICKTRACE_ASSIGN_OR_RETURN(summary.detail, store.DetailCompleteness(q.run.run_id, q.window));
  summary.detail_sampled = !summary.detail.complete();

  // The interval histograms hold the samples the run's include_flagged
  // rule kept, per interval: they answer any window, but know no process.
  if (!q.narrows_processes && !options.exact && q.include_flagged == q.run_includes_flagged) {
    summary.from_intervals = true;
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<store::WindowStageStatsRow> rows,
                               store.StageWindowStats(q.run.run_id, q.window));
    for (const store::WindowStageStatsRow& row : rows) {
      if (q.filter.stage.has_value() && row.stage != *q.filter.stage) continue;
      summary.stages.push_back(FromWindowRow(row));
    }
    TICKTRACE_RETURN_IF_ERROR(AttachClocks(store, q.run.run_id, &summary));
    SetConfidence(&summary);
    return summary;
  }
  // A sample's uncertainty: the sum of its two cores' bounds (latest measurement).
  std::map<int64_t, double> bound_by_cpu;
  for (const store::CoreRow& c : summary.cores) {
    if (c.consistent) bound_by_cpu[c.cpu] = c.bound_ns;
  }

  // Computed from samples: exact percentiles of the sorted values.
  struct Accumulator {
    std::vector<double> values_ns;
    SummaryStage summary;
  };
  std::unordered_map<std::string, Accumulator> by_stage;
  int64_t read = 0;
  TICKTRACE_RETURN_IF_ERROR(store.ForEachSample(
      q.run.run_id, q.filter, /*ordered=*/false, [&](const store::SampleRow& sample) {
        ++read;
        Accumulator& acc = by_stage[sample.stage];
        if (sample.flags & store::kFlagMigrated) ++acc.summary.migrated;
        if (sample.flags & store::kFlagNegative) ++acc.summary.negative;
        if (sample.flags & store::kFlagCrossCore) {
          ++acc.summary.cross_core;
          const auto a = sample.cpu_begin ? bound_by_cpu.find(*sample.cpu_begin)
                                          : bound_by_cpu.end();
          const auto b = sample.cpu_end ? bound_by_cpu.find(*sample.cpu_end) : bound_by_cpu.end();
          if (a != bound_by_cpu.end() && b != bound_by_cpu.end()) {
            acc.summary.uncertainty_ns =
                std::max(acc.summary.uncertainty_ns, a->second + b->second);
          }
        }
        if (sample.flags & store::kFlagSkew) ++acc.summary.skew;
        if (sample.flags & store::kFlagOutOfOrder) ++acc.summary.out_of_order;
        if (sample.flags & store::kFlagLate) ++acc.summary.late;
        ++acc.summary.samples_all;
        if (InPercentiles(sample.flags, q.include_flagged)) {
          acc.values_ns.push_back(sample.latency_ns);
        }
      }));
  summary.samples_read = read;
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<std::string> order, OrderedStages(store, q.run));
  for (const std::string& stage : order) {
    if (q.filter.stage.has_value() && stage != *q.filter.stage) continue;
    auto it = by_stage.find(stage);
    SummaryStage row;
    if (it != by_stage.end()) {
      row = std::move(it->second.summary);
      row.stats = ComputeLatencyStats(it->second.values_ns);
    }
    row.stage = stage;
    summary.stages.push_back(std::move(row));
  }
  TICKTRACE_RETURN_IF_ERROR(AttachClocks(store, q.run.run_id, &summary));
  SetConfidence(&summary);
  return summary;
}

namespace {

// The run: its id, host and time, calibration, core offsets, UTC drift.
std::string RunLinesText(const Summary& summary) {
  const store::RunRow& run = summary.run;
  std::string out = absl::StrCat("run ", run.run_id, "  session ", run.session, "  host ",
                                 run.host, "  ", FormatUtcNs(run.started_utc_ns), " .. ");
  if (run.ended_utc_ns.has_value()) {
    absl::StrAppend(&out, FormatUtcNs(*run.ended_utc_ns), " (",
                    FormatDurationNs(static_cast<double>(*run.ended_utc_ns - run.started_utc_ns)),
                    ")\n");
  } else {
    absl::StrAppend(&out, "running\n");
  }
  absl::StrAppend(&out, "calibration: ", FormatHz(run.tsc_hz), " (", run.calibration_source, ")",
                  ", spread ",
                  run.spread_ppm.has_value() ? absl::StrFormat("%.2f ppm", *run.spread_ppm) : "-",
                  ", TSC step ", FormatDurationNs(run.tsc_step_ns), "\n");
  if (!summary.cores.empty()) {
    std::vector<std::string> cores;
    for (const store::CoreRow& c : summary.cores) {
      cores.push_back(absl::StrFormat("cpu %d %+.0f \u00b1%.0f ns%s", c.cpu, c.offset_ns,
                                      c.bound_ns, c.consistent ? "" : " (inconsistent)"));
    }
    absl::StrAppend(&out, "core offsets: ", absl::StrJoin(cores, ", "),
                    " (a cross-core stage is uncertain by its two cores' bounds)\n");
  }
  if (run.utc_drift_ppm.has_value()) {
    absl::StrAppend(&out, absl::StrFormat("UTC: re-anchored; CLOCK_REALTIME drifted %+.2f ppm "
                                          "from the TSC over the run\n",
                                          *run.utc_drift_ppm));
  }
  return out;
}

// The counters the header always shows, then any other that is not zero.
std::string CounterLinesText(const Summary& summary) {
  std::string out;
  absl::StrAppend(&out, "counters: drained ", CounterValue(summary, "drained"), ", dropped ",
                  CounterValue(summary, "dropped"), ", malformed ",
                  CounterValue(summary, "malformed"), ", orders complete ",
                  CounterValue(summary, "orders_complete"), ", incomplete ",
                  CounterValue(summary, "orders_incomplete"), "\n");
  std::vector<std::string> others;
  for (const auto& [name, value] : summary.counters) {
    if (value == 0 || std::find(std::begin(kHeaderCounters), std::end(kHeaderCounters), name) !=
                          std::end(kHeaderCounters)) {
      continue;
    }
    others.push_back(absl::StrCat(name, " ", value));
  }
  if (!others.empty()) absl::StrAppend(&out, "other counters: ", absl::StrJoin(others, ", "), "\n");
  return out;
}

// How the statistics were made, and whether detail is sampled.
std::string StatisticsLinesText(const Summary& summary) {
  std::string out;
  const std::string flagged = FlagRuleWords(summary.include_flagged);
  if (summary.from_intervals) {
    absl::StrAppend(&out, "statistics: interval histograms merged over ",
                    summary.filters.empty() ? "the whole run" : summary.filters, " (", flagged,
                    ")\n");
  } else {
    absl::StrAppend(&out, "statistics: exact, from ", summary.samples_read, " samples",
                    summary.filters.empty() ? "" : absl::StrCat(" (", summary.filters, ")"),
                    "; ", flagged, "\n");
    // A live collector under pressure keeps statistics but may not store
    // every sample (docs/store.md): statistics from samples then miss some.
    if (const int64_t lost = CounterValue(summary, "samples_not_stored"); lost > 0) {
      absl::StrAppend(&out, "warning: ", lost,
                      " samples were not stored; statistics computed from samples miss them\n");
    }
  }
  if (summary.detail_sampled) {
    const store::DetailCoverage& d = summary.detail;
    absl::StrAppend(&out, "detail sampled: ", d.orders_kept, " of ", d.orders,
                    " orders have detail (--detail ", d.policy, ")",
                    d.intervals_deleted > 0
                        ? absl::StrCat(", retention deleted the detail of ", d.intervals_deleted,
                                       " intervals")
                        : "",
                    summary.from_intervals
                        ? "; statistics count every order, slowest orders and timelines "
                          "only those kept\n"
                        : "; statistics from samples miss the others\n");
  }
  return out;
}

// A stage's other clocks as JSON: [{"side": "begin", "clock": "realtime"}].
nlohmann::ordered_json ClocksJson(const SummaryStage& s) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const store::StageClockRow& c : s.clocks) {
    out.push_back({{"side", c.side}, {"clock", c.clock}});
  }
  return out;
}

}  // namespace

// The stages with an end read by another clock: which end (its tag when the
// stage is "a->b"), which clock, and how far the stage may be off; empty
// when there is none.
std::string OtherClocksLine(const Summary& summary) {
  std::vector<std::string> stages;
  for (const SummaryStage& s : summary.stages) {
    if (s.clocks.empty()) continue;
    const auto tags = store::TransitionTags(s.stage);
    std::vector<std::string> ends;
    for (const store::StageClockRow& c : s.clocks) {
      const std::string_view end =
          !tags.has_value() ? c.side : (c.side == "begin" ? tags->first : tags->second);
      ends.push_back(absl::StrCat(absl::string_view(end.data(), end.size()), " by ", c.clock));
    }
    const std::string bound =
        s.uncertainty_ns > 0
            ? absl::StrCat("uncertain by up to ", FormatDurationNs(s.uncertainty_ns))
            : "uncertainty unknown";
    stages.push_back(absl::StrCat(s.stage, " (", absl::StrJoin(ends, ", "), "; ", bound, ")"));
  }
  if (stages.empty()) return "";
  return absl::StrCat("other clocks (flagged external, placed on the TSC timeline through the UTC "
                      "anchors): ",
                      absl::StrJoin(stages, "; "));
}

std::string RenderSummaryText(const Summary& summary) {
  std::string out = RecordsLostLine(store::ComputeRecordLoss(summary.counters));
  out += RunLinesText(summary);
  out += RunNotesText(summary.notes);
  out += CounterLinesText(summary);
  out += StatisticsLinesText(summary);
  out += "\n";

  internal::TextTable table({"stage", "count", "min", "p50", "p90", "p99", "p99.9", "max", "mean",
                             "migrated", "negative", "cross_core", "skew", "out_of_order",
                             "late", "confidence"});
  for (const SummaryStage& s : summary.stages) {
    table.AddRow({s.stage, absl::StrCat(s.stats.count), FormatDurationNs(s.stats.min_ns),
                  P50Text(s), FormatDurationNs(s.stats.p90_ns),
                  FormatDurationNs(s.stats.p99_ns), FormatDurationNs(s.stats.p999_ns),
                  FormatDurationNs(s.stats.max_ns), FormatDurationNs(s.stats.mean_ns),
                  absl::StrCat(s.migrated), absl::StrCat(s.negative), absl::StrCat(s.cross_core),
                  absl::StrCat(s.skew), absl::StrCat(s.out_of_order), absl::StrCat(s.late),
                  s.confidence.empty() ? "ok" : absl::StrJoin(s.confidence, "; ")});
  }
  out += table.Render();
  if (summary.stages.empty()) out += "(no samples)\n";
  if (std::string clocks = OtherClocksLine(summary); !clocks.empty()) {
    absl::StrAppend(&out, clocks, "\n");
  }
  return out;
}

std::string RenderSummaryJson(const Summary& summary) {
  nlohmann::ordered_json j;
  j["records_lost"] = RecordsLostJson(store::ComputeRecordLoss(summary.counters));
  j["run"] = summary.run.run_id;
  j["calibration"] = {{"tsc_hz", summary.run.tsc_hz},
                      {"source", summary.run.calibration_source},
                      {"spread_ppm", OptionalJson(summary.run.spread_ppm)},
                      {"step_ns", OptionalJson(summary.run.tsc_step_ns)},
                      {"utc_drift_ppm", OptionalJson(summary.run.utc_drift_ppm)}};
  nlohmann::ordered_json cores = nlohmann::ordered_json::array();
  for (const store::CoreRow& c : summary.cores) {
    cores.push_back({{"cpu", c.cpu}, {"offset_ns", c.offset_ns}, {"bound_ns", c.bound_ns}});
  }
  j["calibration"]["cores"] = std::move(cores);
  nlohmann::ordered_json counters = nlohmann::ordered_json::object();
  for (const char* name : kHeaderCounters) counters[name] = CounterValue(summary, name);
  for (const char* name : kJsonCounters) counters[name] = CounterValue(summary, name);
  for (const auto& [name, value] : summary.counters) counters[name] = value;  // every counter
  j["counters"] = std::move(counters);
  j["notes"] = RunNotesJson(summary.notes);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const SummaryStage& s : summary.stages) {
    stages.push_back(
        {{"stage", s.stage},
         {"count", s.stats.count},
         {"min_ns", OptionalJson(s.stats.min_ns)},
         {"p50_ns", OptionalJson(s.stats.p50_ns)},
         {"p90_ns", OptionalJson(s.stats.p90_ns)},
         {"p99_ns", OptionalJson(s.stats.p99_ns)},
         {"p999_ns", OptionalJson(s.stats.p999_ns)},
         {"max_ns", OptionalJson(s.stats.max_ns)},
         {"mean_ns", OptionalJson(s.stats.mean_ns)},
         {"migrated", s.migrated},
         {"negative", s.negative},
         {"cross_core", s.cross_core},
         {"skew", s.skew},
         {"out_of_order", s.out_of_order},
         {"late", s.late},
         {"core_unknown", s.core_unknown},
         {"uncertainty_ns", s.uncertainty_ns > 0 ? nlohmann::ordered_json(s.uncertainty_ns)
                                                 : nlohmann::ordered_json(nullptr)},
         {"clocks", ClocksJson(s)},
         {"confidence", s.confidence.empty() ? nlohmann::ordered_json("ok")
                                             : nlohmann::ordered_json(s.confidence)}});
  }
  j["stages"] = std::move(stages);
  return j.dump(2) + "\n";
}

}  // namespace ticktrace::view
