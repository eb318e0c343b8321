// Plain rows read from a ticktrace store (docs/store.md, schema v1).
//
// These mirror the store's tables one to one; nullable columns are
// std::optional. They carry no behaviour: the reports that use them live in
// their own files (summary.h, waterfall.h, timeline.h, ...).
#ifndef TICKTRACE_STORE_ROWS_H_
#define TICKTRACE_STORE_ROWS_H_

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

// One row of `runs`.
struct RunInfo {
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

// One row of `processes`.
struct ProcessInfo {
  int64_t process_id = 0;  // per-run number, not the OS pid
  int64_t pid = 0;
  std::string name;
  std::string segment;
  std::optional<int64_t> first_seen_utc_ns;
  std::optional<int64_t> exited_utc_ns;
};

// One row of `threads`.
struct ThreadInfo {
  int64_t process_id = 0;
  int64_t slot = 0;
  int64_t generation = 0;
  int64_t tid = 0;
  std::string name;
  int64_t drained = 0;
  int64_t dropped = 0;
};

// One row of `stage_stats`.
struct StoredStageStats {
  std::string stage;
  int64_t position = 0;
  int64_t count = 0;
  std::optional<double> min_ns;
  std::optional<double> max_ns;
  std::optional<double> mean_ns;
  std::optional<double> p50_ns;
  std::optional<double> p90_ns;
  std::optional<double> p99_ns;
  std::optional<double> p999_ns;
  int64_t migrated = 0;
  int64_t negative = 0;
  int64_t cross_core = 0;
  bool include_flagged = false;
  // Unset in stores written before these columns.
  std::optional<int64_t> samples_all;
  std::optional<int64_t> skew;
  std::optional<int64_t> out_of_order;
  std::optional<int64_t> late;
  std::optional<double> uncertainty_ns;  // the largest cross-core sample's uncertainty
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
