// The collector's live OpenTelemetry push (--otlp-endpoint): a sink of the
// stitcher that sends, per closed interval, each stage's slowest orders
// (--otlp-slowest N) and every order with a flag the percentiles leave out,
// as OTLP traces (common/otlp/order_spans.h: the same spans and ids as the
// viewer's `export --format otlp` of those orders) to an OTLP/HTTP receiver.
//
// Cost on the analysis thread, per order: finding its interval, and per
// sample one compare against its stage's threshold in that interval (the
// smallest latency among the N kept so far). The interval is found in TSC
// ticks: the range of first-stamp TSC values that map into the newest
// interval (and before any open interval's close) is worked out once, when
// the stream enters it, so an order inside it costs two compares, not a UTC
// conversion and a map lookup. Only an
// order that passes is converted (names, UTC; as the store sink does), and
// only at an interval's close are spans built. An interval closes once an
// order first-stamped `settle_ns` after its end has come, or the wall clock
// is that far past it (Tick), so late orders still count.
//
// Never slows the pipeline: the closed interval's request goes into a
// bounded queue (max_queued_requests) that the sink's own thread sends over
// HTTP (http_exporter.h: retries, bodies under 4 MiB). A full queue, or a
// request whose retries run out, drops whole requests, counted as
// otlp_spans_dropped / otlp_batches_dropped. The receiver being down costs
// spans, never records: the store and the statistics do not wait for it.
//
// Thread model: the analysis thread calls everything but counters() (any
// thread); the sender thread runs between Start() and Stop().

#ifndef TICKTRACE_COLLECTOR_OTLP_SINK_H_
#define TICKTRACE_COLLECTOR_OTLP_SINK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "collector/stitch/stitched_order.h"
#include "common/otlp/http_exporter.h"
#include "common/otlp/order_spans.h"
#include "store/common/detail.h"
#include "ticktrace/store/rows.h"

namespace ticktrace::collect {

struct OtlpSinkOptions {
  std::string endpoint;           // an OTLP/HTTP receiver: http://HOST:PORT
  size_t slowest_per_stage = 10;  // per stage and interval
  int64_t interval_ns = 1'000'000'000;
  // An interval closes this long after its end (the order timeout, the
  // linger, a margin): orders first-stamped in it have finished by then.
  int64_t settle_ns = 2'000'000'000;
  uint32_t excluded_flags = 0;     // always sent, and status ERROR
  size_t max_queued_requests = 16;  // closed intervals waiting to be sent
  int64_t max_retry_total_ms = 5000;  // per body; then it is dropped
  int64_t stop_grace_ms = 2000;       // Stop() lets the queue drain this long
  otlp::RunKey run;                   // the ids' run key (trace_ids.h)
  std::string session;
};

struct OtlpSinkCounters {
  uint64_t spans_sent = 0;
  uint64_t batches_sent = 0;  // bodies the receiver accepted
  uint64_t spans_dropped = 0;
  uint64_t batches_dropped = 0;  // requests (closed intervals) not or not fully sent
  uint64_t retries = 0;
};

class OtlpSink : public StitchedOrderSink {
 public:
  // The run's processes and threads, asked at each interval's close
  // (analysis thread).
  using NamesSource =
      std::function<void(std::vector<store::ProcessRow>*, std::vector<store::ThreadRow>*)>;

  OtlpSink(const OtlpSinkOptions& options, NamesSource names);
  ~OtlpSink() override;

  // Checks the endpoint (InvalidArgument, one line) and starts the sender.
  absl::Status Start();
  void OnStitchedOrder(const StitchedOrder& order, const StitchView& view) override;
  // Names the threads at the ends of each sample.
  bool WantsStamps() const override { return true; }
  // Closes the intervals the wall clock has settled (idle streams).
  void Tick();
  // Closes every interval, lets the sender send for at most stop_grace_ms,
  // then stops it; what is left is counted as dropped.
  void Stop();

  OtlpSinkCounters counters() const;

 private:
  struct Pending;
  struct Interval;
  struct Request {
    otlp::ExportRequest request;
    size_t spans = 0;
  };

  // The TSC values known to map into one open interval, before any open
  // interval's close; valid while the time base is the one it was built on.
  struct TscRange {
    Interval* interval = nullptr;  // null: empty
    uint64_t first_tsc = 0, last_tsc = 0;
    const TimeBase* time = nullptr;
    size_t anchors = 0;
    uint64_t anchor_tsc = 0;
    double ns_per_tick = 0;
    bool Holds(const TimeBase& t, uint64_t tsc) const {
      return interval != nullptr && tsc >= first_tsc && tsc <= last_tsc && &t == time &&
             t.later_anchors.size() == anchors && t.anchor_tsc == anchor_tsc &&
             t.ns_per_tick == ns_per_tick;
    }
  };

  Interval& IntervalAt(int64_t start_utc_ns);
  // The interval of an order first-stamped at `tsc` when the range misses:
  // moves the stream's newest stamp (closing what it settles) and rebuilds
  // the range when the order is the newest.
  Interval& Locate(const TimeBase& time, uint64_t tsc);
  void Keep(Interval& in, const StitchedOrder& order, const StitchView& view, bool flagged);
  void CloseBefore(int64_t end_utc_ns);
  void Close(Interval& in);
  void Enqueue(Request&& r);
  void Loop();

  OtlpSinkOptions options_;
  NamesSource names_;
  std::vector<otlp::FlagName> flag_names_;

  // Analysis thread only.
  std::map<int64_t, std::unique_ptr<Interval>> intervals_;  // by start
  int64_t newest_first_utc_ns_ = INT64_MIN;
  TscRange newest_range_;

  std::unique_ptr<otlp::HttpExporter> exporter_;  // sender thread once started
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  std::deque<Request> queue_;
  bool closing_ = false;
  bool sending_ = false;
  OtlpSinkCounters counters_;
  std::thread thread_;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_OTLP_SINK_H_
