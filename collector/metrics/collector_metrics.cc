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
    s.samples_all = row.samples_all;
    s.flag_counts = row.flag_counts;
    m.stages.push_back(std::move(s));
  }
  m.counters = store_snapshot.counters;
  m.counters.emplace_back("orders_stored", static_cast<int64_t>(orders_stored));
  m.analysed_until_utc_ns = time_base.later_anchors.empty() ? time_base.anchor_utc_ns
                                                            : time_base.later_anchors.back().utc_ns;
  return m;
}

}  // namespace ticktrace::metrics
