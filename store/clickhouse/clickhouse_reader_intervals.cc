// The ClickHouse StoreReader's window statistics and intervals: delta rows
// summed per stage or bucket in SQL, histograms merged here, whole minutes
// from the per-minute rollup where it has them (clickhouse_reader.h).

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/clickhouse/clickhouse_reader.h"
#include "store/clickhouse/clickhouse_rollup.h"
#include "store/clickhouse/clickhouse_schema.h"
#include "store/clickhouse/http_client.h"
#include "store/clickhouse/row_binary.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace clickhouse_reader {

// A bucket's sums, and its histograms merged. `figures`: a one-minute
// bucket that is one rollup row, read as the row has them (the
// percentiles of its histogram, computed when it was written: the same
// figures, without 140 kB of histogram per bucket).
struct BucketSums {
  int64_t samples_all = 0;
  FlagCounts flags{};
  std::unique_ptr<store::Histogram> histogram;  // made at the first merge
  std::optional<IntervalRow> figures;
};

// The buckets of one Intervals() answer, by (stage_id, bucket), as the rows
// of `intervals` and of the rollup add to them.
class IntervalBuckets {
 public:
  IntervalBuckets(const std::string& uri, int64_t bucket_ns) : uri_(uri), bucket_ns_(bucket_ns) {}

  // Reads (stage_id, bucket, samples_all, flags..., histograms); the
  // rollup's rows first give (rows, count, min, max, sum, p50..p999).
  void Add(RowBinaryCursor& c, bool rollup) {
    const int64_t id = c.Int64();
    const int64_t b = c.Int64();
    BucketSums& sum = sums_[{id, b}];
    sum.samples_all += c.Int64();
    const FlagCounts flags = ReadFlags(c);
    for (size_t f = 0; f < flags.size(); ++f) sum.flags[f] += flags[f];
    if (rollup) {
      const int64_t rows = c.Int64();
      IntervalRow r;
      r.count = c.Int64();
      r.min_ns = c.NullableFloat64();
      r.max_ns = c.NullableFloat64();
      const double sum_ns = c.Float64();
      r.p50_ns = c.NullableFloat64();
      r.p90_ns = c.NullableFloat64();
      r.p99_ns = c.NullableFloat64();
      r.p999_ns = c.NullableFloat64();
      if (r.count > 0) r.mean_ns = sum_ns / static_cast<double>(r.count);
      if (rows == 1 && bucket_ns_ == store::kRollupNs) sum.figures = std::move(r);
    }
    for (std::string_view h : c.BytesArray()) {
      if (sum.histogram == nullptr) sum.histogram = std::make_unique<store::Histogram>();
      if (absl::Status s = sum.histogram->MergeEncoded(h); !s.ok() && merge_status_.ok()) {
        merge_status_ = absl::DataLossError(
            absl::StrCat(uri_, ": interval ", b, " of stage ", id, ": ", s.message()));
      }
    }
  }

  // The first histogram that did not merge, if any.
  const absl::Status& merge_status() const { return merge_status_; }

  // The buckets with samples as rows, by stage id, each stage's by bucket.
  std::map<int64_t, std::vector<IntervalRow>> Rows(const RunDictionary& dict,
                                                   const std::map<int64_t, BucketOrders>& orders) {
    std::map<int64_t, std::vector<IntervalRow>> by_stage;
    const store::Histogram empty;
    for (auto& [key, sum] : sums_) {
      if (sum.samples_all == 0) continue;
      IntervalRow row;
      if (sum.figures.has_value() && sum.histogram == nullptr) row = *std::move(sum.figures);
      row.start_utc_ns = key.second;
      row.samples_all = sum.samples_all;
      row.flag_counts = sum.flags;
      row.stage = dict.Stage(key.first);
      if (!sum.figures.has_value() || sum.histogram != nullptr) {
        FillFromHistogram(sum.histogram != nullptr ? *sum.histogram : empty, &row);
      }
      SetBucketOrders(orders, &row);
      by_stage[key.first].push_back(std::move(row));
    }
    return by_stage;
  }

 private:
  const std::string& uri_;
  int64_t bucket_ns_;
  std::map<std::pair<int64_t, int64_t>, BucketSums> sums_;
  absl::Status merge_status_;
};

absl::StatusOr<std::vector<WindowStageStatsRow>> ClickHouseStoreReader::StageWindowStats(
    int64_t run_id, const TimeWindow& window) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_ASSIGN_OR_RETURN(const DetailCoverage coverage, DetailCompleteness(run_id, window));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
  std::vector<WindowStageStatsRow> out;
  absl::Status merge_status;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(stage_id), toInt64(sum(samples_all)), ", SummedFlagColumns(),
                   ", groupArray(histogram) FROM intervals WHERE run_id = ", run_id,
                   WindowClause("start_utc_ns", window), " GROUP BY stage_id ORDER BY stage_id"),
      "reading intervals", [&](RowBinaryCursor& c) {
        const int64_t id = c.Int64();
        WindowStageStatsRow row;
        row.samples_all = c.Int64();
        row.flag_counts = ReadFlags(c);
        store::Histogram merged;
        for (std::string_view h : c.BytesArray()) {
          if (absl::Status s = merged.MergeEncoded(h); !s.ok() && merge_status.ok()) {
            merge_status = absl::DataLossError(
                absl::StrCat(uri_, ": an interval of stage ", id, ": ", s.message()));
          }
        }
        if (row.samples_all.value_or(0) == 0) return;
        row.stage = dict->Stage(id);
        FinishWindowRow(merged, whole, coverage, &row);
        out.push_back(std::move(row));
      }));
  TICKTRACE_RETURN_IF_ERROR(merge_status);
  std::stable_sort(out.begin(), out.end(), PipelineOrder());
  return out;
}

