#include "store/common/packed_rows.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ticktrace::store::internal {
namespace {

std::optional<int64_t> Known(int32_t v) {
  if (v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::string RunDictionary::Name(uint32_t id) const {
  if (id < names.size()) return names[id];
  return absl::StrCat("#", id);
}

std::string RunDictionary::Stage(int64_t id) const {
  if (id >= 0 && static_cast<uint64_t>(id) < stages.size()) return stages[id];
  return absl::StrCat("#", id);
}

SampleRow MakeSampleRow(const RunDictionary& dict, const OrderKeyFields& order,
                        const store::PackedDetail& detail, int64_t seq, int64_t stage_id,
                        int64_t latency_ns, uint32_t flags) {
  SampleRow row;
  row.order_id = order.order_id;
  row.instance = order.instance;
  row.stage = dict.Stage(stage_id);
  row.start_utc_ns = order.first_utc_ns;
  row.latency_ns = static_cast<double>(latency_ns);
  row.flags = flags;
  if (seq >= 0 && static_cast<uint64_t>(seq) < detail.samples.size()) {
    const store::PackedSample& s = detail.samples[seq];
    row.start_utc_ns = order.first_utc_ns + s.start_delta_ns;
    row.process_begin = Known(s.process_begin);
    row.process_end = Known(s.process_end);
    row.cpu_begin = Known(s.cpu_begin);
    row.cpu_end = Known(s.cpu_end);
  }
  return row;
}

std::vector<StampRow> MakeStampRows(const RunDictionary& dict, const OrderKeyFields& order,
                                    const store::PackedDetail& detail) {
  std::vector<StampRow> rows;
  rows.reserve(detail.stamps.size());
  const int64_t reference_utc_ns = order.first_utc_ns + detail.first_tsc_utc_delta_ns;
  for (const store::PackedStamp& s : detail.stamps) {
    StampRow r;
    r.order_id = order.order_id;
    r.instance = order.instance;
    r.tag = dict.Name(s.name_id);
    r.kind = s.is_span ? "span" : "stamp";
    r.process_id = s.process_id;
    r.tid = s.tid;
    r.cpu = Known(s.cpu);
    if (s.is_span) {
      r.cpu_end = Known(s.cpu_end);
      r.duration_ns = static_cast<double>(s.duration_ns);
    }
    r.tsc = order.first_tsc + s.tsc_delta;
    const double offset_ns =
        dict.tsc_hz > 0 ? static_cast<double>(s.tsc_delta) * 1e9 / dict.tsc_hz : 0;
    r.utc_ns = reference_utc_ns + std::llround(offset_ns);
    r.flags = s.flags;
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const StampRow& a, const StampRow& b) { return a.tsc < b.tsc; });
  return rows;
}

}  // namespace ticktrace::store::internal
