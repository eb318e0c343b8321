// The SQLite StoreReader's window statistics and intervals: `intervals` rows
// merged per stage (Histogram), one index range per stage, bucket order
// counts from interval_detail; no order detail is read (sqlite_reader.h).

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/common/detail.h"
#include "store/common/packed_rows.h"
#include "store/common/reader_common.h"
#include "store/common/window_rows.h"
#include "store/sqlite/sqlite_expand.h"
#include "store/sqlite/sqlite_reader.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_statement.h"
#include "store/sqlite/sqlite_writer.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/names.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store::internal {
namespace sqlite_reader {

// Binds the window's ends (unset: unbounded) to parameters `first` and
// `first` + 1 of a `start_utc_ns >= ? AND start_utc_ns < ?` condition.
void BindWindow(Statement& s, int first, const TimeWindow& window) {
  s.Bind(first, window.since_utc_ns.value_or(kMinTime));
  s.Bind(first + 1, window.until_utc_ns.value_or(kMaxTime));
}

// The columns of `intervals` a reader merges, flag counts in kFlagNames order.
std::string IntervalColumns() {
  std::vector<std::string> flags;
  for (const store::FlagName& f : store::kFlagNames) flags.emplace_back(f.name);
  return absl::StrCat("start_utc_ns, samples_all, count, max_ns, histogram, ",
                      absl::StrJoin(flags, ", "));
}
constexpr int kIntervalFlagColumn = 5;

absl::StatusOr<std::vector<WindowStageStatsRow>> SqliteStoreReader::StageWindowStats(
    int64_t run_id, const TimeWindow& window) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_ASSIGN_OR_RETURN(const DetailCoverage coverage, DetailCompleteness(run_id, window));
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
  std::vector<WindowStageStatsRow> out;
  for (size_t id = 0; id < dict->stages.size(); ++id) {
    if (dict->stages[id].empty()) continue;
    store::Histogram merged;
    WindowStageStatsRow row;
    row.stage = dict->stages[id];
    int64_t intervals = 0;
    TICKTRACE_RETURN_IF_ERROR(ForEachInterval(
        run_id, static_cast<int64_t>(id), window,
        [&](int64_t, int64_t samples_all, const FlagCounts& flags, std::string_view histogram) {
          ++intervals;
          row.samples_all = row.samples_all.value_or(0) + samples_all;
          for (size_t f = 0; f < flags.size(); ++f) row.flag_counts[f] += flags[f];
          return merged.MergeEncoded(histogram);
        }));
    if (intervals == 0 || row.samples_all.value_or(0) == 0) continue;
    FinishWindowRow(merged, whole, coverage, &row);
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), PipelineOrder());
  return out;
}

absl::StatusOr<std::vector<IntervalRow>> SqliteStoreReader::Intervals(
    int64_t run_id, const std::optional<std::string>& stage, const TimeWindow& window,
    int64_t bucket_ns) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_RETURN_IF_ERROR(CheckBucket(bucket_ns, dict->interval_ns));
  // The orders of each bucket, from interval_detail.
  std::map<int64_t, BucketOrders> orders;
  {
    TICKTRACE_ASSIGN_OR_RETURN(
        Statement s, Prepare("SELECT start_utc_ns, orders, orders_kept, detail_deleted FROM "
                             "interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
                             "start_utc_ns < ?",
                             "reading interval_detail"));
    BindWindow(s.Bind(1, run_id), 2, window);
    TICKTRACE_RETURN_IF_ERROR(s.ForEachRow([&] {
      BucketOrders& o = orders[FloorTo(s.Int(0), bucket_ns)];
      o.orders += s.Int(1);
      o.kept += s.Int(2);
      o.deleted = o.deleted || s.Int(3) != 0;
    }));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::vector<StageStatsRow> whole, StageStats(run_id));
  std::vector<std::pair<std::string, int64_t>> stages;
  for (size_t id = 0; id < dict->stages.size(); ++id) {
    if (dict->stages[id].empty() || (stage.has_value() && dict->stages[id] != *stage)) continue;
    stages.emplace_back(dict->stages[id], static_cast<int64_t>(id));
  }
  std::vector<IntervalRow> out;
  for (const auto& [name, id] : InPipelineOrder(std::move(stages), whole)) {
    struct Bucket {
      IntervalRow row;
      store::Histogram histogram;
    };
    std::map<int64_t, Bucket> buckets;
    TICKTRACE_RETURN_IF_ERROR(
        ForEachInterval(run_id, id, window,
                        [&](int64_t start, int64_t samples_all, const FlagCounts& flags,
                            std::string_view histogram) {
                          Bucket& b = buckets[FloorTo(start, bucket_ns)];
                          b.row.samples_all += samples_all;
                          for (size_t f = 0; f < flags.size(); ++f)
                            b.row.flag_counts[f] += flags[f];
                          return b.histogram.MergeEncoded(histogram);
                        }));
    for (auto& [start, b] : buckets) {
      if (b.row.samples_all == 0) continue;
      b.row.stage = name;
      b.row.start_utc_ns = start;
      FillFromHistogram(b.histogram, &b.row);
      SetBucketOrders(orders, &b.row);
      out.push_back(std::move(b.row));
    }
  }
  return out;
}

