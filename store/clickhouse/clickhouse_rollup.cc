#include "store/clickhouse/clickhouse_rollup.h"

#include <array>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "ticktrace/store/percentiles.h"

namespace ticktrace::store {
// Named (not anonymous): a unity build puts this file beside the writer.
namespace rollup_internal {

struct MinuteSums {
  std::string stage;
  uint64_t samples_all = 0;
  std::array<uint64_t, kFlagNames.size()> flags{};
  Histogram histogram;
};

// The committed-batches filter of one run.
std::string Committed(int64_t run_id) {
  return absl::StrCat(" AND batch IN (SELECT batch FROM batches WHERE run_id = ", run_id, ")");
}

uint64_t ParseUnsigned(const std::string& text) {
  uint64_t v = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v) ? v : 0;
}

}  // namespace rollup_internal

void AppendRollupRow(int64_t run_id, uint32_t stage_id, int64_t minute_utc_ns, uint64_t batch,
                     const std::string& stage, uint64_t samples_all,
                     const std::array<uint64_t, kFlagNames.size()>& flag_counts,
                     const Histogram& histogram, RowBinaryWriter* rows) {
  RowBinaryWriter& b = *rows;
  b.I64(run_id);
  b.U32(stage_id);
  b.I64(minute_utc_ns);
  b.U64(batch);
  b.Str(stage);
  b.U64(samples_all);
  b.U64(histogram.count());
  for (uint64_t f : flag_counts) b.U64(f);
  const bool any = histogram.count() > 0;
  b.Nullable(any ? std::optional<double>(histogram.min()) : std::nullopt);
  b.Nullable(any ? std::optional<double>(histogram.max()) : std::nullopt);
  b.F64(any ? histogram.sum() : 0.0);
  b.Str(histogram.Encode());
  for (double percent : {50.0, 90.0, 99.0, 99.9}) {
    b.Nullable(histogram.count() > 0 && histogram.count() >= MinSamplesForPercentile(percent)
                   ? std::optional<double>(histogram.Quantile(percent / 100))
                   : std::nullopt);
  }
  b.EndRow();
}

int64_t RollupMinuteOf(int64_t utc_ns) {
  const int64_t r = ((utc_ns % kRollupNs) + kRollupNs) % kRollupNs;
  return utc_ns - r;
}

