// The cross-host views' flags, scope and data (stitched_views.h); their text
// and JSON are in stitched_text.cc, the report's sections in stitched_html.cc.

#include "viewer/hosts/stitched_views.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/duration.h"
#include "common/status_macros.h"
#include "viewer/format/format_units.h"
#include "viewer/cli/query.h"

namespace ticktrace::view {
namespace {

// A comma-separated list of non-empty words; InvalidArgument naming `flag`.
absl::StatusOr<std::vector<std::string>> CrossHostList(const char* flag, const std::string& text) {
  std::vector<std::string> out = absl::StrSplit(text, ',');
  for (const std::string& word : out) {
    if (word.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": expected NAME,NAME,... without empty names, got '", text,
                       "'"));
    }
  }
  return out;
}

bool PipelineNames(const store::RunRow& run, const std::string& tag) {
  for (absl::string_view t : absl::StrSplit(run.pipeline, ',')) {
    if (t == tag) return true;
  }
  return false;
}

// The breakdown of orders already stitched.
CrossHostBreakdown BreakdownOf(const CrossHostScope& scope,
                               const std::vector<UtcStitchedOrder>& orders) {
  CrossHostBreakdown b;
  b.scope = scope;
  b.orders = static_cast<int64_t>(orders.size());
  for (const UtcStitchedOrder& o : orders) {
    if (o.hosts.size() > 1) ++b.orders_across_hosts;
    if (!o.complete) ++b.orders_incomplete;
  }
  b.stages = SummarizeStitched(orders, /*with_total=*/true);
  return b;
}

}  // namespace

std::vector<FlagSpec> CrossHostFlags() {
  return {{"hosts", "all|H,H",
           "stitch each order across the runs of these hosts (runs.host), or of all: per "
           "stage the host of each end, cross_host and its uncertainty (docs/clickhouse.md)"},
          {"pipeline", "TAG,TAG",
           "with --hosts: the stamps in order, from any host (default: every stamp by UTC)"},
          {"stitch-window", "D",
           "with --hosts: an order's instances on other hosts join it when their first stamp "
           "is within D of its own (default 10s)"}};
}

absl::StatusOr<std::optional<CrossHostRequest>> CrossHostFromArgs(const ParsedArgs& args) {
  const std::optional<std::string> hosts = args.Value("hosts");
  if (!hosts.has_value()) {
    for (const char* flag : {"pipeline", "stitch-window"}) {
      if (args.Has(flag)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag, " stitches orders across hosts: give --hosts all (or "
                                     "--hosts H,H) too"));
      }
    }
    return std::optional<CrossHostRequest>();
  }
  CrossHostRequest request;
  if (*hosts != "all") {
    TICKTRACE_ASSIGN_OR_RETURN(request.hosts, CrossHostList("hosts", *hosts));
  }
  if (auto text = args.Value("pipeline")) {
    TICKTRACE_ASSIGN_OR_RETURN(request.pipeline, CrossHostList("pipeline", *text));
  }
  if (auto text = args.Value("stitch-window")) {
    TICKTRACE_ASSIGN_OR_RETURN(request.window_ns, ParseDurationNs("--stitch-window", *text));
  }
  TICKTRACE_ASSIGN_OR_RETURN(request.run_id, args.IntValue("run", 0));
  if (auto text = args.Value("since")) {
    TICKTRACE_ASSIGN_OR_RETURN(request.since, ParseTimeArg("--since", *text));
  }
  if (auto text = args.Value("until")) {
    TICKTRACE_ASSIGN_OR_RETURN(request.until, ParseTimeArg("--until", *text));
  }
  return std::optional<CrossHostRequest>(std::move(request));
}

