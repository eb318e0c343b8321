// The store sink's interval statistics between two handovers to the writer
// (store_sink.h): per interval (of an order's first stamp) and stage, the
// samples counted, their flags and a histogram of those in the percentiles.
//
// The per-order path indexes flat arrays: a stage is a dense slot, known by
// the stitcher's stage id (StageStats) or, for orders that arrive as rows,
// by its name, looked up once per sample; the few intervals gathered at once
// are searched linearly. Each (stage, interval) touched since the last
// handover gathers its values in a HistogramBuilder from a pool kept from
// batch to batch, and hands them over as a sparse delta (its non-empty
// buckets): no histogram is made or zeroed whole per key and batch.
//
// Analysis thread; the deltas it hands out go to the writer thread.

#ifndef TICKTRACE_COLLECTOR_INTERVAL_STATS_H_
#define TICKTRACE_COLLECTOR_INTERVAL_STATS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collector/analysis/name_table.h"
#include "store/common/detail.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {

class StageStats;

class IntervalStats {
 public:
  // `include_flagged`: flagged samples go into the histograms too.
  explicit IntervalStats(bool include_flagged) : include_flagged_(include_flagged) {}

  // The slot of stage `name`, made when new.
  uint32_t SlotOfName(std::string_view name);
  // The slot of the stitcher's stage `stage_id` (StageStats::StageId).
  uint32_t SlotOfStage(uint32_t stage_id, const StageStats& stages) {
    if (stage_id < slot_of_stage_.size() && slot_of_stage_[stage_id] >= 0) {
      return static_cast<uint32_t>(slot_of_stage_[stage_id]);
    }
    return NewStage(stage_id, stages);
  }

  // Counts one order of the interval starting at `interval_start_utc_ns`;
  // samples[i] is of stage slot slots[i].
  void AddOrder(int64_t interval_start_utc_ns, const std::vector<store::SampleDetail>& samples,
                const uint32_t* slots);

  bool empty() const { return intervals_.empty(); }
  // Appends what was gathered since the last call, one delta per touched
  // (stage, interval) and the orders per interval, both ascending by key
  // (stage name, then start), and starts afresh.
  void TakeDeltas(std::vector<store::IntervalDelta>* deltas,
                  std::vector<store::IntervalOrders>* orders);

 private:
  // One (stage, interval) touched since the last TakeDeltas; its values go
  // into builders_[its index in keys_].
  struct Key {
    uint32_t slot = 0;
    int64_t start_utc_ns = 0;
    uint64_t samples_all = 0;
    std::array<uint64_t, store::kFlagNames.size()> flag_counts{};
  };
  struct Interval {
    int64_t start_utc_ns = 0;
    uint64_t orders = 0;
    std::vector<int32_t> key_of_slot;  // index in keys_; -1: not touched
  };
  // More builders than this are not kept past a handover (139 kB each): a
  // batch that touched many keys does not pin their memory for good.
  static constexpr size_t kBuildersKept = 64;

  uint32_t NewStage(uint32_t stage_id, const StageStats& stages);
  Interval& IntervalAt(int64_t start_utc_ns);
  uint32_t NewKey(Interval& in, uint32_t slot);

  bool include_flagged_;
  std::vector<Interval> intervals_;      // gathered since the last TakeDeltas
  std::vector<Key> keys_;                // touched since the last TakeDeltas
  std::vector<std::unique_ptr<store::HistogramBuilder>> builders_;  // the first keys_.size() in use
  std::vector<int32_t> slot_of_stage_;   // stitcher's stage id -> slot; -1: not yet
  NameTable names_;                      // stage name <-> slot
  std::vector<store::StageKind> kinds_;  // by slot
};

// Merges the deltas of one (stage, interval) into one, and the orders of one
// interval into one row, so that a backend writes each key once per
// transaction. Sorts both by key.
void MergePerKey(std::vector<store::IntervalDelta>* deltas,
                 std::vector<store::IntervalOrders>* orders);

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_INTERVAL_STATS_H_
