// A finished order as the store takes it (store::OrderDetail,
// store/common/detail.h: ns, UTC through the stream's anchors, stage and tag
// names), and OrderSink: a StitchedOrderSink that converts each
// StitchedOrder to it and hands it on. The store's sink (store_sink.h) gives
// it to the store writers as it is; tests record it.

#ifndef TICKTRACE_COLLECTOR_ORDER_ROWS_H_
#define TICKTRACE_COLLECTOR_ORDER_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collector/stitch/stitched_order.h"
#include "store/common/detail.h"

namespace ticktrace::collect {

struct FinishedOrder {
  // 1, 2, 3, ... in emission order over the whole run (checkpoints keep the
  // count): the stream decides every emission, so a restart that replays the
  // journal re-emits an order with the number it had, and the store sink
  // skips what the store already holds by it (store_sink.h).
  uint64_t seq = 0;
  store::OrderDetail order;
};

// `order` as the store takes it: samples in the stitcher's order (transitions
// in pipeline order, spans in record order, 'total' last), stamps in record
// order; a late instance's stamps carry store::kFlagLate. UTC comes from the
// anchor segment of the order's chain start, found once (utc_segment.h).
FinishedOrder ToFinishedOrder(const StitchedOrder& order, const StitchView& view);
// The same into `detail`, whatever it held: its vectors and strings keep
// their capacity, so a detail filled again allocates nothing once it has held
// an order as large.
void FillOrderDetail(const StitchedOrder& order, const StitchView& view,
                     store::OrderDetail* detail);

// Receives finished orders. Called on the analysis thread.
class OrderSink : public StitchedOrderSink {
 public:
  virtual void OnFinishedOrder(FinishedOrder&& order) = 0;
  // False when the order would be dropped anyway (the store is behind): no
  // FinishedOrder is built and OnOrderNotStored is called instead.
  virtual bool WantsRows() const { return true; }
  virtual void OnOrderNotStored(size_t /*samples*/, size_t /*stamps*/) {}

  // StitchedOrderSink: builds the FinishedOrder when wanted (and the stamps came:
  // WantsRows() turned true between the two calls counts as not stored).
  bool WantsStamps() const override { return WantsRows(); }
  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override {
    if (WantsRows() && order.stamps.size() == order.records) {
      OnFinishedOrder(ToFinishedOrder(order, view));
    } else {
      OnOrderNotStored(order.samples.size(), order.records);
    }
  }
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_ORDER_ROWS_H_