absl::Status BuildMinuteRollup(HttpClient& client, const std::string& database, int64_t run_id,
                               std::optional<int64_t> from_ns, int64_t until_ns, uint64_t batch,
                               RowBinaryWriter* rows) {
  using rollup_internal::MinuteSums;
  std::string flags;
  for (const FlagName& f : kFlagNames) absl::StrAppend(&flags, ", ", std::string(f.name));
  absl::StatusOr<std::string> answer = client.Query(
      absl::StrCat("SELECT stage_id, start_utc_ns, stage, samples_all", flags,
                   ", histogram FROM intervals WHERE run_id = ", run_id,
                   from_ns ? absl::StrCat(" AND start_utc_ns >= ", *from_ns) : "",
                   " AND start_utc_ns < ", until_ns, rollup_internal::Committed(run_id),
                   " FORMAT RowBinary"),
      database);
  if (!answer.ok()) return answer.status();
  std::map<std::pair<uint32_t, int64_t>, MinuteSums> sums;  // by (stage_id, minute)
  RowBinaryCursor c(*answer);
  while (!c.at_end()) {
    const uint32_t stage_id = c.UInt32();
    const int64_t start = c.Int64();
    MinuteSums& m = sums[{stage_id, RollupMinuteOf(start)}];
    m.stage = c.String();
    m.samples_all += c.UInt64();
    for (uint64_t& f : m.flags) f += c.UInt64();
    const std::string_view histogram = c.Bytes();
    if (c.failed()) break;
    if (absl::Status s = m.histogram.MergeEncoded(histogram); !s.ok()) {
      return absl::DataLossError(absl::StrCat(client.where(), "/", database, ": run ", run_id,
                                              ": interval ", start, " of stage ", stage_id, ": ",
                                              s.message()));
    }
  }
  if (c.failed()) {
    return absl::DataLossError(absl::StrCat(client.where(), "/", database,
                                            ": a truncated answer reading intervals of run ",
                                            run_id, " to roll them up"));
  }
  const int64_t last_minute = until_ns - kRollupNs;
  bool last_has_row = false;
  for (const auto& [key, m] : sums) {
    AppendRollupRow(run_id, key.first, key.second, batch, m.stage, m.samples_all, m.flags,
                    m.histogram, rows);
    last_has_row |= key.second == last_minute;
  }
  if (!last_has_row) {
    AppendRollupRow(run_id, kRollupSentinelStage, last_minute, batch, "", 0, {}, Histogram(), rows);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> ReadRolledThrough(HttpClient& client,
                                                         const std::string& database,
                                                         int64_t run_id) {
  absl::StatusOr<std::string> answer = client.Query(
      absl::StrCat("SELECT count(), max(start_utc_ns) FROM intervals_minute WHERE run_id = ",
                   run_id, rollup_internal::Committed(run_id), " FORMAT TabSeparated"),
      database);
  if (!answer.ok()) return answer.status();
  std::vector<std::string> f = absl::StrSplit(absl::StripAsciiWhitespace(*answer), '\t');
  int64_t newest = 0;
  if (f.size() != 2 || rollup_internal::ParseUnsigned(f[0]) == 0 ||
      !absl::SimpleAtoi(f[1], &newest)) {
    return std::optional<int64_t>();
  }
  return std::optional<int64_t>(newest + kRollupNs);
}

absl::Status BackfillMinuteRollup(HttpClient& client, const std::string& database) {
  // Each run with intervals: its interval, newest interval, and the newest
  // batch id anywhere in its rows (as ClickHouseWriter::EstablishGeneration).
  absl::StatusOr<std::string> runs = client.Query(
      "SELECT run_id, max(start_utc_ns), max(batch) FROM intervals GROUP BY run_id "
      "FORMAT TabSeparated",
      database);
  if (!runs.ok()) return runs.status();
  for (absl::string_view line : absl::StrSplit(*runs, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    int64_t run_id = 0, newest = 0;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &run_id) || !absl::SimpleAtoi(f[1], &newest)) {
      continue;
    }
    absl::StatusOr<std::optional<int64_t>> rolled = ReadRolledThrough(client, database, run_id);
    if (!rolled.ok()) return rolled.status();
    if (rolled->has_value()) continue;
    absl::StatusOr<std::string> interval = client.Query(
        absl::StrCat("SELECT interval_ns FROM runs FINAL WHERE run_id = ", run_id,
                     " ORDER BY claim LIMIT 1"),
        database);
    if (!interval.ok()) return interval.status();
    const uint64_t interval_ns = rollup_internal::ParseUnsigned(*interval);
    if (interval_ns == 0 || kRollupNs % static_cast<int64_t>(interval_ns) != 0) continue;
    const int64_t until = RollupMinuteOf(newest);
    absl::StatusOr<std::string> top = client.Query(
        absl::StrCat("SELECT greatest(greatest((SELECT max(batch) FROM batches WHERE run_id = ",
                     run_id, "), (SELECT max(version) FROM counters WHERE run_id = ", run_id,
                     ")), greatest((SELECT max(batch) FROM intervals WHERE run_id = ", run_id,
                     "), (SELECT max(batch) FROM orders WHERE run_id = ", run_id, ")))"),
        database);
    if (!top.ok()) return top.status();
    const uint64_t batch = ((rollup_internal::ParseUnsigned(*top) >> 32) + 1) << 32;
    RowBinaryWriter rows;
    if (absl::Status s =
            BuildMinuteRollup(client, database, run_id, std::nullopt, until, batch, &rows);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            client.Insert("INSERT INTO intervals_minute FORMAT RowBinary", rows.bytes(), database);
        !s.ok()) {
      return s;
    }
    RowBinaryWriter marker;
    marker.I64(run_id);
    marker.U64(batch);
    marker.U64(rows.rows());
    marker.I64(0);
    marker.EndRow();
    if (absl::Status s =
            client.Insert("INSERT INTO batches FORMAT RowBinary", marker.bytes(), database);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace ticktrace::store
