#include "collector/sinks/order_rows.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "collector/sinks/stage_stats.h"

namespace ticktrace::collect {
namespace {

int32_t RowCpu(uint32_t aux) {
  return aux != abi::kAuxUnknown ? static_cast<int32_t>(abi::AuxCpu(aux)) : -1;
}

}  // namespace

FinishedOrder ToFinishedOrder(const StitchedOrder& o, const StitchView& view) {
  const TimeBase& time = *view.time;
  FinishedOrder f;
  f.seq = o.seq;
  f.order.order_id = o.order_id;
  f.order.instance = o.instance;
  f.order.late = o.late;
  f.order.has_parent = o.has_parent;
  f.order.parent_order_id = o.parent_order_id;
  f.order.first_utc_ns = time.UtcNs(o.chain_start_tsc);
  f.order.has_total = o.has_total;
  if (o.has_total) {
    f.order.total_ns = o.total_sample >= 0
                           ? o.samples[static_cast<size_t>(o.total_sample)].LatencyNs(time)
                           : time.DiffNs(o.total_end_tsc, o.total_begin_tsc);
  }
  f.order.complete = o.complete;
  std::vector<absl::string_view> names;
  names.reserve(o.missing.size());
  for (uint32_t pos : o.missing) names.push_back((*view.pipeline)[pos]);
  f.order.missing = absl::StrJoin(names, ",");

  f.samples.reserve(o.samples.size());
  for (const StitchedSample& s : o.samples) {
    SampleRow& r = f.samples.emplace_back();
    r.order_id = o.order_id;
    r.instance = o.instance;
    r.stage = view.stages->StageName(s.stage_id);
    r.start_utc_ns = time.UtcNs(s.begin_tsc);
    r.latency_ns = s.LatencyNs(time);
    r.process_begin = static_cast<int32_t>(s.begin_process);
    r.process_end = static_cast<int32_t>(s.end_process);
    r.cpu_begin = RowCpu(s.begin_aux);
    r.cpu_end = RowCpu(s.end_aux);
    r.flags = s.flags;
  }
  f.stamps.reserve(o.stamps.size());
  for (const StitchedStamp& e : o.stamps) {
    const bool is_span = e.is_span();
    StampRow& st = f.stamps.emplace_back();
    st.order_id = o.order_id;
    st.instance = o.instance;
    st.tag = view.tag_names->Name(e.name_id);
    st.is_span = is_span;
    st.process_id = e.process_id;
    st.tid = e.tid;
    st.cpu = RowCpu(e.aux);
    st.cpu_end = is_span ? RowCpu(e.end_aux) : -1;
    st.tsc = e.tsc;
    st.utc_ns = time.UtcNs(e.tsc);
    st.duration_ns = is_span && e.span_sample >= 0
                         ? o.samples[static_cast<size_t>(e.span_sample)].LatencyNs(time)
                         : 0;
    st.flags = e.flags;
  }
  return f;
}

}  // namespace ticktrace::collect
