#include "collector/sinks/interval_stats.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "collector/sinks/stage_stats.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"

namespace ticktrace::collect {

uint32_t IntervalStats::SlotOfName(std::string_view name) {
  const uint32_t slot = names_.Intern(name);
  if (slot == kinds_.size()) kinds_.push_back(store::StageKindOfName(name));
  return slot;
}

uint32_t IntervalStats::NewStage(uint32_t stage_id, const StageStats& stages) {
  if (stage_id >= slot_of_stage_.size()) slot_of_stage_.resize(stage_id + 1, -1);
  const uint32_t slot = SlotOfName(stages.StageName(stage_id));
  slot_of_stage_[stage_id] = static_cast<int32_t>(slot);
  return slot;
}

IntervalStats::Interval& IntervalStats::IntervalAt(int64_t start_utc_ns) {
  // Orders finish nearly in order of their first stamp: the newest interval
  // first, and rarely more than two of them between handovers.
  for (size_t i = intervals_.size(); i-- > 0;) {
    if (intervals_[i].start_utc_ns == start_utc_ns) return intervals_[i];
  }
  intervals_.emplace_back();
  intervals_.back().start_utc_ns = start_utc_ns;
  return intervals_.back();
}

uint32_t IntervalStats::NewKey(Interval& in, uint32_t slot) {
  const uint32_t k = static_cast<uint32_t>(keys_.size());
  Key& key = keys_.emplace_back();
  key.slot = slot;
  key.start_utc_ns = in.start_utc_ns;
  if (builders_.size() <= k) builders_.push_back(std::make_unique<store::HistogramBuilder>());
  in.key_of_slot[slot] = static_cast<int32_t>(k);
  return k;
}

void IntervalStats::AddOrder(int64_t interval_start_utc_ns,
                             const std::vector<store::SampleDetail>& samples,
                             const uint32_t* slots) {
  Interval& in = IntervalAt(interval_start_utc_ns);
  const uint32_t excluded = include_flagged_ ? 0 : store::kFlagsExcludedByDefault;
  for (size_t i = 0; i < samples.size(); ++i) {
    const store::SampleDetail& s = samples[i];
    const uint32_t slot = slots[i];
    if (slot >= in.key_of_slot.size()) in.key_of_slot.resize(names_.size(), -1);
    const int32_t known = in.key_of_slot[slot];
    const uint32_t k = known >= 0 ? static_cast<uint32_t>(known) : NewKey(in, slot);
    Key& key = keys_[k];
    ++key.samples_all;
    if (s.flags != 0) {
      for (size_t f = 0; f < store::kFlagNames.size(); ++f) {
        if (s.flags & store::kFlagNames[f].bit) ++key.flag_counts[f];
      }
    }
    if ((s.flags & excluded) == 0) builders_[k]->Add(s.latency_ns);
  }
  ++in.orders;
}

void IntervalStats::TakeDeltas(std::vector<store::IntervalDelta>* deltas,
                               std::vector<store::IntervalOrders>* orders) {
  const size_t first_delta = deltas->size();
  const size_t first_orders = orders->size();
  for (size_t k = 0; k < keys_.size(); ++k) {
    const Key& key = keys_[k];
    store::IntervalDelta& d = deltas->emplace_back();
    d.stage = names_.Name(key.slot);
    d.kind = kinds_[key.slot];
    d.start_utc_ns = key.start_utc_ns;
    d.samples_all = key.samples_all;
    d.flag_counts = key.flag_counts;
    builders_[k]->Take(&d.histogram);
  }
  keys_.clear();
  if (builders_.size() > kBuildersKept) builders_.resize(kBuildersKept);
  for (const Interval& in : intervals_) {
    orders->push_back(store::IntervalOrders{in.start_utc_ns, in.orders, 0});
  }
  intervals_.clear();
  std::sort(deltas->begin() + static_cast<ptrdiff_t>(first_delta), deltas->end(),
            [](const store::IntervalDelta& a, const store::IntervalDelta& b) {
              return std::tie(a.stage, a.start_utc_ns) < std::tie(b.stage, b.start_utc_ns);
            });
  std::sort(orders->begin() + static_cast<ptrdiff_t>(first_orders), orders->end(),
            [](const store::IntervalOrders& a, const store::IntervalOrders& b) {
              return a.start_utc_ns < b.start_utc_ns;
            });
}

void MergePerKey(std::vector<store::IntervalDelta>* deltas,
                 std::vector<store::IntervalOrders>* orders) {
  auto by_key = [](const store::IntervalDelta& a, const store::IntervalDelta& b) {
    return std::tie(a.stage, a.start_utc_ns) < std::tie(b.stage, b.start_utc_ns);
  };
  std::stable_sort(deltas->begin(), deltas->end(), by_key);
  size_t out = 0;
  for (size_t i = 0; i < deltas->size(); ++i) {
    store::IntervalDelta& d = (*deltas)[i];
    if (out > 0 && !by_key((*deltas)[out - 1], d)) {  // the same key as the last kept
      store::IntervalDelta& into = (*deltas)[out - 1];
      into.samples_all += d.samples_all;
      for (size_t f = 0; f < into.flag_counts.size(); ++f) into.flag_counts[f] += d.flag_counts[f];
      into.histogram.Merge(d.histogram);
      continue;
    }
    if (out != i) (*deltas)[out] = std::move(d);
    ++out;
  }
  deltas->resize(out);

  std::stable_sort(orders->begin(), orders->end(),
                   [](const store::IntervalOrders& a, const store::IntervalOrders& b) {
                     return a.start_utc_ns < b.start_utc_ns;
                   });
  out = 0;
  for (size_t i = 0; i < orders->size(); ++i) {
    const store::IntervalOrders& o = (*orders)[i];
    if (out > 0 && (*orders)[out - 1].start_utc_ns == o.start_utc_ns) {
      (*orders)[out - 1].orders += o.orders;
      (*orders)[out - 1].orders_kept += o.orders_kept;
      continue;
    }
    (*orders)[out++] = o;
  }
  orders->resize(out);
}

}  // namespace ticktrace::collect
