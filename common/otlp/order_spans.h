// A ticktrace order as an OpenTelemetry trace (docs/viewer.md, "OTLP"):
// one trace per order instance, a root span over the order (its first
// sample's start to its last sample's end) and a child span per stage
// sample. The viewer's export (from the store) and the collector's live
// push (from the stitcher) both fill an OrderTrace and call TraceBuilder,
// so the two give the same spans with the same ids (trace_ids.h).
//
// Each span's resource is its process (service.name = the process name,
// host.name, process.pid): a stage span belongs to the process of its
// begin, the root span to the process of the order's first sample.
//
// Stage span attributes: ticktrace.stage, ticktrace.order_id (decimal
// string: ids above 2^53 survive JSON readers), ticktrace.instance, the
// process name and pid and the thread name and tid at both ends
// (ticktrace.begin.* / ticktrace.end.*), the cores at both ends, each flag
// set (ticktrace.flag.<name> = true), ticktrace.uncertainty_ns (a
// cross-core sample's bound, plus an external end's), and the clock of an
// end read by another clock (ticktrace.begin.clock / ticktrace.end.clock).
// A sample with a flag in `error_flags` (those the percentiles leave out)
// has status ERROR, its flags as the message; so has its order's root span. A linked child order's root span links to its
// parent's root span (the parent's first instance).
//
// The instrumentation scope is "ticktrace" with the project's version.
//
// Thread model: one thread per builder.

#ifndef TICKTRACE_COMMON_OTLP_ORDER_SPANS_H_
#define TICKTRACE_COMMON_OTLP_ORDER_SPANS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/otlp/span_model.h"
#include "common/otlp/trace_ids.h"

namespace ticktrace::otlp {

struct OrderSample {
  std::string stage;
  int64_t start_utc_ns = 0;
  int64_t end_utc_ns = 0;  // start + the latency rounded to whole ns
  int64_t process_begin = -1, process_end = -1;  // per-run process numbers; -1 unknown
  int64_t cpu_begin = -1, cpu_end = -1;          // -1: unknown
  uint32_t flags = 0;
  std::optional<double> uncertainty_ns;
  // The clock other than the TSC that read each end (stamp_at: "realtime",
  // "phc", "exchange"; "+"-joined when several did); empty: the TSC.
  std::string begin_clock, end_clock;
};

// A stamp's place, to name the thread at each end of a sample.
struct OrderStamp {
  int64_t process_id = 0;
  int64_t tid = 0;
  int64_t utc_ns = 0;
};

struct OrderTrace {
  uint64_t order_id = 0;
  uint32_t instance = 0;
  std::optional<uint64_t> parent_order_id;
  int64_t first_utc_ns = 0;  // the root's times when there is no sample
  std::vector<OrderSample> samples;
  std::vector<OrderStamp> stamps;
};

struct ProcessName {
  std::string name;
  int64_t pid = 0;
};

struct FlagName {
  uint32_t bit = 0;
  std::string_view name;
};

// What every order of a run shares.
struct TraceContext {
  RunKey run;
  std::string session;
  std::map<int64_t, ProcessName> processes;  // by per-run process number
  std::map<std::pair<int64_t, int64_t>, std::string> threads;  // (process, tid) -> name
  std::vector<FlagName> flag_names;  // lowest bit first
  uint32_t error_flags = 0;
};

// A sample's latency as whole ns: rounded, 0 when not finite, clamped (as
// the store keeps it, so that both sides compute the same end).
int64_t RoundLatencyNs(double ns);

class TraceBuilder {
 public:
  // `context` must outlive the builder.
  explicit TraceBuilder(const TraceContext* context);

  // Adds the order's spans; returns how many.
  size_t Add(const OrderTrace& order);
  size_t spans() const { return spans_; }
  bool empty() const { return spans_ == 0; }
  // The request built so far; the builder starts over.
  ExportRequest Take();

 private:
  ResourceSpans& ResourceOf(int64_t process_id);
  void AddProcessAttributes(std::string_view end, int64_t process_id, int64_t tid,
                            std::vector<KeyValue>* out) const;

  const TraceContext* context_;
  ExportRequest request_;
  std::map<int64_t, size_t> resource_index_;
  size_t spans_ = 0;
};

}  // namespace ticktrace::otlp

#endif  // TICKTRACE_COMMON_OTLP_ORDER_SPANS_H_
