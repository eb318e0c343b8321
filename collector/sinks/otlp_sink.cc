#include "collector/sinks/otlp_sink.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "collector/sinks/order_rows.h"
#include "collector/sinks/utc_segment.h"
#include "collector/time/external_clock.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::collect {
namespace {

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One end's clocks (ExternalClockBits) as the span attribute says them.
std::string ClockNames(uint8_t bits, bool at_end) {
  std::string out;
  for (std::string_view name : ExternalClockNames(bits, at_end)) {
    out.append(out.empty() ? "" : "+").append(name);
  }
  return out;
}

// The order as the OTLP mapping takes it: from the store's form of it
// (FillOrderDetail), so that it is what the viewer reads back from the store.
otlp::OrderTrace TraceOf(const store::OrderDetail& d, const std::vector<double>& uncertainty_ns,
                         const std::vector<uint8_t>& external_clocks) {
  otlp::OrderTrace t;
  t.order_id = d.order_id;
  t.instance = d.instance;
  t.parent_order_id = d.parent_order_id;
  t.first_utc_ns = d.first_utc_ns;
  t.samples.reserve(d.samples.size());
  for (size_t i = 0; i < d.samples.size(); ++i) {
    const store::SampleDetail& s = d.samples[i];
    otlp::OrderSample o;
    o.stage = s.stage;
    o.start_utc_ns = s.start_utc_ns;
    o.end_utc_ns = s.start_utc_ns + otlp::RoundLatencyNs(s.latency_ns);
    o.process_begin = s.process_begin;
    o.process_end = s.process_end;
    o.cpu_begin = s.cpu_begin;
    o.cpu_end = s.cpu_end;
    o.flags = s.flags;
    if (uncertainty_ns[i] > 0) o.uncertainty_ns = uncertainty_ns[i];
    o.begin_clock = ClockNames(external_clocks[i], /*at_end=*/false);
    o.end_clock = ClockNames(external_clocks[i], /*at_end=*/true);
    t.samples.push_back(std::move(o));
  }
  t.stamps.reserve(d.stamps.size());
  for (const store::StampDetail& s : d.stamps) t.stamps.push_back({s.process_id, s.tid, s.utc_ns});
  return t;
}

}  // namespace

// An order kept for its interval's close; `refs` counts the stage heaps it
// is among.
struct OtlpSink::Pending {
  store::OrderDetail detail;
  std::vector<double> uncertainty_ns;  // per sample
  std::vector<uint8_t> external_clocks;  // per sample (StitchedSample::external_clocks)
  bool flagged = false;
  int refs = 0;
};

struct OtlpSink::Interval {
  struct Candidate {
    double latency_ns;
    Pending* order;
    bool operator>(const Candidate& o) const { return latency_ns > o.latency_ns; }
  };
  int64_t start_utc_ns = 0;
  // Per stage id: a min-heap (std::greater) of the slowest candidates so far.
  std::vector<std::vector<Candidate>> heaps;
  std::vector<std::unique_ptr<Pending>> pending;

  // Whether a sample of `latency_ns` would be among the stage's slowest.
  bool Wants(uint32_t stage, double latency_ns, size_t n) const {
    if (n == 0) return false;
    if (stage >= heaps.size() || heaps[stage].size() < n) return true;
    return latency_ns > heaps[stage].front().latency_ns;
  }
};

OtlpSink::OtlpSink(const OtlpSinkOptions& options, NamesSource names)
    : options_(options), names_(std::move(names)) {
  options_.interval_ns = std::max<int64_t>(1, options_.interval_ns);
  for (const store::FlagName& f : store::kAllFlagNames) flag_names_.push_back({f.bit, f.name});
}

// Without Stop() (a run that failed): the sender stops at once and the open
// intervals are not built (what names them may be gone already).
OtlpSink::~OtlpSink() {
  intervals_.clear();
  options_.stop_grace_ms = 0;
  Stop();
}

