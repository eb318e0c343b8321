#include "collector/metrics/collector_metrics.h"

#include "absl/strings/str_format.h"

namespace ticktrace::metrics {

std::vector<BudgetMetrics> BudgetMetricsOf(const std::vector<Budget>& budgets,
                                           const std::vector<collect::BudgetCount>& counts) {
  std::vector<BudgetMetrics> out;
  out.reserve(budgets.size());
  for (size_t i = 0; i < budgets.size(); ++i) {
    const Budget& b = budgets[i];
    BudgetMetrics& m = out.emplace_back();
    m.stage = b.stage;
    // The quantile as written (p99.9 -> 0.999), not as a double prints it.
    m.quantile = b.quantile.has_value() ? absl::StrFormat("%.10g", *b.quantile) : "max";
    m.limit_seconds = static_cast<double>(b.limit_ns) * 1e-9;
    m.breaches = i < counts.size() ? counts[i].breaches : 0;
  }
  return out;
}

MetricsSnapshot MakeMetricsSnapshot(const store::Snapshot& store_snapshot,
                                    const collect::StageStats& stats, uint64_t orders_stored,
                                    const collect::TimeBase& time_base,
                                    const std::string& session) {
  MetricsSnapshot m;
  m.session = session;
  m.stages.reserve(store_snapshot.stages.size());
  for (const store::StageStatsRow& row : store_snapshot.stages) {
    StageMetrics s;
    s.stage = row.stage;
    if (const store::Histogram* h = stats.FindHistogram(row.stage); h != nullptr) {
      s.histogram = *h;
    }
    s.samples_all = static_cast<uint64_t>(row.samples_all.value_or(0));
    for (size_t i = 0; i < s.flag_counts.size(); ++i) {
      s.flag_counts[i] = static_cast<uint64_t>(row.flag_counts[i]);
    }
    for (const store::StageClockRow& c : store_snapshot.stage_clocks) {
      if (c.stage == row.stage) s.clocks.emplace_back(c.side, c.clock);
    }
    m.stages.push_back(std::move(s));
  }
  m.counters = store_snapshot.counters;
  m.counters.emplace_back("orders_stored", static_cast<int64_t>(orders_stored));
  m.analysed_until_utc_ns = time_base.later_anchors.empty() ? time_base.anchor_utc_ns
                                                            : time_base.later_anchors.back().utc_ns;
  return m;
}

}  // namespace ticktrace::metrics
