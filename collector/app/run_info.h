// What a run is: calibration, environment and settings. Written as the first
// chunk of every journal and raw archive (JSON), and as the store's runs row.

#ifndef TICKTRACE_COLLECTOR_RUN_INFO_H_
#define TICKTRACE_COLLECTOR_RUN_INFO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "collector/time/external_clock.h"
#include "collector/time/time_base.h"

namespace ticktrace::collect {

struct EnvironmentNote {
  std::string name;
  std::string value;
  std::string meaning;
  bool warning = false;
};

// One core's TSC against the reference core's, measured by ping-pong at the
// start of the run (collector/time/core_skew.h). The reference core has 0 and 0.
struct CoreSkew {
  int cpu = 0;
  double offset_ns = 0;  // this core's TSC minus the reference core's
  double bound_ns = 0;   // the true offset is within offset_ns +- bound_ns
  bool consistent = true;
  int64_t measured_at_utc_ns = 0;
};

struct RunInfo {
  std::string session;
  std::string host;
  int64_t started_utc_ns = 0;
  // Calibration.
  double tsc_hz = 0;
  std::string calibration_source;
  std::optional<double> spread_ppm;
  int rounds_used = 0;
  int rounds_discarded = 0;
  std::optional<double> kernel_tsc_hz;
  std::string kernel_source;
  std::optional<double> tsc_step_ns;
  // A frequency from CPUID 0x15 checked against a short self-calibration
  // (CLOCK_MONOTONIC_RAW); unset for other sources.
  std::optional<double> measured_tsc_hz;
  uint64_t anchor_tsc = 0;
  int64_t anchor_utc_ns = 0;
  // The errors that place a time read by another clock (stamp_at), measured
  // or given at the run's start; a run recorded before them has the defaults.
  ExternalClockErrors external_clocks;
  std::vector<EnvironmentNote> environment;
  std::vector<CoreSkew> cores;  // empty: not measured (one core, replay of an old archive)
  // Settings.
  std::vector<std::string> pipeline;  // declared; empty: learned
  int64_t order_timeout_ms = 1000;
  bool include_flagged = false;
  uint64_t learn_orders = 100;
  uint64_t max_open_orders = 2'000'000;  // 0: no limit (--max-open-orders)
  std::string mode = "live";  // "live" or "replay"
  // Subtract the cores' measured offsets from cross-core differences (off by
  // default: the offsets are only known within their bounds).
  bool correct_skew = false;
  int64_t skew_interval_s = 600;       // re-measure the cores' offsets; 0: at start only
  std::string skew_cores = "allowed";  // "allowed" or "producers"
  int64_t anchor_interval_ms = 1000;   // a (TSC, CLOCK_REALTIME) anchor this often

  // How long a finished order lingers before it is emitted, so that late
  // records still join it: min(order timeout, 100 ms).
  int64_t linger_ms() const { return order_timeout_ms < 100 ? order_timeout_ms : 100; }
  TimeBase time_base() const { return TimeBase::FromHz(tsc_hz, anchor_tsc, anchor_utc_ns); }
  std::string ToJson() const;
  std::string EnvironmentJson() const;
  std::string SettingsJson() const;
  // Parses untrusted JSON; InvalidArgument when fields are missing or impossible.
  static absl::StatusOr<RunInfo> FromJson(std::string_view json);
};

// What a run learns while it runs, in kRunInfo chunks after the first (the
// first holds the RunInfo; older readers ignore the rest): a new UTC anchor,
// or a new measurement of the cores' offsets. They travel in the stream so
// that replay and journal recovery see them where the live run did.
struct RunInfoUpdate {
  // kCounters: the collector's own cumulative counters (the drainer's), so
  // that the stream holds them and a restart continues them.
  enum class Kind { kAnchor, kCores, kCounters };
  Kind kind = Kind::kAnchor;
  UtcAnchor anchor;              // kAnchor
  std::vector<CoreSkew> cores;   // kCores
  std::vector<std::pair<std::string, uint64_t>> counters;  // kCounters
  int64_t measured_at_utc_ns = 0;

  std::string ToJson() const;
  // Parses untrusted JSON. NotFound when `json` is not an update (a RunInfo);
  // InvalidArgument when it is one with missing or impossible fields.
  static absl::StatusOr<RunInfoUpdate> FromJson(std::string_view json);
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_RUN_INFO_H_