absl::Status OtlpSink::Start() {
  otlp::ExporterOptions eo;
  eo.endpoint = options_.endpoint;
  eo.max_retry_total_ms = options_.max_retry_total_ms;
  eo.stop = &stop_;
  absl::StatusOr<std::unique_ptr<otlp::HttpExporter>> e = otlp::HttpExporter::Create(eo);
  if (!e.ok()) return e.status();
  exporter_ = *std::move(e);
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

OtlpSink::Interval& OtlpSink::IntervalAt(int64_t utc_ns) {
  const int64_t n = options_.interval_ns;
  const int64_t start = utc_ns - (((utc_ns % n) + n) % n);
  std::unique_ptr<Interval>& in = intervals_[start];
  if (in == nullptr) {
    in = std::make_unique<Interval>();
    in->start_utc_ns = start;
  }
  return *in;
}

void OtlpSink::OnStitchedOrder(const StitchedOrder& order, const StitchView& view) {
  if (!thread_.joinable() || order.stamps.size() != order.records) return;
  const TimeBase& time = *view.time;
  const uint64_t tsc = order.chain_start_tsc;
  Interval& in = newest_range_.Holds(time, tsc) ? *newest_range_.interval : Locate(time, tsc);
  bool flagged = false, wanted = false;
  for (const StitchedSample& s : order.samples) {
    flagged = flagged || (s.flags & options_.excluded_flags) != 0;
    wanted = wanted || in.Wants(s.stage_id, s.LatencyNs(time), options_.slowest_per_stage);
  }
  if (flagged || wanted) Keep(in, order, view, flagged);
}

OtlpSink::Interval& OtlpSink::Locate(const TimeBase& time, uint64_t tsc) {
  const UtcSegment seg(time, tsc);
  const int64_t first_utc_ns = seg.UtcNs(tsc);  // TimeBase::UtcNs(tsc), to the ns
  const bool newest = first_utc_ns > newest_first_utc_ns_;
  if (newest) {
    newest_first_utc_ns_ = first_utc_ns;
    CloseBefore(newest_first_utc_ns_);
  }
  const size_t open = intervals_.size();
  Interval& in = IntervalAt(first_utc_ns);
  // A late order's new interval may close before the range's end: rebuild.
  if (intervals_.size() != open) newest_range_.interval = nullptr;
  if (!newest) return in;

  // The range: TSC values near `tsc` (within about one interval, so that the
  // search neither wraps nor runs long) whose UTC is in the interval and
  // before the oldest open interval's close, which CloseBefore just put
  // after first_utc_ns. An order inside it cannot move a close, so it may
  // skip the newest-stamp update too.
  const int64_t close_utc_ns =
      intervals_.begin()->second->start_utc_ns + options_.interval_ns + options_.settle_ns;
  const int64_t end_utc_ns = std::min(in.start_utc_ns + options_.interval_ns, close_utc_ns);
  const double reach = std::min(4e18, 1.1 * static_cast<double>(options_.interval_ns) /
                                          std::max(time.ns_per_tick, 1e-9)) + 16;
  const UtcSegment::TscRange r =
      seg.TscRangeAround(tsc, static_cast<uint64_t>(reach), in.start_utc_ns, end_utc_ns);
  newest_range_.interval = &in;
  newest_range_.first_tsc = r.first_tsc;
  newest_range_.last_tsc = r.last_tsc;
  newest_range_.time = &time;
  newest_range_.anchors = time.later_anchors.size();
  newest_range_.anchor_tsc = time.anchor_tsc;
  newest_range_.ns_per_tick = time.ns_per_tick;
  return in;
}

void OtlpSink::Keep(Interval& in, const StitchedOrder& order, const StitchView& view,
                    bool flagged) {
  auto p = std::make_unique<Pending>();
  p->flagged = flagged;
  const size_t n = options_.slowest_per_stage;
  for (const StitchedSample& s : order.samples) {
    p->uncertainty_ns.push_back(s.uncertainty_ns);
    p->external_clocks.push_back(s.external_clocks);
    if (!in.Wants(s.stage_id, s.LatencyNs(*view.time), n)) continue;
    if (s.stage_id >= in.heaps.size()) in.heaps.resize(s.stage_id + 1);
    std::vector<Interval::Candidate>& heap = in.heaps[s.stage_id];
    const Interval::Candidate c{s.LatencyNs(*view.time), p.get()};
    if (heap.size() >= n) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      --heap.back().order->refs;  // out of this stage's slowest
      heap.back() = c;
    } else {
      heap.push_back(c);
    }
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    ++p->refs;
  }
  FillOrderDetail(order, view, &p->detail);
  in.pending.push_back(std::move(p));
}

