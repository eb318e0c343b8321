#include "collector/metrics/collector_metrics.h"

namespace ticktrace::metrics {

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
    m.stages.push_back(std::move(s));
  }
  m.counters = store_snapshot.counters;
  m.counters.emplace_back("orders_stored", static_cast<int64_t>(orders_stored));
  m.analysed_until_utc_ns = time_base.later_anchors.empty() ? time_base.anchor_utc_ns
                                                            : time_base.later_anchors.back().utc_ns;
  return m;
}

}  // namespace ticktrace::metrics
