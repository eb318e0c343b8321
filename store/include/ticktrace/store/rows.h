// Plain rows of a ticktrace store (docs/store.md): one type per table, the
// one the writers (writer.h) fill and the readers (reader.h) return. Where
// the two sides use different fields of a row, its comment says which.
// Order detail is the exception: writers take it as OrderDetail
// (store/common/detail.h, packed on disk), readers return it as the
// SampleRow, OrderRow and StampRow below.
//
// Nullable columns are std::optional. The rows carry no behaviour: the
// reports that use them live in their own files (viewer/views/...).
#ifndef TICKTRACE_STORE_ROWS_H_
#define TICKTRACE_STORE_ROWS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ticktrace/store/flags.h"
#include "ticktrace/store/names.h"

namespace ticktrace::store {

// The store's flag bits and stage naming (store/include/ticktrace/store/flags.h and
// names.h: the one definition; docs/store.md, "Flags").
using store::kFlagCrossCore;
using store::kFlagCrossHost;
using store::kFlagLate;
using store::kFlagMigrated;
using store::kFlagNegative;
using store::kFlagOutOfOrder;
using store::kFlagSaturated;
using store::kFlagSkew;
using store::kFlagsExcludedByDefault;

// One row of `runs` as a reader returns it. A writer begins a run from a
// RunMeta (writer.h) instead: that one has no run_id or end yet, takes the
// detail policy as a DetailPolicy, and defaults to what a collector writes
// (1 s intervals, empty JSON), where this row defaults to "not stored".
struct RunRow {
  int64_t run_id = 0;
  std::string session;
  std::string host;
  int64_t started_utc_ns = 0;
  std::optional<int64_t> ended_utc_ns;  // unset while the collector runs
  double tsc_hz = 0;
  std::string calibration_source;
  std::optional<double> spread_ppm;
  std::optional<double> kernel_tsc_hz;
  std::optional<double> tsc_step_ns;
  int64_t anchor_tsc = 0;
  int64_t anchor_utc_ns = 0;
  std::string environment;  // JSON array, as stored
  std::string settings;     // JSON object, as stored
  std::string pipeline;     // comma-separated stage tags
  bool pipeline_learned = false;
  // How far CLOCK_REALTIME ran from the TSC over the run (anchors), in ppm;
  // unset in stores written before anchors, or with one anchor.
  std::optional<double> utc_drift_ppm;
  // runs.interval_ns: the length of the run's intervals (interval
  // statistics); 0 when the backend does not say.
  int64_t interval_ns = 0;
  // runs.clock_error_ns: the host's clock-sync error bound (chrony, ptp4l or
  // --clock-error-ns; docs/clickhouse.md); unset when unknown or not stored.
  std::optional<double> clock_error_ns;
};

// A core's TSC offset against the run's reference core (table cores): the
// true offset is within offset_ns +- bound_ns. Written and read alike.
struct CoreRow {
  int64_t cpu = 0;
  int64_t measured_utc_ns = 0;
  double offset_ns = 0;
  double bound_ns = 0;
  bool consistent = true;  // the measurement's rounds agreed
};

// One row of `processes`. The collector's analysis fills every field and the
// writers store them; readers fill all but start_ticks and the three counts
// after exited_utc_ns (the viewer needs no more) and leave those 0.
struct ProcessRow {
  uint32_t process_id = 0;  // per-run number, not the OS pid
  uint32_t pid = 0;
  uint64_t start_ticks = 0;  // the segment's start stamp: tells a reused segment name apart
  std::string name;
  std::string segment;
  int64_t first_seen_utc_ns = 0;  // read: 0 when the store has none (NULL)
  std::optional<int64_t> exited_utc_ns;  // unset while it runs
  uint64_t tags_rejected = 0;
  uint64_t threads_without_slot = 0;
  uint64_t slotless_dropped = 0;
};

// One row of `threads`: a ring slot's thread of one generation.
struct ThreadRow {
  uint32_t process_id = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint32_t tid = 0;
  std::string name;
  uint64_t drained = 0;
  uint64_t dropped = 0;
};

// One row of `tags`: a process's tag id and the name it published.
// A diagnostic the collector said about a run (table run_notes), e.g. that
// its session had no segment or its declared pipeline looks wrong; one per
// kind ("empty_session", "unseen_tags", "pipeline_order").
struct RunNote {
  std::string kind;
  std::string text;  // the line as the collector printed it
  bool operator==(const RunNote&) const = default;
};

// A clock other than the TSC that read one end of a stage's samples (table
// stage_clocks): "realtime", "phc" or "exchange" (stamp_at, docs/api.md
// "Timestamps from other clocks"). A stage's samples with such an end are
// flagged external; this names their clock. One row per stage, end and clock.
struct StageClockRow {
  std::string stage;
  std::string side;  // "begin" or "end": the stamp it names (a of "a->b", or b)
  std::string clock;
  bool operator==(const StageClockRow&) const = default;
};

// A closed interval whose figure broke a latency budget (common/budget.h),
// as the collector judged it (table budget_breaches): one row per budget
// and interval.
struct BudgetBreachRow {
  std::string budget;  // as given, e.g. "decide:p99<20us"
  std::string stage;
  std::string stat;    // "p99", "p99.9", "max"
  int64_t interval_start_utc_ns = 0;
  int64_t limit_ns = 0;
  double measured_ns = 0;  // the interval's figure
  int64_t samples = 0;     // in the interval's percentiles
  bool operator==(const BudgetBreachRow&) const = default;
};

struct TagRow {
  uint32_t process_id = 0;
  uint32_t tag_id = 0;
  std::string name;
};

// Flag counts in store::kFlagNames order (migrated, negative, cross_core,
// saturated, skew, out_of_order, late, cross_host).
using FlagCounts = std::array<int64_t, kFlagNames.size()>;

// The index of `bit` in store::kFlagNames.
constexpr size_t FlagIndex(uint32_t bit) {
  for (size_t i = 0; i < kFlagNames.size(); ++i) {
    if (kFlagNames[i].bit == bit) return i;
  }
  return kFlagNames.size();
}

// One row of `stage_stats`: one stage's statistics over the whole run (the
// merge of its intervals), as the collector writes them and a reader returns
// them; a window's statistics extend it (reader.h, WindowStageStatsRow).
struct StageStatsRow {
  std::string stage;
  int64_t position = 0;
  int64_t count = 0;  // samples in the percentiles
  // Every sample; unset when read from a store written before the column.
  std::optional<int64_t> samples_all;
  std::optional<double> min_ns, max_ns, mean_ns;
  std::optional<double> p50_ns, p90_ns, p99_ns, p999_ns;  // unset: too few samples
  // By kFlagNames order. A flag column a store lacks (written before it)
  // reads 0. The whole run's rows count six flags: saturated and cross_host
  // are 0 as written (the collector's summary does not count them) and not
  // read; a window's row has all eight, from the intervals.
  FlagCounts flag_counts{};
  bool include_flagged = false;
  // The largest uncertainty of a cross-core sample (sum of its cores'
  // bounds); unset when none was cross-core or offsets were not measured.
  std::optional<double> uncertainty_ns;