absl::Status SqliteStoreReader::ForEachIntervalHistogram(
    int64_t run_id, const TimeWindow& window,
    const std::function<absl::Status(const std::string&, int64_t, std::string_view)>& visit) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, true));
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare("SELECT stage_id, start_utc_ns, histogram FROM intervals WHERE "
                           "run_id = ? AND start_utc_ns >= ? AND start_utc_ns < ? AND count > 0 "
                           "ORDER BY start_utc_ns, stage_id",
                           "reading intervals"));
  BindWindow(s.Bind(1, run_id), 2, window);
  const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
    const int64_t id = s.Int(0);
    if (id < 0 || static_cast<size_t>(id) >= dict->stages.size() || dict->stages[id].empty()) {
      return absl::DataLossError(absl::StrCat(path_, ": interval ", s.Int(1), " names stage ", id,
                                              ", which the run's stages do not hold"));
    }
    if (absl::Status st = visit(dict->stages[id], s.Int(1), s.Blob(2)); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat(path_, ": interval ", s.Int(1), " of stage ",
                                                  dict->stages[id], ": ", st.message()));
    }
    return absl::OkStatus();
  });
  TICKTRACE_RETURN_IF_ERROR(walked);
  return absl::OkStatus();
}

absl::StatusOr<DetailCoverage> SqliteStoreReader::DetailCompleteness(int64_t run_id,
                                                                     const TimeWindow& window) {
  TICKTRACE_ASSIGN_OR_RETURN(const RunDictionary* dict, Dictionary(run_id, false));
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s,
      Prepare("SELECT count(*), sum(orders), sum(orders_kept), sum(detail_deleted != 0) "
              "FROM interval_detail WHERE run_id = ? AND start_utc_ns >= ? AND "
              "start_utc_ns < ? AND orders > 0",
              "reading interval_detail"));
  BindWindow(s.Bind(1, run_id), 2, window);
  DetailCoverage c;
  c.policy = dict->detail_policy;
  TICKTRACE_ASSIGN_OR_RETURN(const bool row, s.Step());
  if (row) {
    c.intervals = s.Int(0);
    c.orders = s.Int(1);
    c.orders_kept = s.Int(2);
    c.intervals_deleted = s.Int(3);
  }
  return c;
}

absl::Status SqliteStoreReader::ForEachInterval(
    int64_t run_id, int64_t stage_id, const TimeWindow& window,
    const std::function<absl::Status(int64_t, int64_t, const FlagCounts&, std::string_view)>&
        visit) {
  TICKTRACE_ASSIGN_OR_RETURN(
      Statement s, Prepare(absl::StrCat("SELECT ", IntervalColumns(),
                                        " FROM intervals WHERE run_id = ? AND stage_id = ? AND "
                                        "start_utc_ns >= ? AND start_utc_ns < ? "
                                        "ORDER BY start_utc_ns"),
                           "reading intervals"));
  BindWindow(s.Bind(1, run_id).Bind(2, stage_id), 3, window);
  FlagCounts flags{};
  const absl::Status walked = s.ForEachRow([&]() -> absl::Status {
    for (size_t f = 0; f < flags.size(); ++f) {
      flags[f] = s.Int(kIntervalFlagColumn + static_cast<int>(f));
    }
    if (absl::Status st = visit(s.Int(0), s.Int(1), flags, s.Blob(4)); !st.ok()) {
      return absl::DataLossError(
          absl::StrCat(path_, ": interval ", s.Int(0), " of stage ", stage_id, ": ", st.message()));
    }
    return absl::OkStatus();
  });
  TICKTRACE_RETURN_IF_ERROR(walked);
  return absl::OkStatus();
}

}  // namespace sqlite_reader
}  // namespace ticktrace::store::internal
