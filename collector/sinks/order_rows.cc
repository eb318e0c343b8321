#include "collector/sinks/order_rows.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "collector/sinks/stage_stats.h"
#include "ticktrace/store/flags.h"

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
  store::OrderDetail& d = f.order;
  d.order_id = o.order_id;
  d.instance = o.instance;
  if (o.has_parent) d.parent_order_id = o.parent_order_id;
  d.first_utc_ns = time.UtcNs(o.chain_start_tsc);
  if (o.has_total) {
    d.total_ns = o.total_sample >= 0
                     ? o.samples[static_cast<size_t>(o.total_sample)].LatencyNs(time)
                     : time.DiffNs(o.total_end_tsc, o.total_begin_tsc);
  }
  d.complete = o.complete;
  std::vector<absl::string_view> names;
  names.reserve(o.missing.size());
  for (uint32_t pos : o.missing) names.push_back((*view.pipeline)[pos]);
  d.missing = absl::StrJoin(names, ",");

  d.samples.reserve(o.samples.size());
  for (const StitchedSample& s : o.samples) {
    d.samples.push_back(store::SampleDetail{
        .stage = view.stages->StageName(s.stage_id),
        .start_utc_ns = time.UtcNs(s.begin_tsc),
        .latency_ns = s.LatencyNs(time),
        .process_begin = static_cast<int32_t>(s.begin_process),
        .process_end = static_cast<int32_t>(s.end_process),
        .cpu_begin = RowCpu(s.begin_aux),
        .cpu_end = RowCpu(s.end_aux),
        .flags = s.flags,
    });
  }
  // A late instance (records that came after their order) is told by its
  // stamps' flags (docs/store.md, "Flags").
  const uint32_t late = o.late ? store::kFlagLate : 0;
  d.stamps.reserve(o.stamps.size());
  for (const StitchedStamp& e : o.stamps) {
    const bool is_span = e.is_span();
    d.stamps.push_back(store::StampDetail{
        .tag = view.tag_names->Name(e.name_id),
        .is_span = is_span,
        .process_id = e.process_id,
        .tid = e.tid,
        .cpu = RowCpu(e.aux),
        .cpu_end = is_span ? RowCpu(e.end_aux) : -1,
        .tsc = e.tsc,
        .utc_ns = time.UtcNs(e.tsc),
        .duration_ns = is_span && e.span_sample >= 0
                           ? o.samples[static_cast<size_t>(e.span_sample)].LatencyNs(time)
                           : 0,
        .flags = e.flags | late,
    });
  }
  d.SetFirstTscFromStamps();
  return f;
}

}  // namespace ticktrace::collect
