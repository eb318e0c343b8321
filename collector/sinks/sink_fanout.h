// Two sinks of the stitcher as one (the Analyzer takes one): the store's and
// the OpenTelemetry push, each receiving every order in turn. Analysis thread.

#ifndef TICKTRACE_COLLECTOR_SINK_FANOUT_H_
#define TICKTRACE_COLLECTOR_SINK_FANOUT_H_

#include "collector/stitch/stitched_order.h"

namespace ticktrace::collect {

class SinkFanout : public StitchedOrderSink {
 public:
  // Either may be null; both must outlive the fanout.
  SinkFanout(StitchedOrderSink* first, StitchedOrderSink* second)
      : first_(first), second_(second) {}

  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override {
    if (first_ != nullptr) first_->OnStitchedOrder(order, view);
    if (second_ != nullptr) second_->OnStitchedOrder(order, view);
  }
  bool WantsStamps() const override {
    return (first_ != nullptr && first_->WantsStamps()) ||
           (second_ != nullptr && second_->WantsStamps());
  }
  void OnStandaloneSample(const StitchedSample& sample, const StitchView& view) override {
    if (first_ != nullptr) first_->OnStandaloneSample(sample, view);
    if (second_ != nullptr) second_->OnStandaloneSample(sample, view);
  }

 private:
  StitchedOrderSink* first_;
  StitchedOrderSink* second_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_SINK_FANOUT_H_
