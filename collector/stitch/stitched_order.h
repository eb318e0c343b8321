// What the stitcher emits for each finished order, in the tick domain: the
// stage samples it found (stage ids, TSC ends, flags decided once), the
// order's records, and what it knows of the order. No strings and no
// nanoseconds except where a core's clock was measured in ns (uncertainty,
// skew correction). Each sink converts what it needs (docs/collector.md,
// "Stages"):
//   StageStatsSink (stage_stats_sink.h)  whole-run statistics, in ns;
//   OrderSink (order_rows.h)             the store's OrderDetail: ns, UTC, names
//                                        (StoreSink, tests' recorders);
//   later exporters (metrics and others).
// The Stitcher calls every sink on the analysis thread, in the order they
// were added, with the same StitchedOrder; a sink must not keep a reference
// to it after the call (the stitcher reuses its vectors).

#ifndef TICKTRACE_COLLECTOR_STITCHED_ORDER_H_
#define TICKTRACE_COLLECTOR_STITCHED_ORDER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collector/analysis/name_table.h"
#include "collector/time/time_base.h"
#include "ticktrace/abi.h"

namespace ticktrace::collect {

class StageStats;

// One stage sample: a pair of stamps (a transition or 'total'), or a span's
// (interval's) own duration.
struct StitchedSample {
  uint32_t stage_id = 0;  // StageStats::StageId: StageStats::StageName(stage_id) names it
  uint16_t flags = 0;     // kFlag* (stage_stats.h), decided by the stitcher
  // The clocks that read its ends when kFlagExternal: the begin's in the low
  // four bits, the end's in the high four (ExternalClockBits,
  // collector/time/external_clock.h); 0 otherwise. In the padding before
  // begin_tsc: the sample does not grow.
  uint8_t external_clocks = 0;
  // The difference is end_tsc - begin_tsc as a signed tick count. A span:
  // begin_tsc is its begin, end_tsc = begin_tsc + duration, or - duration
  // when it ran backwards (abi::kRecordSpanBackwards).
  uint64_t begin_tsc = 0;
  uint64_t end_tsc = 0;
  uint32_t begin_aux = abi::kAuxUnknown, end_aux = abi::kAuxUnknown;
  uint32_t begin_process = 0, end_process = 0;
  // The two cores' measured bounds summed (cross-core, both measured), plus
  // an external end's uncertainty (kFlagExternal), else 0.
  double uncertainty_ns = 0;
  // Subtracted from the difference (correct_skew: the two cores' measured
  // offsets, end's minus begin's), else 0.
  double skew_correction_ns = 0;

  int64_t ticks() const { return static_cast<int64_t>(end_tsc - begin_tsc); }
  // The sample's value: the difference in ns, skew-corrected.
  double LatencyNs(const TimeBase& time) const {
    return time.DiffNs(end_tsc, begin_tsc) - skew_correction_ns;
  }
};

// One record (stamp, span or interval) of the order, in its order's event order.
struct StitchedStamp {
  uint64_t tsc = 0;  // a stamp's TSC, or a span's begin
  uint32_t name_id = 0;  // the tag's name, in StitchView::tag_names
  uint8_t kind = abi::kStamp;  // abi::RecordKind
  uint16_t flags = 0;    // kFlag*: a span's sample flags, kFlagLate for a late stamp,
                         // kFlagExternal for a time read by another clock
  uint32_t aux = abi::kAuxUnknown;
  uint32_t end_aux = abi::kAuxUnknown;  // spans; kExternal: its clock (abi::ExternalClock)
  uint32_t process_id = 0;
  uint32_t tid = 0;
  // Spans, as recorded (see the sample for its sign); kExternal: its
  // uncertainty (collector/time/external_clock.h, UnpackUncertaintyNs).
  uint32_t duration_ticks = 0;
  int32_t span_sample = -1;     // spans: the index of its sample in StitchedOrder::samples

  bool is_span() const { return kind == abi::kSpan || kind == abi::kMeasure; }
  bool is_external() const { return kind == abi::kExternal; }
};

struct StitchedOrder {
  // 1, 2, 3, ... in emission order over the run (FinishedOrder::seq).
  uint64_t seq = 0;
  uint64_t order_id = 0;
  uint32_t instance = 0;  // 0, 1, 2, ... per use of the id in the run
  bool late = false;      // a partial instance of records that came after their order
  bool has_parent = false;
  bool complete = false;
  bool fanned_out = false;  // a parent: its chain continues in its children
  uint64_t parent_order_id = 0;
  // The chain's first stage's TSC (its earliest record when no stage was seen).
  uint64_t chain_start_tsc = 0;
  // The chain's first and last stage, when they differ: the total's ends.
  bool has_total = false;
  uint64_t total_begin_tsc = 0, total_end_tsc = 0;
  int32_t total_sample = -1;  // the 'total' sample's index, when one was taken
  std::vector<uint32_t> missing;  // pipeline positions not seen (empty when fanned out)
  std::vector<StitchedSample> samples;
  // Every record of the order, in its order of arrival; filled only when a
  // sink wants them (StitchedOrderSink::WantsStamps), else empty.
  std::vector<StitchedStamp> stamps;
  uint32_t records = 0;  // the order's records (stamps, spans, intervals)

  // Clears it for reuse, keeping the vectors' capacity.
  void Clear() {
    std::vector<uint32_t> keep_missing = std::move(missing);
    std::vector<StitchedSample> keep_samples = std::move(samples);
    std::vector<StitchedStamp> keep_stamps = std::move(stamps);
    *this = StitchedOrder{};
    missing = std::move(keep_missing);
    samples = std::move(keep_samples);
    stamps = std::move(keep_stamps);
    missing.clear();
    samples.clear();
    stamps.clear();
  }
};

// What a sink needs to name and convert what it receives: valid during the
// call only. The time base carries the UTC anchors as of this order's emission.
struct StitchView {
  const TimeBase* time = nullptr;
  const NameTable* tag_names = nullptr;    // StitchedStamp::name_id -> tag
  const StageStats* stages = nullptr;      // StitchedSample::stage_id -> stage name
  const std::vector<std::string>* pipeline = nullptr;  // StitchedOrder::missing -> stage tags
};

// Receives what the stitcher emits. Called on the analysis thread.
class StitchedOrderSink {
 public:
  virtual ~StitchedOrderSink() = default;
  virtual void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) = 0;
  // Whether the next order's StitchedOrder::stamps are needed (asked before
  // each order; false for every sink: the stitcher skips them).
  virtual bool WantsStamps() const { return true; }
  // A span or interval with no order id: one sample of its tag, nothing else.
  virtual void OnStandaloneSample(const StitchedSample& /*sample*/, const StitchView& /*view*/) {}
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STITCHED_ORDER_H_
