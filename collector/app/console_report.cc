#include "collector/app/console_report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ticktrace/store/losses.h"

namespace ticktrace::collect {
namespace {

std::string Ns(double ns) {
  if (std::isnan(ns)) return "-";  // a percentile with too few samples
  const double a = std::fabs(ns);
  if (a >= 1e9) return absl::StrFormat("%.3fs", ns / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.3fms", ns / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.2fus", ns / 1e3);
  return absl::StrFormat("%.1fns", ns);
}

// Why agreeing with the kernel proves nothing on this host, or "". With the
// clocksource `tsc` or `kvm-clock`, CLOCK_MONOTONIC_RAW is itself the TSC
// scaled by the kernel's (or the hypervisor's) idea of its frequency, so a
// self-calibration against it reproduces that value by construction.
std::string NotIndependentNote(const RunInfo& r) {
  if (r.calibration_source.rfind("self-calibrated", 0) != 0) return "";
  for (const EnvironmentNote& e : r.environment) {
    if (e.name == "clocksource" && (e.value == "tsc" || e.value == "kvm-clock")) {
      return absl::StrCat(" (not an independent check: with clocksource ", e.value,
                          " CLOCK_MONOTONIC_RAW is computed from the TSC)");
    }
  }
  return "";
}

// What the run did, in the order a reader asks: how much came in and what
// came of it. The loss causes follow (store::kLossCauses), then the refusals
// that explain them.
constexpr const char* kLeadCounters[] = {"drained",
                                         "samples",
                                         "orders_complete",
                                         "orders_incomplete",
                                         "processes_seen",
                                         "segments_attached",
                                         "segments_oversized",
                                         "segments_foreign",
                                         "segments_unreadable",
                                         "segments_corrupt"};

// The records-lost line, the counters that matter, then the other counters
// that are not zero (summary --json lists every counter).
std::string CounterLines(const std::vector<std::pair<std::string, int64_t>>& counters) {
  const store::RecordLoss loss = store::ComputeRecordLoss(counters);
  std::string out = absl::StrCat("records lost: ", loss.Text(),
                                 loss.lost > 0 ? "; not in any figure below\n" : "\n");
  const auto value = [&](std::string_view name) -> std::optional<int64_t> {
    for (const auto& [n, v] : counters) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  std::vector<std::string> shown;
  out += "counters:\n";
  for (const char* name : kLeadCounters) {
    if (const std::optional<int64_t> v = value(name)) {
      absl::StrAppendFormat(&out, "  %-28s %d\n", name, *v);
      shown.emplace_back(name);
    }
  }
  for (const store::LossCause& c : store::kLossCauses) {
    const std::string name(c.counter);
    absl::StrAppendFormat(&out, "  %-28s %d  (lost: %s)\n", name, value(name).value_or(0),
                          std::string(c.cause));
    shown.push_back(name);
  }
  std::vector<std::string> others;
  size_t zero = 0;
  for (const auto& [name, v] : counters) {
    if (std::find(shown.begin(), shown.end(), name) != shown.end()) continue;
    if (v == 0) {
      ++zero;
    } else {
      others.push_back(absl::StrCat(name, " ", v));
    }
  }
  if (!others.empty()) absl::StrAppend(&out, "other counters: ", absl::StrJoin(others, ", "), "\n");
  if (zero > 0) absl::StrAppend(&out, "(", zero, " other counters are 0)\n");
  return out;
}

}  // namespace

std::string CalibrationReport(const RunInfo& r) {
  std::string out = absl::StrFormat("ticktrace-collector: session '%s'%s\n", r.session,
                                    r.mode == "replay" ? " (replay)" : "");
  absl::StrAppendFormat(&out, "  TSC frequency  %.6f GHz  (%.0f Hz, %.6f ns/tick)\n",
                        r.tsc_hz / 1e9, r.tsc_hz, 1e9 / r.tsc_hz);
  absl::StrAppendFormat(&out, "  source         %s", r.calibration_source);
  if (r.rounds_used > 0) {
    absl::StrAppendFormat(&out, ", %d rounds (%d discarded: migrated)", r.rounds_used,
                          r.rounds_discarded);
  }
  out += "\n";
  if (r.spread_ppm) absl::StrAppendFormat(&out, "  spread         %.2f ppm between rounds\n", *r.spread_ppm);
  if (r.measured_tsc_hz) {
    absl::StrAppendFormat(&out, "  measured       %.6f GHz against CLOCK_MONOTONIC_RAW: CPUID's value "
                          "differs by %+.1f ppm\n",
                          *r.measured_tsc_hz / 1e9,
                          (r.tsc_hz - *r.measured_tsc_hz) / *r.measured_tsc_hz * 1e6);
  }
  if (r.kernel_tsc_hz) {
    const double diff_ppm = (r.tsc_hz - *r.kernel_tsc_hz) / *r.kernel_tsc_hz * 1e6;
    absl::StrAppendFormat(&out, "  kernel says    %.6f GHz (%s); ours differs by %+.1f ppm%s\n",
                          *r.kernel_tsc_hz / 1e9, r.kernel_source, diff_ppm,
                          NotIndependentNote(r));
  } else {
    out += "  kernel says    (not readable)\n";
  }
  if (r.tsc_step_ns) {
    absl::StrAppendFormat(&out,
                          "  TSC step       %.2f ns: stage latencies near this are quantisation, "
                          "not signal\n",
                          *r.tsc_step_ns);
  }
  {
    // What a time read by another clock (stamp_at) is placed with.
    const ExternalClockErrors& c = r.external_clocks;
    const auto known = [](const std::optional<double>& ns, const char* flag) {
      return ns.has_value() ? absl::StrFormat("+-%.0f ns", *ns)
                            : absl::StrFormat("unknown (%s)", flag);
    };
    absl::StrAppendFormat(&out,
                          "  other clocks   anchor error %.1f ns (realtime resolution %.0f ns); "
                          "phc %s; exchange %s\n",
                          c.anchor_error_ns, c.realtime_error_ns,
                          known(c.phc_error_ns, "--clock-error-ns"),
                          known(c.exchange_error_ns, "--exchange-clock-error-ns"));
  }
  for (const EnvironmentNote& e : r.environment) {
    absl::StrAppendFormat(&out, "  %s %-14s %s: %s\n", e.warning ? "WARNING" : "       ",
                          e.name, e.value, e.meaning);
  }
  if (!r.pipeline.empty()) {
    absl::StrAppendFormat(&out, "  pipeline       %s (declared)\n",
                          absl::StrJoin(r.pipeline, " -> "));
  } else {
    absl::StrAppendFormat(&out, "  pipeline       learned from the first %d orders\n",
                          r.learn_orders);
  }
  absl::StrAppendFormat(&out, "  order timeout  %d ms; percentiles %s flagged samples\n",
                        r.order_timeout_ms, r.include_flagged ? "include" : "exclude");
  return out;
}

std::string LearnedPipelineLine(const std::vector<std::string>& pipeline, size_t orders) {
  return absl::StrFormat("learned pipeline from %d orders: %s\n", orders,
                         pipeline.empty() ? std::string("(no stamps)")
                                          : absl::StrJoin(pipeline, " -> "));
}

std::string ExitReport(const std::vector<std::pair<std::string, int64_t>>& counters,
                       const std::vector<StageSummary>& stages,
                       const std::vector<std::string>& pipeline, bool pipeline_learned,
                       bool include_flagged) {
  std::string out = CounterLines(counters);
  absl::StrAppendFormat(&out, "pipeline (%s): %s\n", pipeline_learned ? "learned" : "declared",
                        pipeline.empty() ? std::string("(none)") : absl::StrJoin(pipeline, " -> "));
  absl::StrAppendFormat(&out, "stages (percentiles %s flagged samples):\n",
                        include_flagged ? "include" : "exclude");
  size_t width = 5;
  for (const StageSummary& s : stages) width = std::max(width, s.stage.size());
  absl::StrAppendFormat(&out,
                        "  %-*s %9s %10s %17s %10s %10s %10s %10s %10s %8s %8s %8s %6s %6s %6s\n",
                        width, "stage", "count", "min", "p50", "p90", "p99", "p99.9", "max",
                        "mean", "migrated", "negative", "x-core", "skew", "o-o-o", "late");
  for (const StageSummary& s : stages) {
    // A cross-core stage's p50 carries the cores' offset uncertainty
    // (docs/calibration.md#what-the-collector-does-with-the-offsets).
    std::string p50 = Ns(s.p50_ns);
    if (s.cross_core > 0 && s.uncertainty_ns > 0) {
      absl::StrAppendFormat(&p50, " ±%.0fns", s.uncertainty_ns);
    }
    absl::StrAppendFormat(
        &out, "  %-*s %9d %10s %17s %10s %10s %10s %10s %10s %8d %8d %8d %6d %6d %6d\n", width,
        s.stage, s.count, Ns(s.min_ns), p50, Ns(s.p90_ns), Ns(s.p99_ns), Ns(s.p999_ns),
        Ns(s.max_ns), Ns(s.mean_ns), s.migrated, s.negative, s.cross_core, s.skew, s.out_of_order,
        s.late);
  }
  return out;
}

std::string BudgetReport(const std::vector<Budget>& budgets,
                         const std::vector<BudgetCount>& counts) {
  std::string out;
  for (size_t i = 0; i < budgets.size() && i < counts.size(); ++i) {
    const BudgetCount& c = counts[i];
    absl::StrAppend(&out, "budget ", budgets[i].text, ": ", c.breaches, " of ", c.judged,
                    c.judged == 1 ? " interval" : " intervals", " over");
    if (c.unjudged > 0) {
      absl::StrAppend(&out, " (", c.unjudged, " more with too few samples for ",
                      budgets[i].stat, ")");
    }
    if (c.judged == 0 && c.unjudged == 0) {
      absl::StrAppend(&out, " (no sample of stage '", budgets[i].stage, "' in the percentiles)");
    }
    out += "\n";
  }
  return out;
}

}  // namespace ticktrace::collect