  // The count of one flag. REQUIRES: `bit` is one of the store::kFlag* bits.
  int64_t flag_count(uint32_t bit) const { return flag_counts[FlagIndex(bit)]; }
  int64_t& flag_count(uint32_t bit) { return flag_counts[FlagIndex(bit)]; }
};

// One row of `samples`: one stage of one order.
struct SampleRow {
  int64_t order_id = 0;
  int64_t instance = 0;  // the use of the id (0, 1, ...); 0 in older stores
  std::string stage;
  int64_t start_utc_ns = 0;
  double latency_ns = 0;
  std::optional<int64_t> process_begin;
  std::optional<int64_t> process_end;
  std::optional<int64_t> cpu_begin;
  std::optional<int64_t> cpu_end;
  uint32_t flags = 0;
};

// One row of `orders`.
struct OrderRow {
  int64_t order_id = 0;
  int64_t instance = 0;
  bool late = false;  // a partial instance of records that came after their order
  std::optional<int64_t> parent_order_id;
  int64_t first_utc_ns = 0;
  std::optional<double> total_ns;
  bool complete = false;
  std::string missing;  // comma-separated; empty when complete
};

// One row of `stamps`: a stamp or a span of one order.
struct StampRow {
  int64_t order_id = 0;
  int64_t instance = 0;
  std::string tag;
  std::string kind;  // "stamp" or "span"
  int64_t process_id = 0;
  int64_t tid = 0;
  std::optional<int64_t> cpu;      // unset when read with plain rdtsc
  std::optional<int64_t> cpu_end;  // spans: the end's core
  int64_t tsc = 0;
  int64_t utc_ns = 0;
  std::optional<double> duration_ns;  // spans only
  uint32_t flags = 0;
};

}  // namespace ticktrace::store

#endif  // TICKTRACE_STORE_ROWS_H_
