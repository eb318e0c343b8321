#include "collector/sinks/stage_stats.h"

#include <algorithm>
#include <limits>

namespace ticktrace::collect {

uint32_t StageStats::StageId(std::string_view name, StageKind kind) {
  const uint32_t id = names_.Intern(name);
  if (id == stages_.size()) {
    stages_.push_back(std::make_unique<Stage>());
    stages_.back()->kind = kind;
  }
  return id;
}

void StageStats::Add(uint32_t stage_id, double latency_ns, uint16_t flags, double start_offset_ns,
                     double uncertainty_ns, bool core_unknown, uint8_t external_clocks) {
  Stage& s = *stages_[stage_id];
  ++samples_;
  ++s.samples_all;
  s.offset_sum_ns += start_offset_ns;
  if (flags & kFlagMigrated) ++s.migrated;
  if (flags & kFlagNegative) ++s.negative;
  if (flags & kFlagCrossCore) ++s.cross_core;
  if (flags & kFlagSkew) ++s.skew;
  if (flags & kFlagOutOfOrder) ++s.out_of_order;
  if (flags & kFlagLate) ++s.late;
  if (core_unknown) ++s.core_unknown;
  s.uncertainty_ns = std::max(s.uncertainty_ns, uncertainty_ns);
  s.external_clocks |= external_clocks;
  if ((flags & kFlagsExcludedByDefault) == 0 || include_flagged_) s.histogram.Add(latency_ns);
}

std::vector<StageSummary> StageStats::Summaries() const {
  std::vector<StageSummary> out;
  std::vector<double> mean_offset;
  for (uint32_t id = 0; id < stages_.size(); ++id) {
    const Stage& s = *stages_[id];
    if (s.samples_all == 0) continue;  // e.g. 'total' before any order completed
    StageSummary m;
    m.stage = names_.Name(id);
    m.kind = s.kind;
    m.count = s.histogram.count();
    m.samples_all = s.samples_all;
    m.min_ns = s.histogram.min();
    m.max_ns = s.histogram.max();
    m.mean_ns = s.histogram.mean();
    const auto percentile = [&s](double percent) {
      return s.histogram.count() >= MinSamplesForPercentile(percent)
                 ? s.histogram.Quantile(percent / 100)
                 : std::numeric_limits<double>::quiet_NaN();
    };
    m.p50_ns = percentile(50);
    m.p90_ns = percentile(90);
    m.p99_ns = percentile(99);
    m.p999_ns = percentile(99.9);
    m.migrated = s.migrated;
    m.negative = s.negative;
    m.cross_core = s.cross_core;
    m.skew = s.skew;
    m.out_of_order = s.out_of_order;
    m.late = s.late;
    m.core_unknown = s.core_unknown;
    m.uncertainty_ns = s.uncertainty_ns;
    m.external_clocks = s.external_clocks;
    out.push_back(std::move(m));
    mean_offset.push_back(s.samples_all ? s.offset_sum_ns / static_cast<double>(s.samples_all)
                                        : 0);
  }
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool ta = out[a].kind == StageKind::kTotal, tb = out[b].kind == StageKind::kTotal;
    if (ta != tb) return tb;  // 'total' last
    if (mean_offset[a] != mean_offset[b]) return mean_offset[a] < mean_offset[b];
    if (out[a].kind != out[b].kind) return out[a].kind < out[b].kind;  // a->b before a span
    return out[a].stage < out[b].stage;
  });
  std::vector<StageSummary> sorted;
  sorted.reserve(out.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted.push_back(std::move(out[order[i]]));
    sorted.back().position = static_cast<int>(i);
  }
  return sorted;
}

}  // namespace ticktrace::collect

namespace ticktrace::collect {

void StageStats::SaveState(StateWriter& w) const {
  w.Put<uint64_t>(samples_);
  w.Put<uint64_t>(stages_.size());
  for (uint32_t id = 0; id < stages_.size(); ++id) {
    const Stage& s = *stages_[id];
    w.PutString(names_.Name(id));
    w.Put<uint8_t>(static_cast<uint8_t>(s.kind));
    w.PutString(s.histogram.Encode());
    for (uint64_t v : {s.samples_all, s.migrated, s.negative, s.cross_core, s.skew, s.out_of_order,
                       s.late, s.core_unknown}) {
      w.Put<uint64_t>(v);
    }
    w.Put<double>(s.uncertainty_ns);
    w.Put<double>(s.offset_sum_ns);
  }
}

bool StageStats::LoadState(StateReader& r) {
  samples_ = r.Get<uint64_t>();
  const uint64_t n = r.GetCount(8 + 1 + 8 + 8 * 8 + 16);
  for (uint64_t id = 0; id < n && r.ok(); ++id) {
    const std::string name = r.GetString();
    const uint8_t kind = r.Get<uint8_t>();
    if (kind > static_cast<uint8_t>(StageKind::kTotal)) r.Fail();
    absl::StatusOr<Histogram> h = Histogram::Decode(r.GetString());
    if (!r.ok() || !h.ok()) return false;
    // Ids are dense in creation order, so interning in order gives the same ids.
    if (StageId(name, static_cast<StageKind>(kind)) != id) return false;
    Stage& s = *stages_[id];
    s.kind = static_cast<StageKind>(kind);
    s.histogram = *std::move(h);
    for (uint64_t* v : {&s.samples_all, &s.migrated, &s.negative, &s.cross_core, &s.skew,
                        &s.out_of_order, &s.late, &s.core_unknown}) {
      *v = r.Get<uint64_t>();
    }
    s.uncertainty_ns = r.Get<double>();
    s.offset_sum_ns = r.Get<double>();
  }
  return r.ok() && names_.size() == n;
}

}  // namespace ticktrace::collect
