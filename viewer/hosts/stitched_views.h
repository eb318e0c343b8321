// The viewer's cross-host views (docs/viewer.md#several-hosts---hosts): `summary`, `orders`, `order` and `report` with --hosts stitch each
// order of a reference run with its instances on the other hosts' runs
// (stitch.h) and show, per stage, the host of each end, the cross_host flag
// and the uncertainty.
//
//   commands.cc: CrossHostFromArgs (the flags) -> ResolveCrossHost (the
//   reference run, the hosts, the window) -> Build* -> Render* (text, JSON:
//   stitched_text.cc) or the report's sections (stitched_html.cc).
//
// Reads only; one thread at a time per store (as store::StoreReader).
#ifndef TICKTRACE_VIEW_STITCHED_VIEWS_H_
#define TICKTRACE_VIEW_STITCHED_VIEWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "viewer/cli/args.h"
#include "ticktrace/store/rows.h"
#include "viewer/hosts/stitch.h"
#include "ticktrace/store/reader.h"
#include "viewer/cli/time_arg.h"

namespace ticktrace::view {

// What --hosts, --pipeline, --stitch-window and --run ask for.
struct CrossHostRequest {
  std::vector<std::string> hosts;     // --hosts NAME,NAME; empty: "all"
  std::vector<std::string> pipeline;  // --pipeline TAG,TAG (stamps across hosts)
  int64_t window_ns = StitchOptions{}.window_ns;  // --stitch-window
  std::optional<int64_t> run_id;                   // --run: the reference run
  std::optional<TimeArg> since, until;             // on the reference run
};

// The flags --hosts, --pipeline and --stitch-window of a subcommand that
// offers them, plus --run, --since and --until. nullopt without --hosts (the
// single-run views); InvalidArgument for --pipeline or --stitch-window
// without --hosts, an empty host or tag, or a bad duration.
absl::StatusOr<std::optional<CrossHostRequest>> CrossHostFromArgs(const ParsedArgs& args);

// The flags themselves, for the subcommands' specs.
std::vector<FlagSpec> CrossHostFlags();

// A request resolved against the store.
struct CrossHostScope {
  std::string store_path;
  store::RunRow reference;                // the run whose orders are stitched
  std::vector<std::string> hosts;   // the hosts that may join, as stored
  StitchOptions options;            // pipeline, window, hosts
  store::TimeWindow window;                // --since/--until on the reference run
  std::string filters;              // --since/--until in words; empty when not given
};

// The reference run: --run; else, with `order_id`, the latest chosen run
// that holds it; else the latest chosen run whose runs.pipeline names the
// first --pipeline tag; else the latest chosen run. NotFound for a --hosts
// name the store has no run of (the message lists the store's hosts), an
// unknown run, or no run holding `order_id`; InvalidArgument for a --run of
// a host --hosts leaves out.
absl::StatusOr<CrossHostScope> ResolveCrossHost(store::StoreReader& store,
                                                const CrossHostRequest& request,
                                                std::optional<int64_t> order_id = std::nullopt);

// `summary --hosts`: per stage over the stitched orders, total last.
struct CrossHostBreakdown {
  CrossHostScope scope;
  int64_t orders = 0;              // stitched (the reference run's in the window)
  int64_t orders_across_hosts = 0; // of which with stamps of more than one host
  int64_t orders_incomplete = 0;   // of which missing a --pipeline stamp
  std::vector<StitchedStageStats> stages;
};
absl::StatusOr<CrossHostBreakdown> BuildCrossHostBreakdown(store::StoreReader& store,
                                                           const CrossHostScope& scope);

// `orders --slowest N --hosts`: the N slowest stitched orders by total (the
// sum of their stages) or by one stage, ties by order id.
struct RankedStitchedOrder {
  UtcStitchedOrder order;
  double latency_ns = 0;  // in the ranking stage
  std::optional<StitchedStage> total;
};
struct CrossHostSlowest {
  CrossHostScope scope;
  std::string stage;  // "total" unless --stage
  std::vector<RankedStitchedOrder> orders;
};
// NotFound when no stitched order has `stage`. REQUIRES: n >= 1.
absl::StatusOr<CrossHostSlowest> BuildCrossHostSlowest(store::StoreReader& store,
                                                       const CrossHostScope& scope,
                                                       const std::string& stage, int64_t n);
// The same from orders already stitched (the report stitches once).
CrossHostSlowest RankStitched(const CrossHostScope& scope,
                              const std::vector<UtcStitchedOrder>& orders,
                              const std::string& stage, int64_t n);

// `order ID --hosts`: one order stitched, stamp by stamp with its host.
struct CrossHostOrder {
  CrossHostScope scope;
  UtcStitchedOrder order;
  std::optional<StitchedStage> total;
};
// NotFound when the reference run does not hold the order.
absl::StatusOr<CrossHostOrder> BuildCrossHostOrder(store::StoreReader& store,
                                                   const CrossHostScope& scope,
                                                   int64_t order_id);

// `report --hosts`: the stitched breakdown and the slowest stitched orders,
// from one stitching of the reference run's orders in the window.
struct CrossHostReport {
  CrossHostBreakdown breakdown;
  CrossHostSlowest slowest;  // by total
};
absl::StatusOr<CrossHostReport> BuildCrossHostReport(store::StoreReader& store,
                                                     const CrossHostScope& scope,
                                                     int64_t slowest);
// The report's sections (stitched_html.cc): "cross-host-breakdown" (per stage
// its hosts, the cross_host flag and the uncertainty) and
// "cross-host-slowest" (waterfalls, each stage with its hosts).
std::string RenderCrossHostBreakdownHtml(const CrossHostReport& report);
std::string RenderCrossHostSlowestHtml(const CrossHostReport& report);

// Text and JSON (fields in docs/viewer.md, "Several hosts"); stitched_text.cc.
std::string RenderCrossHostBreakdownText(const CrossHostBreakdown& b);
std::string RenderCrossHostBreakdownJson(const CrossHostBreakdown& b);
std::string RenderCrossHostSlowestText(const CrossHostSlowest& s, int bar_width = 40);
std::string RenderCrossHostSlowestJson(const CrossHostSlowest& s);
std::string RenderCrossHostOrderText(const CrossHostOrder& o);
std::string RenderCrossHostOrderJson(const CrossHostOrder& o);

// "host1" for a same-host stage, "host1 -> host2" across hosts.
std::string StageHosts(const std::string& from_host, const std::string& to_host);
// "± 3.00 µs", "unknown" (cross-host without a bound) or "" (same host).
std::string UncertaintyText(bool cross_host, const std::optional<double>& uncertainty_ns);

}  // namespace ticktrace::view

#endif  // TICKTRACE_VIEW_STITCHED_VIEWS_H_
