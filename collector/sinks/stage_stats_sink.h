// The whole-run statistics as a sink of the stitcher: each StitchedOrder's
// samples go into StageStats, converted from ticks to ns through the
// stream's TimeBase (StitchView::time). The Stitcher owns one and calls it
// first (stitcher.h); the stage ids in the samples are the StageStats' own.
// Analysis thread.

#ifndef TICKTRACE_COLLECTOR_STAGE_STATS_SINK_H_
#define TICKTRACE_COLLECTOR_STAGE_STATS_SINK_H_

#include "collector/sinks/stage_stats.h"
#include "collector/stitch/stitched_order.h"

namespace ticktrace::collect {

// A sample whose core is unknown at either end: not known to be on one core,
// nor on two, so it is counted on its own (StageSummary::core_unknown). Not
// a sample with an end read by another clock: no core read that end.
inline bool CoreUnknown(const StitchedSample& s) {
  if (s.flags & kFlagExternal) return false;
  return s.begin_aux == abi::kAuxUnknown || s.end_aux == abi::kAuxUnknown;
}

class StageStatsSink : public StitchedOrderSink {
 public:
  // `stats` must outlive the sink.
  explicit StageStatsSink(StageStats* stats) : stats_(stats) {}

  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override {
    const TimeBase& time = *view.time;
    for (const StitchedSample& s : order.samples) {
      // When the stage started relative to the chain's start (display order).
      stats_->Add(s.stage_id, s.LatencyNs(time), s.flags,
                  time.DiffNs(s.begin_tsc, order.chain_start_tsc), s.uncertainty_ns,
                  CoreUnknown(s), s.external_clocks);
    }
  }
  bool WantsStamps() const override { return false; }
  void OnStandaloneSample(const StitchedSample& s, const StitchView& view) override {
    stats_->Add(s.stage_id, s.LatencyNs(*view.time), s.flags, 0, s.uncertainty_ns, CoreUnknown(s),
                s.external_clocks);
  }

 private:
  StageStats* stats_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STAGE_STATS_SINK_H_
