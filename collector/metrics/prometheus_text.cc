#include "collector/metrics/prometheus_text.h"

#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ticktrace/store/losses.h"
#include "ticktrace/store/names.h"

namespace ticktrace::metrics {
namespace {

// HELP text of the counters a user looks for first; the others get a
// generic line naming the store counter (docs/store.md lists them all).
const std::map<std::string, std::string, std::less<>>& PromCounterHelp() {
  static const auto* help = new std::map<std::string, std::string, std::less<>>{
      {"drained", "Records drained from the rings (after de-duplication)."},
      {"dropped", "Records the producers dropped because their ring was full."},
      {"orders_stored", "Orders whose detail the store holds."},
      {"orders_complete", "Orders that reached the last pipeline stage."},
      {"orders_incomplete", "Orders finished by the timeout or the end of the run."},
      {"samples", "Stage samples computed."},
      {"samples_not_stored", "Samples the store could not keep (the writer was behind)."},
      {"restarts", "Times this run was resumed after a collector restart."},
  };
  return *help;
}

void AppendMetricHeader(std::string* out, absl::string_view name, absl::string_view type,
                  absl::string_view help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

std::string PromNumber(double v) { return absl::StrFormat("%.15g", v); }

// First: records written and not analysed, by cause (store/losses.h), and
// what they are a share of.
void AppendRecordsLost(const MetricsSnapshot& s, std::string* out) {
  const store::RecordLoss loss = store::ComputeRecordLoss(s.counters);
  AppendMetricHeader(out, "ticktrace_records_lost_total", "counter",
                     "Records written and not analysed, by cause (docs/collector.md, "
                     "Records lost); every cause is listed, zero or not.");
  for (size_t i = 0; i < store::kLossCauses.size(); ++i) {
    absl::StrAppend(out, "ticktrace_records_lost_total{cause=\"",
                    std::string(store::kLossCauses[i].cause), "\"} ", loss.by_cause[i], "\n");
  }
  AppendMetricHeader(out, "ticktrace_records_written_total", "counter",
                     "Records the producers wrote or tried to: drained plus those lost before "
                     "the drain.");
  absl::StrAppend(out, "ticktrace_records_written_total ", loss.written, "\n");
}

// --budget: each budget's limit, and the closed intervals over it.
void AppendBudgets(const MetricsSnapshot& s, std::string* out) {
  if (s.budgets.empty()) return;
  auto labels = [](const BudgetMetrics& b) {
    return absl::StrCat("{stage=\"", EscapeLabelValue(b.stage), "\",quantile=\"",
                        EscapeLabelValue(b.quantile), "\"}");
  };
  AppendMetricHeader(out, "ticktrace_budget_breaches_total", "counter",
                     "Closed intervals whose figure broke the latency budget (--budget; "
                     "quantile \"max\" for a budget on the maximum).");
  for (const BudgetMetrics& b : s.budgets) {
    absl::StrAppend(out, "ticktrace_budget_breaches_total", labels(b), " ", b.breaches, "\n");
  }
  AppendMetricHeader(out, "ticktrace_budget_limit_seconds", "gauge",
                     "The latency budget's limit (--budget).");
  for (const BudgetMetrics& b : s.budgets) {
    absl::StrAppend(out, "ticktrace_budget_limit_seconds", labels(b), " ",
                    PromNumber(b.limit_seconds), "\n");
  }
}

// ---- the store's size (collector/app/store_projection.h) ----------------
// Gauges the collector keeps beside the store's counters; each is given only
// once the collector has measured it.
struct StoreSizeGauge {
  const char* counter;  // store counter name (store/common/names.cc)
  const char* metric;
  const char* help;
};
constexpr StoreSizeGauge kStoreSizeGauges[] = {
    {"store_bytes", "ticktrace_store_bytes",
     "Bytes the store's files take on disk (SQLite: the database, -wal and -shm)."},
    {"store_growth_bytes_per_s", "ticktrace_store_growth_bytes_per_second",
     "Bytes a second the store grows by at the rate of the last minute, before retention."},
    {"store_detail_limit_bytes", "ticktrace_store_detail_limit_bytes",
     "The size limit order detail is retired under (--retain-detail; 0: none)."},
    {"store_detail_window_s", "ticktrace_store_detail_window_seconds",
     "Seconds of order detail the limit holds at the rate of the last minute."},
};

bool IsStoreSizeGauge(const std::string& counter) {
  const std::optional<store::Counter> c = store::CounterByName(counter);
  return c.has_value() && store::CounterIsGauge(*c);
}

void AppendStoreSize(const MetricsSnapshot& s, std::string* out) {
  for (const StoreSizeGauge& g : kStoreSizeGauges) {
    for (const auto& [name, value] : s.counters) {
      if (name != g.counter) continue;
      AppendMetricHeader(out, g.metric, "gauge", g.help);
      absl::StrAppend(out, g.metric, " ", value, "\n");
    }
  }
}
// ---- end of the store's size ---------------------------------------------

}  // namespace

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string MetricNamePart(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return out;
}

std::string RenderSnapshot(const MetricsSnapshot& s, absl::string_view version,
                           absl::string_view commit) {
  std::string out;
  out.reserve(4096 + s.stages.size() * 3000);
  AppendRecordsLost(s, &out);

  // Per-stage latency histograms: cumulative counts at each le bound. A
  // bucket of the store's histogram counts at a bound when its midpoint is
  // at or below it (Histogram::CountAtMost), the value Quantile() reports
  // for it, so histogram_quantile() and the store's percentiles agree on
  // which classic bucket a percentile is in.
  AppendMetricHeader(&out, "ticktrace_stage_latency_seconds", "histogram",
               "Stage latency of the samples in the percentiles (flagged ones only with "
               "--include-flagged).");
  for (const StageMetrics& m : s.stages) {
    const std::string stage = EscapeLabelValue(m.stage);
    for (double le : kLatencyBucketsSeconds) {
      absl::StrAppend(&out, "ticktrace_stage_latency_seconds_bucket{stage=\"", stage, "\",le=\"",
                      absl::StrFormat("%g", le), "\"} ", m.histogram.CountAtMost(le * 1e9), "\n");
    }
    absl::StrAppend(&out, "ticktrace_stage_latency_seconds_bucket{stage=\"", stage,
                    "\",le=\"+Inf\"} ", m.histogram.count(), "\n");
    absl::StrAppend(&out, "ticktrace_stage_latency_seconds_sum{stage=\"", stage, "\"} ",
                    PromNumber(m.histogram.sum() * 1e-9), "\n");
    absl::StrAppend(&out, "ticktrace_stage_latency_seconds_count{stage=\"", stage, "\"} ",
                    m.histogram.count(), "\n");
  }

  AppendMetricHeader(&out, "ticktrace_stage_samples_total", "counter",
               "Every sample of the stage, flagged ones included.");
  for (const StageMetrics& m : s.stages) {
    absl::StrAppend(&out, "ticktrace_stage_samples_total{stage=\"", EscapeLabelValue(m.stage),
                    "\"} ", m.samples_all, "\n");
  }
  AppendMetricHeader(&out, "ticktrace_stage_flagged_samples_total", "counter",
               "Samples of the stage carrying the flag (docs/store.md, Flags).");
  for (const StageMetrics& m : s.stages) {
    for (size_t i = 0; i < store::kFlagNames.size(); ++i) {
      absl::StrAppend(&out, "ticktrace_stage_flagged_samples_total{stage=\"",
                      EscapeLabelValue(m.stage), "\",flag=\"",
                      std::string(store::kFlagNames[i].name), "\"} ", m.flag_counts[i], "\n");
    }
  }

  // A stage with an end read by another clock names that clock (its samples
  // carry the flag external, docs/store.md "Flags").
  std::string clocks;
  for (const StageMetrics& m : s.stages) {
    for (const auto& [side, clock] : m.clocks) {
      absl::StrAppend(&clocks, "ticktrace_stage_clock_info{stage=\"", EscapeLabelValue(m.stage),
                      "\",side=\"", side, "\",clock=\"", EscapeLabelValue(clock), "\"} 1\n");
    }
  }
  if (!clocks.empty()) {
    AppendMetricHeader(&out, "ticktrace_stage_clock_info", "gauge",
                       "1 for each clock other than the TSC that read an end (side: begin or "
                       "end) of the stage's samples (stamp_at: realtime, phc, exchange).");
    out += clocks;
  }

  // Counters: one metric each; "missing_stage:<stage>" and "core_unknown:<stage>"
  // as one labelled metric each.
  std::string missing, core_unknown;
  for (const auto& [name, value] : s.counters) {
    constexpr absl::string_view kMissing = "missing_stage:";
    constexpr absl::string_view kCoreUnknown = "core_unknown:";
    if (absl::StartsWith(name, kMissing)) {
      absl::StrAppend(&missing, "ticktrace_missing_stage_total{stage=\"",
                      EscapeLabelValue(absl::string_view(name).substr(kMissing.size())), "\"} ",
                      value, "\n");
      continue;
    }
    if (absl::StartsWith(name, kCoreUnknown)) {
      absl::StrAppend(&core_unknown, "ticktrace_stage_core_unknown_samples_total{stage=\"",
                      EscapeLabelValue(absl::string_view(name).substr(kCoreUnknown.size())), "\"} ",
                      value, "\n");
      continue;
    }
    // The process's CPU is ticktrace_collector_cpu_seconds_total, at scrape time.
    if (name == "collector_cpu_ms") continue;
    // Budgets: ticktrace_budget_breaches_total{stage,quantile} below.
    if (absl::StartsWith(name, "budget_")) continue;
    if (IsStoreSizeGauge(name)) continue;  // AppendStoreSize
    const std::string metric = absl::StrCat("ticktrace_", MetricNamePart(name), "_total");
    const auto help = PromCounterHelp().find(name);
    AppendMetricHeader(&out, metric, "counter",
                 help != PromCounterHelp().end()
                     ? help->second
                     : absl::StrCat("The store's counter '", name, "' (docs/store.md)."));
    absl::StrAppend(&out, metric, " ", value, "\n");
  }
  AppendMetricHeader(&out, "ticktrace_missing_stage_total", "counter",
               "Orders that finished without the stage.");
  out += missing;
  AppendMetricHeader(&out, "ticktrace_stage_core_unknown_samples_total", "counter",
                     "Samples of the stage with an unknown core at either end.");
  out += core_unknown;

  AppendBudgets(s, &out);
  AppendStoreSize(s, &out);

  AppendMetricHeader(&out, "ticktrace_collector_info", "gauge",
               "The collector's version, git commit and session (value 1).");
  absl::StrAppend(&out, "ticktrace_collector_info{version=\"", EscapeLabelValue(version),
                  "\",commit=\"", EscapeLabelValue(commit), "\",session=\"",
                  EscapeLabelValue(s.session), "\"} 1\n");
  return out;
}

std::string RenderScrapeTime(int64_t analysed_until_utc_ns, int64_t now_utc_ns,
                             double cpu_seconds) {
  std::string out;
  AppendMetricHeader(&out, "ticktrace_collector_lag_seconds", "gauge",
               "How far the analysis is behind: now minus the newest clock anchor it has "
               "processed (anchors come once a second, so 0 to 1 when keeping up).");
  if (analysed_until_utc_ns > 0) {
    const double lag_s = static_cast<double>(now_utc_ns - analysed_until_utc_ns) * 1e-9;
    absl::StrAppend(&out, "ticktrace_collector_lag_seconds ", PromNumber(lag_s), "\n");
  }
  AppendMetricHeader(&out, "ticktrace_collector_cpu_seconds_total", "counter",
               "CPU time (user + system) of the collector process, every thread.");
  absl::StrAppend(&out, "ticktrace_collector_cpu_seconds_total ", PromNumber(cpu_seconds), "\n");
  return out;
}

}  // namespace ticktrace::metrics