void OtlpSink::CloseBefore(int64_t now_utc_ns) {
  while (!intervals_.empty()) {
    Interval& in = *intervals_.begin()->second;
    if (now_utc_ns != std::numeric_limits<int64_t>::max() &&
        in.start_utc_ns + options_.interval_ns + options_.settle_ns > now_utc_ns) {
      return;
    }
    Close(in);
    if (newest_range_.interval == &in) newest_range_.interval = nullptr;
    intervals_.erase(intervals_.begin());
  }
}

void OtlpSink::Close(Interval& in) {
  bool any = false;
  for (const std::unique_ptr<Pending>& p : in.pending) any = any || p->refs > 0 || p->flagged;
  if (!any) return;
  otlp::TraceContext context;
  context.run = options_.run;
  context.session = options_.session;
  context.flag_names = flag_names_;
  context.error_flags = options_.excluded_flags;
  std::vector<store::ProcessRow> processes;
  std::vector<store::ThreadRow> threads;
  if (names_) names_(&processes, &threads);
  for (const store::ProcessRow& p : processes) {
    context.processes[p.process_id] = otlp::ProcessName{p.name, p.pid};
  }
  for (const store::ThreadRow& t : threads) context.threads[{t.process_id, t.tid}] = t.name;
  otlp::TraceBuilder builder(&context);
  for (const std::unique_ptr<Pending>& p : in.pending) {
    if (p->refs > 0 || p->flagged) {
      builder.Add(TraceOf(p->detail, p->uncertainty_ns, p->external_clocks));
    }
  }
  Request r;
  r.spans = builder.spans();
  r.request = builder.Take();
  Enqueue(std::move(r));
}

void OtlpSink::Enqueue(Request&& r) {
  std::lock_guard lock(mu_);
  if (queue_.size() >= options_.max_queued_requests) {
    // The receiver is behind or down: this interval's spans are lost, counted.
    counters_.spans_dropped += r.spans;
    ++counters_.batches_dropped;
    return;
  }
  queue_.push_back(std::move(r));
  cv_.notify_all();
}

void OtlpSink::Tick() {
  if (thread_.joinable()) CloseBefore(RealtimeNs());
}

void OtlpSink::Loop() {
  bool failing = false;  // said once per streak of failures
  while (true) {
    Request r;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || closing_; });
      if (queue_.empty() || stop_.load(std::memory_order_relaxed)) return;
      r = std::move(queue_.front());
      queue_.pop_front();
      sending_ = true;
    }
    const otlp::ExportStats before = exporter_->stats();
    const absl::Status s = exporter_->Export(r.request);
    const otlp::ExportStats after = exporter_->stats();
    if (!s.ok() && !failing && !absl::IsCancelled(s)) {
      std::cerr << "ticktrace-collector: " << s.message()
                << "; spans are dropped (otlp_spans_dropped) until it answers\n"
                << std::flush;
    } else if (s.ok() && failing) {
      std::cerr << "ticktrace-collector: otlp " << exporter_->url() << ": answering again\n"
                << std::flush;
    }
    failing = !s.ok();
    std::lock_guard lock(mu_);
    const uint64_t sent = static_cast<uint64_t>(after.spans - before.spans);
    counters_.spans_sent += sent;
    counters_.batches_sent += static_cast<uint64_t>(after.batches - before.batches);
    counters_.retries += static_cast<uint64_t>(after.retries - before.retries);
    if (!s.ok()) {
      counters_.spans_dropped += r.spans - std::min<uint64_t>(r.spans, sent);
      ++counters_.batches_dropped;
    }
    sending_ = false;
    cv_.notify_all();
  }
}

void OtlpSink::Stop() {
  if (!thread_.joinable()) return;
  CloseBefore(std::numeric_limits<int64_t>::max());
  {
    std::unique_lock lock(mu_);
    if (options_.stop_grace_ms > 0) {
      cv_.wait_for(lock, std::chrono::milliseconds(options_.stop_grace_ms),
                   [this] { return queue_.empty() && !sending_; });
    }
    closing_ = true;
  }
  // Relaxed: the exporter polls it; the join below is the synchronisation.
  stop_.store(true, std::memory_order_relaxed);
  cv_.notify_all();
  thread_.join();
  std::lock_guard lock(mu_);
  for (const Request& r : queue_) {
    counters_.spans_dropped += r.spans;
    ++counters_.batches_dropped;
  }
  queue_.clear();
}

OtlpSinkCounters OtlpSink::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace ticktrace::collect
