#include "store/common/reader_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "store/common/window_rows.h"

namespace ticktrace::store::internal {

int64_t FloorTo(int64_t t, int64_t step) {
  const int64_t r = ((t % step) + step) % step;
  return t - r;
}

std::optional<int64_t> StageIdOf(const RunDictionary& dict, const std::string& stage) {
  for (size_t id = 0; id < dict.stages.size(); ++id) {
    if (dict.stages[id] == stage) return static_cast<int64_t>(id);
  }
  return std::nullopt;
}

bool ResolveStageFilter(const RunDictionary& dict, const SampleFilter& filter,
                        std::optional<int64_t>* stage_id) {
  stage_id->reset();
  if (!filter.stage.has_value()) return true;
  *stage_id = StageIdOf(dict, *filter.stage);
  return stage_id->has_value();
}

std::vector<std::string> StageNamesOf(const RunDictionary& dict) {
  std::vector<std::string> names;
  for (const std::string& s : dict.stages) {
    if (!s.empty()) names.push_back(s);
  }
  return names;
}

SampleMatcher::SampleMatcher(const SampleFilter& filter)
    : filter_(filter), processes_(filter.process_ids.begin(), filter.process_ids.end()) {}

bool SampleMatcher::operator()(const SampleRow& r) const {
  if (!processes_.empty() && !(r.process_begin && processes_.count(*r.process_begin)) &&
      !(r.process_end && processes_.count(*r.process_end))) {
    return false;
  }
  if (filter_.since_utc_ns && r.start_utc_ns < *filter_.since_utc_ns) return false;
  if (filter_.until_utc_ns && r.start_utc_ns > *filter_.until_utc_ns) return false;
  return true;
}

void SortByStart(std::vector<SampleRow>::iterator begin, std::vector<SampleRow>::iterator end) {
  std::stable_sort(begin, end, [](const SampleRow& a, const SampleRow& b) {
    return a.start_utc_ns < b.start_utc_ns;
  });
}

absl::StatusOr<PackedDetail> UnpackOrderDetail(std::string_view where, std::string_view blob,
                                               int64_t order_id) {
  absl::StatusOr<PackedDetail> d = UnpackDetail(blob);
  if (!d.ok()) {
    return absl::DataLossError(absl::StrCat(absl::string_view(where.data(), where.size()),
                                            ": order ", order_id, ": ", d.status().message()));
  }
  return d;
}

absl::Status CheckBucket(int64_t bucket_ns, int64_t interval_ns) {
  if (bucket_ns <= 0 || bucket_ns % interval_ns != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the bucket (", bucket_ns,
                                                   " ns) must be a positive multiple of the run's ",
                                                   "interval (", interval_ns, " ns)"));
  }
  return absl::OkStatus();
}

void SetBucketOrders(const std::map<int64_t, BucketOrders>& orders, IntervalRow* row) {
  if (const auto it = orders.find(row->start_utc_ns); it != orders.end()) {
    row->orders = it->second.orders;
    row->orders_kept = it->second.kept;
    row->detail_deleted = it->second.deleted;
  }
}

std::vector<std::pair<std::string, int64_t>> InPipelineOrder(
    std::vector<std::pair<std::string, int64_t>> stages, const std::vector<StageStatsRow>& whole) {
  std::vector<std::pair<StageStatsRow, int64_t>> rows;
  rows.reserve(stages.size());
  for (auto& [name, id] : stages) {
    StageStatsRow r;
    r.stage = std::move(name);
    r.position = PositionIn(whole, r.stage);
    rows.emplace_back(std::move(r), id);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return PipelineOrder()(a.first, b.first); });
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(rows.size());
  for (auto& [row, id] : rows) out.emplace_back(std::move(row.stage), id);
  return out;
}

}  // namespace ticktrace::store::internal

namespace ticktrace::store {

absl::StatusOr<std::optional<OrderRow>> StoreReader::FindOrder(int64_t run_id, int64_t order_id) {
  absl::StatusOr<std::vector<OrderRow>> instances = OrderInstances(run_id, order_id);
  if (!instances.ok()) return instances.status();
  if (instances->empty()) return std::nullopt;
  return std::move(instances->front());
}

}  // namespace ticktrace::store
