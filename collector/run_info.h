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
#include "collector/time_base.h"

namespace ticktrace::collect {

struct EnvironmentNote {
  std::string name;
  std::string value;
  std::string meaning;
  bool warning = false;
};

// One core's TSC against the reference core's, measured by ping-pong at the
// start of the run (collector/core_skew.h). The reference core has 0 and 0.
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
  std::vector<EnvironmentNote> environment;
  std::vector<CoreSkew> cores;  // empty: not measured (one core, replay of an old archive)
  // Settings.
  std::vector<std::string> pipeline;  // declared; empty: learned
  int64_t order_timeout_ms = 1000;
  bool include_flagged = false;
  uint64_t learn_orders = 100;
  std::string mode = "live";  // "live" or "replay"

  TimeBase time_base() const { return TimeBase::FromHz(tsc_hz, anchor_tsc, anchor_utc_ns); }
  std::string ToJson() const;
  std::string EnvironmentJson() const;
  std::string SettingsJson() const;
  // Parses untrusted JSON; InvalidArgument when fields are missing or impossible.
  static absl::StatusOr<RunInfo> FromJson(std::string_view json);
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_RUN_INFO_H_