namespace {

// The store's hosts, by name (the same in every message); NotFound when
// --hosts names one the store has no run of.
absl::StatusOr<std::vector<std::string>> StoreHosts(const store::StoreReader& store,
                                                    const std::vector<store::RunRow>& runs,
                                                    const CrossHostRequest& request) {
  std::vector<std::string> store_hosts;
  for (const store::RunRow& r : runs) {
    if (std::find(store_hosts.begin(), store_hosts.end(), r.host) == store_hosts.end()) {
      store_hosts.push_back(r.host);
    }
  }
  std::sort(store_hosts.begin(), store_hosts.end());
  for (const std::string& h : request.hosts) {
    if (std::find(store_hosts.begin(), store_hosts.end(), h) == store_hosts.end()) {
      return absl::NotFoundError(absl::StrCat("--hosts: ", store.path(), " has no run of host '",
                                              h, "' (its hosts: ",
                                              absl::StrJoin(store_hosts, ", "), ")"));
    }
  }
  return store_hosts;
}

bool Chosen(const CrossHostRequest& request, const store::RunRow& r) {
  return request.hosts.empty() ||
         std::find(request.hosts.begin(), request.hosts.end(), r.host) != request.hosts.end();
}

// The reference run: --run, else the latest chosen run (holding `order_id`
// when given), preferring one whose pipeline names the first --pipeline tag.
absl::StatusOr<store::RunRow> ReferenceRun(store::StoreReader& store,
                                           const std::vector<store::RunRow>& runs,
                                           const CrossHostRequest& request,
                                           std::optional<int64_t> order_id) {
  if (request.run_id.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(store::RunRow run, store.GetRun(*request.run_id));
    if (!Chosen(request, run)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--run ", *request.run_id, " is host '", run.host, "''s; --hosts ",
                       absl::StrJoin(request.hosts, ","), " leaves it out"));
    }
    return run;
  }
  std::vector<int64_t> holders;
  if (order_id.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(holders, store.RunsWithOrder(*order_id));
  }
  const auto candidate = [&](const store::RunRow& r) {
    return Chosen(request, r) &&
           (!order_id.has_value() ||
            std::find(holders.begin(), holders.end(), r.run_id) != holders.end());
  };
  const store::RunRow* best = nullptr;
  for (auto it = runs.rbegin(); it != runs.rend() && best == nullptr; ++it) {
    if (candidate(*it) && !request.pipeline.empty() && PipelineNames(*it, request.pipeline[0])) {
      best = &*it;
    }
  }
  for (auto it = runs.rbegin(); it != runs.rend() && best == nullptr; ++it) {
    if (candidate(*it)) best = &*it;
  }
  if (best == nullptr) {
    return absl::NotFoundError(
        order_id.has_value()
            ? absl::StrCat("order ", FormatOrderId(*order_id), " is in no run of ",
                           request.hosts.empty() ? std::string("any host")
                                                 : absl::StrJoin(request.hosts, ", "),
                           " in ", store.path())
            : absl::StrCat(store.path(), ": no run of ", absl::StrJoin(request.hosts, ", ")));
  }
  return *best;
}

// --since/--until on the reference run: the window and the filters' words.
absl::Status ApplyWindow(store::StoreReader& store, const CrossHostRequest& request,
                         CrossHostScope* scope) {
  if (!request.since.has_value() && !request.until.has_value()) return absl::OkStatus();
  QueryOptions q;
  q.run_id = scope->reference.run_id;
  q.since = request.since;
  q.until = request.until;
  TICKTRACE_ASSIGN_OR_RETURN(const ResolvedQuery resolved, ResolveQuery(store, q));
  scope->window = resolved.window;
  if (resolved.filter.since_utc_ns.has_value()) {
    scope->filters = absl::StrCat("since ", FormatUtcNs(*resolved.filter.since_utc_ns));
  }
  if (resolved.filter.until_utc_ns.has_value()) {
    absl::StrAppend(&scope->filters, scope->filters.empty() ? "" : ", ", "until ",
                    FormatUtcNs(*resolved.filter.until_utc_ns));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CrossHostScope> ResolveCrossHost(store::StoreReader& store,
                                                const CrossHostRequest& request,
                                                std::optional<int64_t> order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<store::RunRow> runs, store.ListRuns());
  if (runs.empty()) return absl::NotFoundError(absl::StrCat(store.path(), ": no run in the store"));
  TICKTRACE_ASSIGN_OR_RETURN(const std::vector<std::string> store_hosts,
                             StoreHosts(store, runs, request));
  CrossHostScope scope;
  scope.store_path = store.path();
  TICKTRACE_ASSIGN_OR_RETURN(scope.reference, ReferenceRun(store, runs, request, order_id));
  scope.hosts = request.hosts.empty() ? store_hosts : request.hosts;
  // The reference's host first.
  std::stable_partition(scope.hosts.begin(), scope.hosts.end(),
                        [&](const std::string& h) { return h == scope.reference.host; });
  scope.options.pipeline = request.pipeline;
  scope.options.window_ns = request.window_ns;
  scope.options.hosts = request.hosts;
  TICKTRACE_RETURN_IF_ERROR(ApplyWindow(store, request, &scope));
  return scope;
}

absl::StatusOr<CrossHostBreakdown> BuildCrossHostBreakdown(store::StoreReader& store,
                                                           const CrossHostScope& scope) {
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::vector<UtcStitchedOrder> orders,
      StitchOrders(store, scope.reference.run_id, scope.window, scope.options, 0));
  return BreakdownOf(scope, orders);
}

