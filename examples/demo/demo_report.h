// The text the demo prints after a run: calibration, the per-stage table with
// the configured work beside each measured p50, the counts, the next commands.

#ifndef TICKTRACE_EXAMPLES_DEMO_DEMO_REPORT_H_
#define TICKTRACE_EXAMPLES_DEMO_DEMO_REPORT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "demo_store.h"
#include "messages.h"
#include "ticktrace/store/uri.h"

namespace ticktrace::examples {

// "850 ns", "2.05 us", "1.20 ms", "1.5 s".
std::string FormatDuration(double ns);

// The busy-wait work injected into `stage` ("md_rx->md_decoded", "decide",
// ...), or nullopt for a queue hop between processes, which has none.
// `total` gets the sum of the three.
std::optional<uint64_t> ConfiguredWorkNs(const std::string& stage,
                                         const std::array<uint64_t, 3>& work_ns);

// The calibration as stored with the run, with the environment's warnings.
std::string FormatCalibration(const store::RunRow& run);

// The records-lost line first, then one line per stage: count, configured
// work, p50 (and its excess over the work), p90, p99, max, and the flag counts.
std::string FormatStageTable(const DemoRunFigures& summary, const std::array<uint64_t, 3>& work_ns);

// The store's counters beside what the pipeline produced.
std::string FormatCounts(const DemoRunFigures& summary, const ExpectedCounts& expected);

// The commands to try next, on this store and run. `include_flagged`: the
// run's percentiles include flagged samples, so the viewer's summary should too.
// `slowest_order_id`: an order for the one-order timeline (0: none).
std::string FormatNextSteps(const std::string& view_command, const store::StoreUri& store,
                            int64_t run_id, bool include_flagged, uint64_t slowest_order_id);

// The programs' flag and its value for `store`: {"--db", PATH} for a store in
// a local file, else {"--store", URI}.
std::array<std::string, 2> StoreArgs(const store::StoreUri& store);
// The same as one string, for a command line shown to the user ("--db x.db").
std::string StoreArgsText(const store::StoreUri& store);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_DEMO_DEMO_REPORT_H_