absl::StatusOr<std::map<int64_t, BucketOrders>> ClickHouseStoreReader::BucketOrdersOf(
    int64_t run_id, const std::string& bucket_sql, const TimeWindow& window) {
  std::map<int64_t, BucketOrders> orders;
  TICKTRACE_RETURN_IF_ERROR(
      ForEachRow(absl::StrCat("SELECT ", bucket_sql,
                              " AS b, toInt64(sum(orders)), toInt64(sum(orders_kept)), "
                              "max(detail_deleted) FROM interval_detail WHERE run_id = ",
                              run_id, WindowClause("start_utc_ns", window), " GROUP BY b"),
                 "reading interval_detail", [&](RowBinaryCursor& c) {
                   BucketOrders& o = orders[c.Int64()];
                   o.orders = c.Int64();
                   o.kept = c.Int64();
                   o.deleted = c.UInt8() != 0;
                 }));
  return orders;
}

absl::StatusOr<std::optional<std::pair<int64_t, int64_t>>> ClickHouseStoreReader::RolledRange(
    int64_t run_id, const TimeWindow& window, int64_t bucket_ns, int64_t interval_ns) {
  std::optional<std::pair<int64_t, int64_t>> rolled;  // [from, until)
  if (version_ < 2 || bucket_ns % store::kRollupNs != 0 || store::kRollupNs % interval_ns != 0) {
    return rolled;
  }
  absl::StatusOr<std::optional<int64_t>> through =
      store::ReadRolledThrough(*client_, database_, run_id);
  if (!through.ok()) {
    return absl::Status(through.status().code(),
                        absl::StrCat(uri_, ": reading the rollup: ", through.status().message()));
  }
  if (through->has_value()) {
    const int64_t from = window.since_utc_ns
                             ? store::RollupMinuteOf(*window.since_utc_ns + (store::kRollupNs - 1))
                             : kMinTime;
    int64_t until = **through;
    if (window.until_utc_ns) until = std::min(until, store::RollupMinuteOf(*window.until_utc_ns));
    if (from < until) rolled.emplace(from, until);
  }
  return rolled;
}

absl::Status ClickHouseStoreReader::ReadBuckets(
    int64_t run_id, const std::string& bucket_sql, std::optional<int64_t> only,
    const TimeWindow& window, const std::optional<std::pair<int64_t, int64_t>>& rolled,
    int64_t bucket_ns, IntervalBuckets* buckets) {
  const std::string stage_clause = only ? absl::StrCat(" AND stage_id = ", *only) : "";
  // The rolled-up range as a condition (no lower bound: none written).
  const std::string rolled_range =
      rolled ? absl::StrCat(rolled->first == kMinTime
                                ? std::string("1")
                                : absl::StrCat("start_utc_ns >= ", rolled->first),
                            " AND start_utc_ns < ", rolled->second)
             : "";
  const std::string columns =
      absl::StrCat("SELECT toInt64(stage_id), ", bucket_sql, " AS b, toInt64(sum(samples_all)), ",
                   SummedFlagColumns(), ", ");
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat(columns, "groupArray(histogram) FROM intervals WHERE run_id = ", run_id,
                   stage_clause, WindowClause("start_utc_ns", window),
                   rolled ? absl::StrCat(" AND NOT (", rolled_range, ")") : "",
                   " GROUP BY stage_id, b"),
      "reading intervals", [&](RowBinaryCursor& c) { buckets->Add(c, false); }));
  if (rolled) {
    // Histograms only where the figures of one row will not do.
    const bool one_minute = bucket_ns == store::kRollupNs;
    TICKTRACE_RETURN_IF_ERROR(ForEachRow(
        absl::StrCat(columns,
                     "toInt64(count()) AS n, toInt64(sum(count)), min(min_ns), max(max_ns), "
                     "sum(sum_ns), any(p50_ns), any(p90_ns), any(p99_ns), any(p999_ns), ",
                     one_minute ? "if(n = 1, emptyArrayString(), groupArray(histogram))"
                                : "groupArray(histogram)",
                     " FROM intervals_minute WHERE run_id = ", run_id, stage_clause,
                     " AND stage_id != ", store::kRollupSentinelStage, " AND ", rolled_range,
                     " AND batch IN (SELECT batch FROM batches WHERE run_id = ", run_id,
                     ") GROUP BY stage_id, b"),
        "reading the per-minute rollup", [&](RowBinaryCursor& c) { buckets->Add(c, true); }));
  }
  return buckets->merge_status();
}

