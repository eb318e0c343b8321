// What the SQLite and ClickHouse readers (store/sqlite/sqlite_reader.h,
// store/clickhouse/clickhouse_reader.h) do alike before and after their
// queries: time bounds, stage lookups in a run's dictionary, the sample
// filter, the order samples are returned in, the bucket rule and the
// bookkeeping of Intervals(). What they do alike with merged histograms is
// in window_rows.h. Private to the store library.
#ifndef TICKTRACE_STORE_COMMON_READER_COMMON_H_
#define TICKTRACE_STORE_COMMON_READER_COMMON_H_

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "ticktrace/store/reader.h"

namespace ticktrace::store::internal {

// The ends of an unbounded window.
constexpr int64_t kMinTime = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxTime = std::numeric_limits<int64_t>::max();

// `t` rounded down to a multiple of `step` (also for negative `t`).
// REQUIRES: step > 0.
int64_t FloorTo(int64_t t, int64_t step);

// The id of `stage` in the run's stages table, nullopt when it has none.
std::optional<int64_t> StageIdOf(const RunDictionary& dict, const std::string& stage);

// The stage `filter` names as the run's stage id in `*stage_id` (nullopt when
// it names none: every stage passes). False when the run has no such stage,
// so that no sample can match.
bool ResolveStageFilter(const RunDictionary& dict, const SampleFilter& filter,
                        std::optional<int64_t>* stage_id);

// The run's stage names, by stage id, without the gaps of unknown ids.
std::vector<std::string> StageNamesOf(const RunDictionary& dict);

// Whether a sample passes a SampleFilter's processes and time bounds (its
// stage is the query's business).
class SampleMatcher {
 public:
  explicit SampleMatcher(const SampleFilter& filter);
  bool operator()(const SampleRow& r) const;

 private:
  const SampleFilter& filter_;
  std::set<int64_t> processes_;
};

// Samples by start time, keeping the order of equal starts.
void SortByStart(std::vector<SampleRow>::iterator begin, std::vector<SampleRow>::iterator end);
inline void SortByStart(std::vector<SampleRow>* rows) { SortByStart(rows->begin(), rows->end()); }

// The packed detail of an order, or DataLoss naming `where` (the store) and
// the order.
absl::StatusOr<PackedDetail> UnpackOrderDetail(std::string_view where, std::string_view blob,
                                               int64_t order_id);

// OK when Intervals() may use `bucket_ns`: a positive multiple of the run's
// interval, so that a bucket holds whole intervals.
absl::Status CheckBucket(int64_t bucket_ns, int64_t interval_ns);

// One bucket's orders (interval_detail summed): every stage's row shares them.
struct BucketOrders {
  int64_t orders = 0, kept = 0;
  bool deleted = false;
};

// Sets the row's order counts from its bucket's, when interval_detail has it.
void SetBucketOrders(const std::map<int64_t, BucketOrders>& orders, IntervalRow* row);

// (stage name, stage id) pairs in pipeline order (window_rows.h,
// PipelineOrder: stage_stats position of the whole run, `total` last).
std::vector<std::pair<std::string, int64_t>> InPipelineOrder(
    std::vector<std::pair<std::string, int64_t>> stages, const std::vector<StageStatsRow>& whole);

}  // namespace ticktrace::store::internal

#endif  // TICKTRACE_STORE_COMMON_READER_COMMON_H_
