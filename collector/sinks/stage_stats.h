// Per-stage aggregation: every sample counted, flag counts, and a histogram of
// the samples that go into the percentiles (unflagged ones, or all of them
// with include_flagged). Not thread-safe: the analysis thread owns it.

#ifndef TICKTRACE_COLLECTOR_STAGE_STATS_H_
#define TICKTRACE_COLLECTOR_STAGE_STATS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collector/sinks/histogram.h"
#include "collector/analysis/name_table.h"
#include "collector/stream/state_codec.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::collect {

// Sample flags: the store's bits (store/include/ticktrace/store/flags.h, the one
// definition, documented in docs/store.md "Flags"), as the collector's
// 16-bit flag fields hold them.
inline constexpr uint16_t kFlagMigrated = store::kFlagMigrated;
inline constexpr uint16_t kFlagNegative = store::kFlagNegative;
inline constexpr uint16_t kFlagCrossCore = store::kFlagCrossCore;
inline constexpr uint16_t kFlagSaturated = store::kFlagSaturated;
inline constexpr uint16_t kFlagSkew = store::kFlagSkew;
inline constexpr uint16_t kFlagOutOfOrder = store::kFlagOutOfOrder;
inline constexpr uint16_t kFlagLate = store::kFlagLate;
inline constexpr uint16_t kFlagCrossHost = store::kFlagCrossHost;
inline constexpr uint16_t kFlagExternal = store::kFlagExternal;
static_assert(store::kFlagExternal <= 0xffff, "the collector keeps flags in 16 bits");

// The flags that keep a sample out of the percentiles unless --include-flagged.
// cross_core alone is counted but not excluded: every hop between pinned
// processes is cross-core; it carries the cores' uncertainty instead. skew is
// counted, not excluded (a short hop measured through a slightly offset
// clock is still a hop), and late is not excluded either (its samples are
// real differences).
inline constexpr uint16_t kFlagsExcludedByDefault = store::kFlagsExcludedByDefault;

enum class StageKind : uint8_t { kTransition, kSpan, kTotal };

// When a percentile is a number: one rule for the collector and every reader
// (store/include/ticktrace/store/percentiles.h).
using store::MinSamplesForPercentile;

// One stage's summary, ready for the store and the report.
struct StageSummary {
  std::string stage;
  StageKind kind = StageKind::kTransition;
  int position = 0;       // display order: by mean start offset; 'total' last
  uint64_t count = 0;     // samples in the percentiles
  uint64_t samples_all = 0;
  double min_ns = 0, max_ns = 0, mean_ns = 0;
  // NaN when count < MinSamplesForPercentile (stored as NULL, printed "-").
  double p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0;
  uint64_t migrated = 0, negative = 0, cross_core = 0;
  uint64_t skew = 0, out_of_order = 0, late = 0;
  // Samples with an unknown core at either end: neither same-core nor
  // cross-core (a thread that moved during a read, a fenced stamp, an
  // interval measured elsewhere, a producer without rseq).
  uint64_t core_unknown = 0;
  // The largest uncertainty of the stage's cross-core samples (the sum of
  // their two cores' bound_ns); 0 when none was cross-core or the cores'
  // offsets were not measured.
  double uncertainty_ns = 0;
  // The clocks that read an end of its external samples (kFlagExternal):
  // ExternalClockBits of each end (collector/time/external_clock.h); 0 for a
  // stage of TSC stamps only. Not in a checkpoint: the store keeps the union of
  // what every snapshot said (table stage_clocks), so a resumed run that has
  // not seen its stage's clock again yet loses nothing already stored.
  uint8_t external_clocks = 0;
};

class StageStats {
 public:
  explicit StageStats(bool include_flagged) : include_flagged_(include_flagged) {}

  // The id of stage `name` of `kind`, creating it when new.
  uint32_t StageId(std::string_view name, StageKind kind);
  const std::string& StageName(uint32_t id) const { return names_.Name(id); }

  // Adds one sample. `start_offset_ns`: when the stage started, relative to
  // its order's chain start (orders the stages for display).
  // `uncertainty_ns`: how far the value may be off through the cores' clock
  // offsets (0 on one core or when unknown). `core_unknown`: the core of
  // either end is not known. `external_clocks`: the clocks that read its
  // external ends (StitchedSample::external_clocks).
  void Add(uint32_t stage_id, double latency_ns, uint16_t flags, double start_offset_ns,
           double uncertainty_ns = 0, bool core_unknown = false, uint8_t external_clocks = 0);

  bool include_flagged() const { return include_flagged_; }
  uint64_t samples() const { return samples_; }

  // Every stage, in display order.
  std::vector<StageSummary> Summaries() const;
  // The histogram of stage `name`'s samples in the percentiles; null for a
  // stage never seen. The metrics endpoint's snapshot reads it (analysis thread).
  const Histogram* FindHistogram(std::string_view name) const {
    const int64_t id = names_.Find(name);
    return id < 0 ? nullptr : &stages_[static_cast<size_t>(id)]->histogram;
  }

  // The whole state, for a checkpoint (collector/stream/checkpoint.h). LoadState
  // REQUIRES: a StageStats with no stages yet but those LoadState's caller
  // created in the same order (the stitcher's 'total'); false on bad input.
  void SaveState(StateWriter& w) const;
  bool LoadState(StateReader& r);

 private:
  struct Stage {
    StageKind kind;
    Histogram histogram;
    uint64_t samples_all = 0;
    uint64_t migrated = 0, negative = 0, cross_core = 0;
    uint64_t skew = 0, out_of_order = 0, late = 0;
    uint64_t core_unknown = 0;
    double uncertainty_ns = 0;
    double offset_sum_ns = 0;
    uint8_t external_clocks = 0;
  };
  bool include_flagged_;
  uint64_t samples_ = 0;
  NameTable names_;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STAGE_STATS_H_