CrossHostSlowest RankStitched(const CrossHostScope& scope,
                              const std::vector<UtcStitchedOrder>& orders,
                              const std::string& stage, int64_t n) {
  CrossHostSlowest s;
  s.scope = scope;
  s.stage = stage;
  for (const UtcStitchedOrder& o : orders) {
    RankedStitchedOrder r;
    r.total = StitchedTotal(o);
    std::optional<double> latency;
    if (stage == "total") {
      if (r.total) latency = r.total->latency_ns;
    } else {
      for (const StitchedStage& st : o.stages) {
        if (st.stage == stage) latency = std::max(latency.value_or(st.latency_ns), st.latency_ns);
      }
    }
    if (!latency) continue;
    r.latency_ns = *latency;
    r.order = o;
    s.orders.push_back(std::move(r));
  }
  std::sort(s.orders.begin(), s.orders.end(),
            [](const RankedStitchedOrder& a, const RankedStitchedOrder& b) {
              if (a.latency_ns != b.latency_ns) return a.latency_ns > b.latency_ns;
              return a.order.order_id < b.order.order_id;
            });
  if (static_cast<int64_t>(s.orders.size()) > n) s.orders.resize(static_cast<size_t>(n));
  return s;
}

absl::StatusOr<CrossHostSlowest> BuildCrossHostSlowest(store::StoreReader& store,
                                                       const CrossHostScope& scope,
                                                       const std::string& stage, int64_t n) {
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::vector<UtcStitchedOrder> orders,
      StitchOrders(store, scope.reference.run_id, scope.window, scope.options, 0));
  CrossHostSlowest s = RankStitched(scope, orders, stage, n);
  if (s.orders.empty() && !orders.empty()) {
    std::vector<std::string> names;
    for (const StitchedStageStats& st : SummarizeStitched(orders, true)) names.push_back(st.stage);
    return absl::NotFoundError(absl::StrCat("no stitched order has stage '", stage,
                                            "' (stages: ", absl::StrJoin(names, ", "), ")"));
  }
  return s;
}

absl::StatusOr<CrossHostOrder> BuildCrossHostOrder(store::StoreReader& store,
                                                   const CrossHostScope& scope,
                                                   int64_t order_id) {
  TICKTRACE_ASSIGN_OR_RETURN(
      std::optional<UtcStitchedOrder> order,
      StitchOrder(store, scope.reference.run_id, order_id, scope.options));
  if (!order.has_value()) {
    return absl::NotFoundError(absl::StrCat("run ", scope.reference.run_id, " (host ",
                                            scope.reference.host, ") has no order ",
                                            FormatOrderId(order_id)));
  }
  CrossHostOrder o;
  o.scope = scope;
  o.order = std::move(*order);
  o.total = StitchedTotal(o.order);
  return o;
}

absl::StatusOr<CrossHostReport> BuildCrossHostReport(store::StoreReader& store,
                                                     const CrossHostScope& scope,
                                                     int64_t slowest) {
  TICKTRACE_ASSIGN_OR_RETURN(
      const std::vector<UtcStitchedOrder> orders,
      StitchOrders(store, scope.reference.run_id, scope.window, scope.options, 0));
  CrossHostReport r;
  r.breakdown = BreakdownOf(scope, orders);
  r.slowest = RankStitched(scope, orders, "total", slowest);
  return r;
}

std::string StageHosts(const std::string& from_host, const std::string& to_host) {
  return from_host == to_host ? from_host : absl::StrCat(from_host, " -> ", to_host);
}

std::string UncertaintyText(bool cross_host, const std::optional<double>& uncertainty_ns) {
  if (!cross_host) return "";
  return uncertainty_ns.has_value() ? absl::StrCat("± ", FormatDurationNs(*uncertainty_ns))
                                    : "unknown";
}

}  // namespace ticktrace::view
