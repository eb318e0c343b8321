#include "demo_report.h"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo_options.h"
#include "ticktrace/store/losses.h"
#include "viewer/views/losses_view.h"

namespace ticktrace::examples {

std::string FormatDuration(double ns) {
  if (std::isnan(ns)) return "-";  // a percentile with too few samples
  const double a = ns < 0 ? -ns : ns;
  if (a < 1e3) return absl::StrFormat("%.0f ns", ns);
  if (a < 1e6) return absl::StrFormat("%.2f us", ns / 1e3);
  if (a < 1e9) return absl::StrFormat("%.2f ms", ns / 1e6);
  return absl::StrFormat("%.2f s", ns / 1e9);
}

std::optional<uint64_t> ConfiguredWorkNs(const std::string& stage,
                                         const std::array<uint64_t, 3>& work_ns) {
  const std::string feed_stage = absl::StrCat(kTagMdRx, "->", kTagMdDecoded);
  const std::string strategy_stage = absl::StrCat(kTagStratIn, "->", kTagStratOut);
  const std::string gateway_stage = absl::StrCat(kTagGwIn, "->", kTagGwSent);
  if (stage == feed_stage) return work_ns[kFeed];
  if (stage == kTagDecide || stage == strategy_stage) return work_ns[kStrategy];
  if (stage == gateway_stage) return work_ns[kGateway];
  if (stage == "total") return work_ns[kFeed] + work_ns[kStrategy] + work_ns[kGateway];
  return std::nullopt;
}

std::string FormatCalibration(const store::RunRow& run) {
  std::string out = absl::StrFormat("  TSC %.6f GHz, source: %s", run.tsc_hz / 1e9,
                                    run.calibration_source);
  if (run.spread_ppm) absl::StrAppendFormat(&out, ", spread %.1f ppm", *run.spread_ppm);
  absl::StrAppend(&out, "\n");
  if (run.kernel_tsc_hz) {
    absl::StrAppendFormat(&out, "  kernel's value %.6f GHz (%+.1f ppm from ours)\n",
                          *run.kernel_tsc_hz / 1e9,
                          (run.tsc_hz - *run.kernel_tsc_hz) / *run.kernel_tsc_hz * 1e6);
  }
  if (run.tsc_step_ns) {
    absl::StrAppendFormat(&out,
                          "  TSC step %.1f ns: differences near it are quantisation, not signal\n",
                          *run.tsc_step_ns);
  }
  const nlohmann::json env = nlohmann::json::parse(run.environment, nullptr, false);
  if (env.is_array()) {
    for (const nlohmann::json& f : env) {
      if (!f.is_object() || !f.value("warning", false)) continue;
      absl::StrAppend(&out, "  warning: ", f.value("name", std::string("?")), " = ",
                      f.value("value", std::string("?")), ": ",
                      f.value("meaning", std::string("")), "\n");
    }
  }
  return out;
}

std::string FormatStageTable(const DemoRunFigures& summary, const std::array<uint64_t, 3>& work_ns) {
  // What the table does not include comes first (ticktrace/store/losses.h).
  std::string out =
      absl::StrCat("  ", view::RecordsLostLine(store::ComputeRecordLoss(summary.counters)));
  out += absl::StrFormat(
      "  %-22s %8s %10s %10s %10s %9s %10s %10s %10s  %s\n", "stage", "count", "work", "p50",
      "cross-core", "p50-work", "p90", "p99", "max", "migrated/negative/cross_core/skew/out_of_order");
  // Unset: too few samples for that percentile (NaN, printed "-").
  const auto value = [](const std::optional<double>& v) {
    return v.value_or(std::numeric_limits<double>::quiet_NaN());
  };
  for (const store::StageStatsRow& s : summary.stages) {
    const std::optional<uint64_t> work = ConfiguredWorkNs(s.stage, work_ns);
    const std::string work_text =
        work ? FormatDuration(static_cast<double>(*work)) : std::string("queue hop");
    const std::string excess_text =
        work ? FormatDuration(value(s.p50_ns) - static_cast<double>(*work)) : std::string("-");
    // The p50 of a cross-core stage is uncertain by the cores' measured
    // offset bounds (docs/calibration.md): shown beside it.
    const int64_t cross_core = s.flag_count(store::kFlagCrossCore);
    const std::string uncertainty = cross_core > 0 && s.uncertainty_ns.value_or(0) > 0
                                        ? "+-" + FormatDuration(*s.uncertainty_ns)
                                        : std::string("-");
    absl::StrAppendFormat(&out, "  %-22s %8d %10s %10s %10s %9s %10s %10s %10s  %d/%d/%d/%d/%d\n",
                          s.stage, s.count, work_text, FormatDuration(value(s.p50_ns)),
                          uncertainty, excess_text, FormatDuration(value(s.p90_ns)),
                          FormatDuration(value(s.p99_ns)), FormatDuration(s.max_ns.value_or(0)),
                          s.flag_count(store::kFlagMigrated), s.flag_count(store::kFlagNegative),
                          cross_core, s.flag_count(store::kFlagSkew),
                          s.flag_count(store::kFlagOutOfOrder));
  }
  if (summary.stages.empty()) absl::StrAppend(&out, "  (no stage statistics in the store)\n");
  return out;
}

std::string FormatCounts(const DemoRunFigures& summary, const ExpectedCounts& expected) {
  auto counter = [&](const char* name) -> std::string {
    auto it = summary.counters.find(name);
    return it == summary.counters.end() ? std::string("?") : absl::StrCat(it->second);
  };
  std::string out = absl::StrFormat(
      "  pipeline: %d ticks -> %d orders (ticks with no order %d, one %d, two %d)\n",
      expected.ticks, expected.orders, expected.ticks_without_order, expected.ticks_with_one_order,
      expected.ticks_with_two_orders);
  absl::StrAppend(&out, "  store:    drained ", counter("drained"), " records, dropped ",
                  counter("dropped"), ", malformed ", counter("malformed"),
                  "; orders complete ", counter("orders_complete"), ", incomplete ",
                  counter("orders_incomplete"), "\n");
  auto it = summary.counters.find("orders_incomplete");
  if (it != summary.counters.end() && it->second > 0 &&
      static_cast<uint64_t>(it->second) == expected.ticks_without_order) {
    absl::StrAppend(&out, "            (the incomplete ones are the ", it->second,
                    " ticks that made no order: by design they never reach gw_sent)\n");
  }
  return out;
}

std::array<std::string, 2> StoreArgs(const store::StoreUri& store) {
  if (std::optional<std::string> file = store.local_file(); file.has_value()) {
    return {"--db", *std::move(file)};
  }
  return {"--store", store.ToString()};
}

std::string StoreArgsText(const store::StoreUri& store) {
  const std::array<std::string, 2> args = StoreArgs(store);
  return absl::StrCat(args[0], " ", args[1]);
}

std::string FormatNextSteps(const std::string& view_command, const store::StoreUri& store,
                            int64_t run_id, bool include_flagged, uint64_t slowest_order_id) {
  const std::string db_run = absl::StrCat(StoreArgsText(store), " --run ", run_id);
  std::string out;
  absl::StrAppend(&out, "  ", view_command, " summary ", db_run,
                  include_flagged ? " --include-flagged" : "", "\n");
  absl::StrAppend(&out, "  ", view_command, " orders ", db_run, " --slowest 5\n");
  if (slowest_order_id != 0) {
    absl::StrAppend(&out, "  ", view_command, " order ", db_run, " ", slowest_order_id,
                    "   # the slowest order's timeline\n");
  }
  absl::StrAppend(&out, "  ", view_command, " export ", db_run,
                  " --format chrome --limit 1000 --out ticktrace-demo.json   # open in "
                  "https://ui.perfetto.dev\n");
  const std::optional<std::string> file = store.local_file();
  if (!file.has_value()) return out;  // no sqlite3 for a store on a server
  absl::StrAppend(&out, "  sqlite3 ", *file,
                  " \"SELECT stage, count, round(p50_ns), round(p99_ns) FROM stage_stats WHERE "
                  "run_id = ",
                  run_id, " ORDER BY position\"\n");
  return out;
}

}  // namespace ticktrace::examples
