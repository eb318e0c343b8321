// Per-minute rollup of the ClickHouse store's intervals (schema 2, table
// intervals_minute; docs/clickhouse.md, "Per-minute rollup"). A viewer window
// of hours in minute buckets reads one row per stage and minute from it
// instead of 60 interval rows (and 60 histograms to merge): the issue-14
// window query.
//
// What the table holds, for each run (the invariant readers rely on):
//  - every minute before the run's *rolled-through* bound holds, in its rows
//    with committed batches (`batch` IN batches), exactly the sums and the
//    merged histograms of the committed intervals rows of that minute. A
//    reader sums the rows of (stage, minute) like interval delta rows;
//  - the bound is the newest committed row's start_utc_ns + 1 minute: each
//    roll writes a row for its last minute (a sentinel row, stage_id
//    kRollupSentinelStage and no samples, when no stage had any);
//  - minutes at or after the bound are read from intervals.
// Who writes it: the collector's ClickHouseWriter (rolls the minutes that
// closed, and writes a late interval delta of an already-rolled minute as a
// delta row here in the same batch), and the schema-1 -> 2 migration
// (EnsureClickHouseSchema, through BackfillMinuteRollup).
//
// Each row also carries its own histogram's p50, p90, p99 and p999
// (RollupPercentiles): a reader of a minute that has one row takes them as
// they are, without the histogram (the same figures it would compute).
//
// Only for runs whose interval divides a minute (intervals never straddle a
// minute); other runs have no rollup rows.
#ifndef TICKTRACE_STORE_CLICKHOUSE_ROLLUP_H_
#define TICKTRACE_STORE_CLICKHOUSE_ROLLUP_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/clickhouse/row_binary.h"
#include "ticktrace/store/flags.h"
#include "ticktrace/store/histogram.h"
#include "store/clickhouse/http_client.h"

namespace ticktrace::store {

inline constexpr int64_t kRollupNs = 60'000'000'000;
// stage_id of a roll's sentinel row (no stage has it; samples_all is 0).
inline constexpr uint32_t kRollupSentinelStage = 0xFFFFFFFFu;

// The minute that holds `utc_ns` (floor).
int64_t RollupMinuteOf(int64_t utc_ns);

// Appends one intervals_minute row: the sums given, `histogram`'s count,
// min, max, sum and encoding, and its percentiles (each unset below
// store::MinSamplesForPercentile, as the viewer's FillFromHistogram).
// The writer's late deltas and BuildMinuteRollup's rows.
void AppendRollupRow(int64_t run_id, uint32_t stage_id, int64_t minute_utc_ns, uint64_t batch,
                     const std::string& stage, uint64_t samples_all,
                     const std::array<uint64_t, kFlagNames.size()>& flag_counts,
                     const Histogram& histogram, RowBinaryWriter* rows);

// Appends to `rows` the intervals_minute rows (batch `batch`) of the
// committed intervals of `run_id` that start in [from_ns, until_ns) (no
// lower bound when from_ns is unset): one row per (stage, minute), counts
// and flags summed, histograms merged, and a sentinel row for until_ns's
// previous minute when it has no row. REQUIRES: until_ns a whole minute.
// Errors: the client's (Unavailable: no server), DataLoss for a histogram
// that does not decode.
absl::Status BuildMinuteRollup(HttpClient& client, const std::string& database, int64_t run_id,
                               std::optional<int64_t> from_ns, int64_t until_ns, uint64_t batch,
                               RowBinaryWriter* rows);

// The run's rolled-through bound (see above); unset when it has no
// committed rollup row.
absl::StatusOr<std::optional<int64_t>> ReadRolledThrough(HttpClient& client,
                                                         const std::string& database,
                                                         int64_t run_id);

// Rolls up every run of `database` that has intervals, a 1-minute-dividing
// interval and no committed rollup row yet, through the minute of its newest
// interval (excluded: a run still written may add to it): rows and then a
// commit row in batches, with a batch id of a generation above all of the
// run's. Idempotent (a run rolled before is skipped; rows of an interrupted
// backfill are uncommitted, ignored by readers and deleted by a resume).
// Called by EnsureClickHouseSchema on a schema-1 store, and by benchmarks
// that build a store without the writer.
absl::Status BackfillMinuteRollup(HttpClient& client, const std::string& database);

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_CLICKHOUSE_ROLLUP_H_
