// The store's rows of a finished order (docs/store.md tables orders, samples,
// stamps), and OrderSink: a StitchedOrderSink that converts each
// StitchedOrder to them (ns, UTC through the stream's anchors, stage and tag
// names) and hands them on. The store writers (collector/store/*) take these
// rows through StoreSink; tests record them.

#ifndef TICKTRACE_COLLECTOR_ORDER_ROWS_H_
#define TICKTRACE_COLLECTOR_ORDER_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collector/stitch/stitched_order.h"

namespace ticktrace::collect {

// cpu fields are -1 when unknown (NULL).
struct OrderRow {
  uint64_t order_id = 0;
  uint32_t instance = 0;  // 0, 1, 2, ... per use of the id in the run
  bool late = false;      // a partial instance of records that came after their order
  bool has_parent = false;
  uint64_t parent_order_id = 0;
  int64_t first_utc_ns = 0;
  bool has_total = false;
  double total_ns = 0;
  bool complete = false;
  std::string missing;  // comma-separated
};

struct SampleRow {
  uint64_t order_id = 0;
  uint32_t instance = 0;
  std::string stage;
  int64_t start_utc_ns = 0;
  double latency_ns = 0;
  int32_t process_begin = -1, process_end = -1;
  int32_t cpu_begin = -1, cpu_end = -1;
  uint8_t flags = 0;
};

struct StampRow {
  uint64_t order_id = 0;
  uint32_t instance = 0;
  std::string tag;
  bool is_span = false;
  uint32_t process_id = 0;
  uint32_t tid = 0;
  int32_t cpu = -1, cpu_end = -1;
  uint64_t tsc = 0;
  int64_t utc_ns = 0;
  double duration_ns = 0;  // spans only
  uint8_t flags = 0;
};

struct FinishedOrder {
  // 1, 2, 3, ... in emission order over the whole run (checkpoints keep the
  // count): the stream decides every emission, so a restart that replays the
  // journal re-emits an order with the number it had, and the store sink
  // skips what the store already holds by it (store_sink.h).
  uint64_t seq = 0;
  OrderRow order;
  std::vector<SampleRow> samples;
  std::vector<StampRow> stamps;
};

// The rows of `order`: samples in the stitcher's order (transitions in
// pipeline order, spans in record order, 'total' last), stamps in record order.
FinishedOrder ToFinishedOrder(const StitchedOrder& order, const StitchView& view);

// Receives finished orders as rows. Called on the analysis thread.
class OrderSink : public StitchedOrderSink {
 public:
  virtual void OnFinishedOrder(FinishedOrder&& order) = 0;
  // False when rows would be dropped anyway (the store is behind): no rows
  // are built and OnOrderNotStored is called instead.
  virtual bool WantsRows() const { return true; }
  virtual void OnOrderNotStored(size_t /*samples*/, size_t /*stamps*/) {}

  // StitchedOrderSink: builds the rows when wanted.
  // StitchedOrderSink: builds the rows when wanted (and the stamps came:
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
