#include "common/otlp/order_spans.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "ticktrace/version.h"

namespace ticktrace::otlp {
namespace {

// The stamp of `process` nearest to `utc_ns` (a sample's end is the
// difference of two stamps, so its own stamp sits at it); null when the
// order has no stamp of that process.
const OrderStamp* NearestStamp(const std::vector<OrderStamp>& stamps, int64_t process,
                               int64_t utc_ns) {
  const OrderStamp* best = nullptr;
  uint64_t best_gap = 0;
  for (const OrderStamp& s : stamps) {
    if (s.process_id != process) continue;
    const uint64_t gap = s.utc_ns >= utc_ns ? static_cast<uint64_t>(s.utc_ns - utc_ns)
                                            : static_cast<uint64_t>(utc_ns - s.utc_ns);
    if (best == nullptr || gap < best_gap) {
      best = &s;
      best_gap = gap;
    }
  }
  return best;
}

std::string FlagWords(uint32_t flags, const std::vector<FlagName>& names) {
  std::string out;
  for (const FlagName& f : names) {
    if ((flags & f.bit) != 0) out.append(out.empty() ? "" : ",").append(f.name);
  }
  return out;
}

uint64_t UnixNs(int64_t utc_ns) { return utc_ns > 0 ? static_cast<uint64_t>(utc_ns) : 0; }

}  // namespace

int64_t RoundLatencyNs(double ns) {
  if (!std::isfinite(ns)) return 0;
  return std::llround(std::clamp(ns, -9.0e18, 9.0e18));
}

TraceBuilder::TraceBuilder(const TraceContext* context) : context_(context) {
  request_.scope_version = std::string(kVersion);
}

ResourceSpans& TraceBuilder::ResourceOf(int64_t process_id) {
  const auto [it, added] = resource_index_.emplace(process_id, request_.resource_spans.size());
  if (added) {
    ResourceSpans r;
    const auto p = context_->processes.find(process_id);
    r.resource.push_back(StringAttribute(
        "service.name", p != context_->processes.end() && !p->second.name.empty()
                            ? p->second.name
                            : absl::StrCat("process ", process_id)));
    r.resource.push_back(StringAttribute("host.name", context_->run.host));
    if (p != context_->processes.end()) {
      r.resource.push_back(IntAttribute("process.pid", p->second.pid));
    }
    r.resource.push_back(StringAttribute("ticktrace.session", context_->session));
    request_.resource_spans.push_back(std::move(r));
  }
  return request_.resource_spans[it->second];
}

void TraceBuilder::AddProcessAttributes(std::string_view end, int64_t process_id, int64_t tid,
                                        std::vector<KeyValue>* out) const {
  const auto p = context_->processes.find(process_id);
  if (p != context_->processes.end()) {
    out->push_back(StringAttribute(std::string("ticktrace.").append(end).append(".process.name"), p->second.name));
    out->push_back(IntAttribute(std::string("ticktrace.").append(end).append(".process.pid"), p->second.pid));
  }
  if (tid < 0) return;
  out->push_back(IntAttribute(std::string("ticktrace.").append(end).append(".thread.tid"), tid));
  const auto t = context_->threads.find({process_id, tid});
  if (t != context_->threads.end() && !t->second.empty()) {
    out->push_back(StringAttribute(std::string("ticktrace.").append(end).append(".thread.name"), t->second));
  }
}

size_t TraceBuilder::Add(const OrderTrace& order) {
  const std::string key = TraceKey(context_->run, order.order_id, order.instance);
  const TraceId trace_id = TraceIdOf(key);
  const SpanId root_id = RootSpanIdOf(key);
  const std::string order_text = absl::StrCat(order.order_id);

  // Samples by start time, then stage: the order both sides agree on.
  std::vector<const OrderSample*> samples;
  samples.reserve(order.samples.size());
  for (const OrderSample& s : order.samples) samples.push_back(&s);
  std::stable_sort(samples.begin(), samples.end(), [](const OrderSample* a, const OrderSample* b) {
    return a->start_utc_ns != b->start_utc_ns ? a->start_utc_ns < b->start_utc_ns
                                              : a->stage < b->stage;
  });

  Span root;
  root.trace_id = trace_id;
  root.span_id = root_id;
  root.name = "order";
  int64_t root_start = order.first_utc_ns, root_end = order.first_utc_ns;
  if (!samples.empty()) {
    root_start = samples.front()->start_utc_ns;
    root_end = samples.front()->end_utc_ns;
    for (const OrderSample* s : samples) {
      root_start = std::min(root_start, s->start_utc_ns);
      root_end = std::max(root_end, s->end_utc_ns);
    }
  }
  root.start_unix_ns = UnixNs(root_start);
  root.end_unix_ns = UnixNs(std::max(root_start, root_end));
  root.attributes.push_back(StringAttribute("ticktrace.order_id", order_text));
  root.attributes.push_back(IntAttribute("ticktrace.instance", order.instance));
  if (order.parent_order_id.has_value()) {
    const std::string parent_key = TraceKey(context_->run, *order.parent_order_id, 0);
    root.attributes.push_back(
        StringAttribute("ticktrace.parent_order_id", absl::StrCat(*order.parent_order_id)));
    SpanLink link;
    link.trace_id = TraceIdOf(parent_key);
    link.span_id = RootSpanIdOf(parent_key);
    link.attributes.push_back(StringAttribute("ticktrace.link", "parent"));
    root.links.push_back(std::move(link));
  }

  std::vector<Span> children;
  std::map<std::string_view, uint32_t> seen;  // samples of each stage so far
  uint32_t error_flags = 0;
  for (const OrderSample* s : samples) {
    Span c;
    c.trace_id = trace_id;
    c.span_id = StageSpanIdOf(key, s->stage, seen[s->stage]++);
    c.parent_span_id = root_id;
    c.name = s->stage;
    c.start_unix_ns = UnixNs(s->start_utc_ns);
    c.end_unix_ns = UnixNs(s->end_utc_ns);
    c.attributes.push_back(StringAttribute("ticktrace.stage", s->stage));
    c.attributes.push_back(StringAttribute("ticktrace.order_id", order_text));
    c.attributes.push_back(IntAttribute("ticktrace.instance", order.instance));
    const OrderStamp* begin = NearestStamp(order.stamps, s->process_begin, s->start_utc_ns);
    const OrderStamp* end = NearestStamp(order.stamps, s->process_end, s->end_utc_ns);
    AddProcessAttributes("begin", s->process_begin, begin != nullptr ? begin->tid : -1,
                         &c.attributes);
    AddProcessAttributes("end", s->process_end, end != nullptr ? end->tid : -1, &c.attributes);
    if (s->cpu_begin >= 0) c.attributes.push_back(IntAttribute("ticktrace.begin.cpu", s->cpu_begin));
    if (s->cpu_end >= 0) c.attributes.push_back(IntAttribute("ticktrace.end.cpu", s->cpu_end));
    if (!s->begin_clock.empty()) {
      c.attributes.push_back(StringAttribute("ticktrace.begin.clock", s->begin_clock));
    }
    if (!s->end_clock.empty()) {
      c.attributes.push_back(StringAttribute("ticktrace.end.clock", s->end_clock));
    }
    for (const FlagName& f : context_->flag_names) {
      if ((s->flags & f.bit) != 0) {
        c.attributes.push_back(BoolAttribute(std::string("ticktrace.flag.").append(f.name), true));
      }
    }
    if (s->uncertainty_ns.has_value()) {
      c.attributes.push_back(DoubleAttribute("ticktrace.uncertainty_ns", *s->uncertainty_ns));
    }
    if ((s->flags & context_->error_flags) != 0) {
      c.status_code = StatusCode::kError;
      c.status_message = FlagWords(s->flags & context_->error_flags, context_->flag_names);
      error_flags |= s->flags & context_->error_flags;
    }
    ResourceOf(s->process_begin).spans.push_back(std::move(c));
  }
  if (error_flags != 0) {
    root.status_code = StatusCode::kError;
    root.status_message = FlagWords(error_flags, context_->flag_names);
  }
  // The root's process: its first sample's begin, else its earliest stamp's.
  int64_t root_process = -1;
  if (!samples.empty()) {
    root_process = samples.front()->process_begin;
  } else if (!order.stamps.empty()) {
    const OrderStamp* first = &order.stamps.front();
    for (const OrderStamp& s : order.stamps) {
      if (s.utc_ns < first->utc_ns) first = &s;
    }
    root_process = first->process_id;
  }
  ResourceOf(root_process).spans.push_back(std::move(root));
  const size_t added = samples.size() + 1;
  spans_ += added;
  return added;
}

ExportRequest TraceBuilder::Take() {
  ExportRequest out = std::move(request_);
  request_ = ExportRequest{};
  request_.scope_version = std::string(kVersion);
  resource_index_.clear();
  spans_ = 0;
  return out;
}

}  // namespace ticktrace::otlp
