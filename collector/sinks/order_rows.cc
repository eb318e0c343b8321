#include "collector/sinks/order_rows.h"

#include <utility>

#include "collector/sinks/stage_stats.h"
#include "collector/sinks/utc_segment.h"
#include "ticktrace/store/flags.h"

namespace ticktrace::collect {
namespace {

int32_t RowCpu(uint32_t aux) {
  return aux != abi::kAuxUnknown ? static_cast<int32_t>(abi::AuxCpu(aux)) : -1;
}

}  // namespace

FinishedOrder ToFinishedOrder(const StitchedOrder& o, const StitchView& view) {
  FinishedOrder f;
  f.seq = o.seq;
  FillOrderDetail(o, view, &f.order);
  return f;
}

void FillOrderDetail(const StitchedOrder& o, const StitchView& view, store::OrderDetail* out) {
  const TimeBase& time = *view.time;
  const UtcSegment utc(time, o.chain_start_tsc);
  store::OrderDetail& d = *out;
  d.order_id = o.order_id;
  d.instance = o.instance;
  d.parent_order_id.reset();
  if (o.has_parent) d.parent_order_id = o.parent_order_id;
  d.first_utc_ns = utc.UtcNs(o.chain_start_tsc);
  d.first_tsc = 0;
  d.first_tsc_utc_ns = 0;
  d.total_ns.reset();
  if (o.has_total) {
    d.total_ns = o.total_sample >= 0
                     ? o.samples[static_cast<size_t>(o.total_sample)].LatencyNs(time)
                     : time.DiffNs(o.total_end_tsc, o.total_begin_tsc);
  }
  d.complete = o.complete;
  d.missing.clear();
  for (size_t i = 0; i < o.missing.size(); ++i) {
    if (i > 0) d.missing += ',';
    d.missing += (*view.pipeline)[o.missing[i]];
  }

  d.samples.resize(o.samples.size());
  for (size_t i = 0; i < o.samples.size(); ++i) {
    const StitchedSample& s = o.samples[i];
    store::SampleDetail& r = d.samples[i];
    r.stage = view.stages->StageName(s.stage_id);  // reuses the string's buffer
    r.start_utc_ns = utc.UtcNs(s.begin_tsc);
    r.latency_ns = s.LatencyNs(time);
    r.process_begin = static_cast<int32_t>(s.begin_process);
    r.process_end = static_cast<int32_t>(s.end_process);
    r.cpu_begin = RowCpu(s.begin_aux);
    r.cpu_end = RowCpu(s.end_aux);
    r.flags = s.flags;
  }
  // A late instance (records that came after their order) is told by its
  // stamps' flags (docs/store.md, "Flags").
  const uint32_t late = o.late ? store::kFlagLate : 0;
  d.stamps.resize(o.stamps.size());
  for (size_t i = 0; i < o.stamps.size(); ++i) {
    const StitchedStamp& e = o.stamps[i];
    store::StampDetail& r = d.stamps[i];
    const bool is_span = e.is_span();
    r.tag = view.tag_names->Name(e.name_id);
    r.is_span = is_span;
    r.process_id = e.process_id;
    r.tid = e.tid;
    r.cpu = RowCpu(e.aux);
    r.cpu_end = is_span ? RowCpu(e.end_aux) : -1;
    r.tsc = e.tsc;
    r.utc_ns = utc.UtcNs(e.tsc);
    r.duration_ns = is_span && e.span_sample >= 0
                        ? o.samples[static_cast<size_t>(e.span_sample)].LatencyNs(time)
                        : 0;
    r.flags = e.flags | late;
  }
  d.SetFirstTscFromStamps();
}

}  // namespace ticktrace::collect