absl::StatusOr<std::vector<IntervalRow>> ClickHouseStoreReader::Intervals(
    int64_t run_id, const std::optional<std::string>& stage, const TimeWindow& window,
    int64_t bucket_ns) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_RETURN_IF_ERROR(CheckBucket(bucket_ns, dict->interval_ns));
  std::optional<int64_t> only;
  if (stage.has_value()) {
    only = StageIdOf(*dict, *stage);
    if (!only.has_value()) return std::vector<IntervalRow>();
  }
  // Buckets start at multiples of bucket_ns (intervals start at multiples
  // of interval_ns, so a bucket holds whole intervals).
  const std::string bucket = absl::StrCat("(start_utc_ns - ((start_utc_ns % ", bucket_ns, ") + ",
                                          bucket_ns, ") % ", bucket_ns, ")");
  TICKTRACE_ASSIGN_OR_RETURN(const auto orders, BucketOrdersOf(run_id, bucket, window));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
  // Whole minutes below the run's rolled-through bound come from the
  // per-minute rollup (schema 2, clickhouse_rollup.h: the same sums
  // and merged histograms, 60 times fewer rows), the rest of the window
  // from intervals; a bucket may take rows from both.
  TICKTRACE_ASSIGN_OR_RETURN(const auto rolled,
                             RolledRange(run_id, window, bucket_ns, dict->interval_ns));
  IntervalBuckets buckets(uri_, bucket_ns);
  TICKTRACE_RETURN_IF_ERROR(ReadBuckets(run_id, bucket, only, window, rolled, bucket_ns, &buckets));
  std::map<int64_t, std::vector<IntervalRow>> by_stage = buckets.Rows(*dict, orders);
  std::vector<std::pair<std::string, int64_t>> stages;
  for (const auto& [id, rows] : by_stage) stages.emplace_back(dict->Stage(id), id);
  std::vector<IntervalRow> out;
  for (const auto& [name, id] : InPipelineOrder(std::move(stages), whole)) {
    for (IntervalRow& r : by_stage[id]) out.push_back(std::move(r));
  }
  return out;
}

absl::Status ClickHouseStoreReader::ForEachIntervalHistogram(
    int64_t run_id, const TimeWindow& window,
    const std::function<absl::Status(const std::string&, int64_t, std::string_view)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  // Several delta rows may share (stage, start): merged and encoded again.
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::string body,
      Select(absl::StrCat("SELECT toInt64(stage_id), start_utc_ns, groupArray(histogram) FROM "
                          "intervals WHERE run_id = ",
                          run_id, WindowClause("start_utc_ns", window),
                          " GROUP BY stage_id, start_utc_ns HAVING sum(count) > 0 "
                          "ORDER BY start_utc_ns, stage_id"),
             "reading intervals"));
  RowBinaryCursor c(body);
  while (!c.at_end()) {
    const int64_t id = c.Int64();
    const int64_t start = c.Int64();
    const std::vector<std::string_view> parts = c.BytesArray();
    if (c.failed()) return Truncated("reading intervals");
    if (id < 0 || static_cast<size_t>(id) >= dict->stages.size() || dict->stages[id].empty()) {
      return absl::DataLossError(absl::StrCat(uri_, ": interval ", start, " names stage ", id,
                                              ", which the run's stages do not hold"));
    }
    std::string merged_bytes;
    std::string_view encoded = parts.empty() ? std::string_view() : parts.front();
    if (parts.size() > 1) {
      store::Histogram merged;
      for (std::string_view h : parts) {
        if (absl::Status s = merged.MergeEncoded(h); !s.ok()) {
          return absl::DataLossError(absl::StrCat(uri_, ": interval ", start, " of stage ",
                                                  dict->stages[id], ": ", s.message()));
        }
      }
      merged_bytes = merged.Encode();
      encoded = merged_bytes;
    }
    if (absl::Status st = visit(dict->stages[id], start, encoded); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat(uri_, ": interval ", start, " of stage ",
                                                  dict->stages[id], ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DetailCoverage> ClickHouseStoreReader::DetailCompleteness(int64_t run_id,
                                                                         const TimeWindow& window) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  DetailCoverage c;
  c.policy = dict->detail_policy;
  TICKTRACE_RETURN_IF_ERROR(ForEachRow(
      absl::StrCat("SELECT toInt64(count()), toInt64(sum(o)), toInt64(sum(k)), "
                   "toInt64(sum(d != 0)) FROM (SELECT start_utc_ns, sum(orders) AS o, "
                   "sum(orders_kept) AS k, max(detail_deleted) AS d FROM interval_detail "
                   "WHERE run_id = ",
                   run_id, WindowClause("start_utc_ns", window),
                   " GROUP BY start_utc_ns) WHERE o > 0"),
      "reading interval_detail", [&](RowBinaryCursor& r) {
        c.intervals = r.Int64();
        c.orders = r.Int64();
        c.orders_kept = r.Int64();
        c.intervals_deleted = r.Int64();
      }));
  return c;
}

}  // namespace clickhouse_reader
}  // namespace ticktrace::store::internal
