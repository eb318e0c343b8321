#include "viewer/cli/commands.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "viewer/cli/args.h"
#include "viewer/export/chrome_export.h"
#include "viewer/export/csv_export.h"
#include "viewer/views/budget_check.h"
#include "viewer/views/diff_report.h"
#include "viewer/export/hlog_export.h"
#include "viewer/export/otlp_export.h"
#include "viewer/views/intervals_report.h"
#include "viewer/format/json_output.h"
#include "viewer/views/percentile_report.h"
#include "viewer/html/report.h"
#include "viewer/views/runs_report.h"
#include "viewer/hosts/stitched_views.h"
#include "ticktrace/store/open.h"
#include "ticktrace/store/reader.h"
#include "viewer/views/summary.h"
#include "viewer/cli/time_arg.h"
#include "common/duration.h"
#include "viewer/views/timeline.h"
#include "viewer/views/top.h"
#include "viewer/views/waterfall.h"
#include "ticktrace/version.h"
#include "common/status_macros.h"

namespace ticktrace::view {
namespace {

constexpr char kProgram[] = "ticktrace-view";

const FlagSpec kDbFlag = DbFlag();
const FlagSpec kStoreFlag = StoreFlag();
const FlagSpec kRunFlag = {"run", "N", "the run (default: the latest)"};
const FlagSpec kProcessFlag = {"process", "P",
                               "only samples with an end in process P (an OS pid or a name)"};
const FlagSpec kSinceFlag = {"since", "T",
                             "only samples starting at or after T (RFC 3339 like "
                             "2026-11-30T08:00:00Z; -5m before the run's last sample; +30s "
                             "after its first)"};
const FlagSpec kUntilFlag = {"until", "T", "only samples starting at or before T (as --since)"};
const FlagSpec kIncludeFlaggedFlag = {
    "include-flagged", "",
    "count migrated, negative and cross-core samples in the percentiles (default: as the "
    "collector did for the run)"};
const FlagSpec kExcludeFlaggedFlag = {"exclude-flagged", "",
                                      "keep flagged samples out of the percentiles"};

const FlagSpec kJsonFlag = {"json", "", "print JSON instead of text (fields in docs/viewer.md)"};

const FlagSpec kExactFlag = {"exact", "",
                             "exact nearest-rank statistics from the stored samples instead of "
                             "the interval histograms"};

constexpr char kFilterText[] =
    "The numbers are the run's interval histograms merged over the whole run, or over\n"
    "the intervals that start in --since..--until (log-linear percentiles within\n"
    "0.4%, every order counted whatever detail the store kept). With --process, with\n"
    "an --include-flagged/--exclude-flagged the collector did not use, or with\n"
    "--exact, they are computed here from the stored samples: exact nearest-rank\n"
    "percentiles, of the orders whose detail the store kept (\"detail sampled\" says\n"
    "when that is not every order). Flagged samples count in the percentiles as the\n"
    "collector counted them for the run, unless --include-flagged or\n"
    "--exclude-flagged says otherwise.";

constexpr char kCrossHostText[] =
    "With --hosts (several hosts' collectors writing one store: docs/clickhouse.md),\n"
    "each order of the reference run (--run; default: the latest run whose pipeline\n"
    "has the first --pipeline tag) is stitched by order id with its instances on the\n"
    "other hosts' runs. Every stage names the host of each end; a stage across hosts\n"
    "is a UTC difference, flagged cross_host, with an uncertainty: the sum of the two\n"
    "hosts' clock error bounds (unknown when either is).";

struct Command {
  CommandSpec spec;
  std::function<absl::Status(const ParsedArgs&, std::ostream&, bool)> run;
  // Instead of `run`, for a command whose success has an exit status of its
  // own (check: 1 when a budget is breached).
  std::function<absl::StatusOr<int>(const ParsedArgs&, std::ostream&)> run_with_exit = nullptr;
};

// Opens the store that --db or --store names (a snapshot: see store::OpenMode).
absl::StatusOr<std::unique_ptr<store::StoreReader>> OpenStore(const ParsedArgs& args) {
  TICKTRACE_ASSIGN_OR_RETURN(const store::StoreUri uri, StoreUriFromArgs(args));
  return store::OpenReader(uri);
}

// The filters shared by summary, percentiles and top.
absl::StatusOr<QueryOptions> QueryFromArgs(const ParsedArgs& args) {
  QueryOptions q;
  TICKTRACE_ASSIGN_OR_RETURN(q.run_id, args.IntValue("run", 0));
  q.stage = args.Value("stage");
  q.process = args.Value("process");
  if (auto text = args.Value("since")) {
    TICKTRACE_ASSIGN_OR_RETURN(q.since, ParseTimeArg("--since", *text));
  }
  if (auto text = args.Value("until")) {
    TICKTRACE_ASSIGN_OR_RETURN(q.until, ParseTimeArg("--until", *text));
  }
  if (args.Has("include-flagged") && args.Has("exclude-flagged")) {
    return absl::InvalidArgumentError("--include-flagged and --exclude-flagged contradict");
  }
  if (args.Has("include-flagged")) q.include_flagged = true;
  if (args.Has("exclude-flagged")) q.include_flagged = false;
  q.exact = args.Has("exact");
  return q;
}

// The statistics window ([since, until + 1) in UTC ns) of --since/--until
// on the run `query` names; NotFound for an unknown run.
absl::StatusOr<store::TimeWindow> WindowOf(store::StoreReader& store, const QueryOptions& query) {
  QueryOptions window_only;
  window_only.run_id = query.run_id;
  window_only.since = query.since;
  window_only.until = query.until;
  TICKTRACE_ASSIGN_OR_RETURN(ResolvedQuery q, ResolveQuery(store, window_only));
  return q.window;
}

// The flags a subcommand's single-run view has that the cross-host view
// (--hosts) does not: a usage error when given with --hosts.
absl::Status RejectWithHosts(const ParsedArgs& args, std::initializer_list<const char*> flags) {
  for (const char* flag : flags) {
    if (args.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " does not apply with --hosts (stitched orders: every stamp counts)"));
    }
  }
  return absl::OkStatus();
}

// `spec`'s flags with the cross-host ones (stitched_views.h) before --json.
std::vector<FlagSpec> WithCrossHostFlags(std::vector<FlagSpec> flags) {
  std::vector<FlagSpec> extra = CrossHostFlags();
  auto at = std::find_if(flags.begin(), flags.end(),
                         [](const FlagSpec& f) { return f.name == "json"; });
  flags.insert(at, extra.begin(), extra.end());
  return flags;
}

// summary: the per-stage table or JSON.
absl::Status SummaryCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<CrossHostRequest> cross, CrossHostFromArgs(args));
  if (cross.has_value()) {
    TICKTRACE_RETURN_IF_ERROR(RejectWithHosts(
        args, {"process", "include-flagged", "exclude-flagged", "exact"}));
    TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
    TICKTRACE_ASSIGN_OR_RETURN(CrossHostScope scope, ResolveCrossHost(*store, *cross));
    TICKTRACE_ASSIGN_OR_RETURN(CrossHostBreakdown b, BuildCrossHostBreakdown(*store, scope));
    if (auto stage = args.Value("stage")) {
      std::erase_if(b.stages, [&](const StitchedStageStats& s) { return s.stage != *stage; });
      if (b.stages.empty()) {
        return absl::NotFoundError(absl::StrCat("no stitched order has stage '", *stage, "'"));
      }
    }
    out << (args.Has("json") ? RenderCrossHostBreakdownJson(b) : RenderCrossHostBreakdownText(b));
    return absl::OkStatus();
  }
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(Summary summary, BuildSummary(*store, query));
  out << (args.Has("json") ? RenderSummaryJson(summary) : RenderSummaryText(summary));
  return absl::OkStatus();
}

// orders --slowest N: the slowest orders with their waterfalls.
absl::Status OrdersCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> n, args.IntValue("slowest", 1));
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<CrossHostRequest> cross, CrossHostFromArgs(args));
  if (cross.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
    TICKTRACE_ASSIGN_OR_RETURN(CrossHostScope scope, ResolveCrossHost(*store, *cross));
    TICKTRACE_ASSIGN_OR_RETURN(
        CrossHostSlowest slowest,
        BuildCrossHostSlowest(*store, scope, args.Value("stage").value_or("total"), *n));
    out << (args.Has("json") ? RenderCrossHostSlowestJson(slowest)
                             : RenderCrossHostSlowestText(slowest));
    return absl::OkStatus();
  }
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(SlowestReport report,
                             FindSlowestOrders(*store, query.run_id, query.stage, *n, query.since,
                                               query.until));
  out << (args.Has("json") ? RenderSlowestJson(report) : RenderWaterfall(report));
  return absl::OkStatus();
}

// order ID: one order's timeline.
absl::Status OrderCommand(const ParsedArgs& args, std::ostream& out, bool) {
  const std::string& text = args.positionals().front();
  const std::optional<int64_t> id = ParseOrderId(text);
  if (!id.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("order ID: expected an integer, got '", text,
                                                    "'"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> run, args.IntValue("run", 0));
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<CrossHostRequest> cross, CrossHostFromArgs(args));
  if (cross.has_value()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
    TICKTRACE_ASSIGN_OR_RETURN(CrossHostScope scope, ResolveCrossHost(*store, *cross, *id));
    TICKTRACE_ASSIGN_OR_RETURN(CrossHostOrder order, BuildCrossHostOrder(*store, scope, *id));
    out << (args.Has("json") ? RenderCrossHostOrderJson(order) : RenderCrossHostOrderText(order));
    return absl::OkStatus();
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(Timeline timeline, BuildTimeline(*store, *id, run));
  out << (args.Has("json") ? RenderTimelineJson(timeline) : RenderTimeline(timeline));
  return absl::OkStatus();
}

// percentiles --stage S: one stage's HdrHistogram-style distribution.
absl::Status PercentilesCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  ValueUnit unit = ValueUnit::kMicroseconds;
  const std::string unit_text = args.Value("unit").value_or("us");
  if (unit_text == "ns") {
    unit = ValueUnit::kNanoseconds;
  } else if (unit_text == "ms") {
    unit = ValueUnit::kMilliseconds;
  } else if (unit_text != "us") {
    return absl::InvalidArgumentError(
        absl::StrCat("--unit: expected ns, us or ms, got '", unit_text, "'"));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(StageValues values, CollectStageValues(*store, query));
  std::string label =
      absl::StrCat("run ", values.run.run_id, ", stage ", *query.stage, ", flagged samples ",
                   values.include_flagged ? "included"
                                          : absl::StrCat("excluded (", values.excluded, ")"));
  if (!values.detail.complete()) {
    absl::StrAppend(&label, ", detail sampled (", values.detail.orders_kept, " of ",
                    values.detail.orders, " orders kept)");
  }
  if (args.Has("json")) {
    out << RenderPercentilesJson(values, *query.stage);
    return absl::OkStatus();
  }
  out << RenderPercentileDistribution(values.sorted_ns, unit, label);
  return absl::OkStatus();
}

// runs: every run in the store.
absl::Status RunsCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(std::string text,
                             args.Has("json") ? RenderRunsJson(*store) : RenderRuns(*store));
  out << text;
  return absl::OkStatus();
}

// export --format chrome|csv|hlog|otlp-json --out FILE, or --format otlp
// --endpoint URL: writes a file (or stdout), or POSTs to a receiver, and says what.
absl::Status ExportCommand(const ParsedArgs& args, std::ostream& out, bool) {
  const std::string format = *args.Value("format");
  if (format != "chrome" && format != "csv" && format != "hlog" && format != "otlp-json" &&
      format != "otlp") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format: expected chrome, csv, hlog, otlp-json or otlp, got '", format, "'"));
  }
  const bool to_endpoint = format == "otlp";
  if (to_endpoint != args.Has("endpoint")) {
    return absl::InvalidArgumentError(to_endpoint
                                          ? "--format otlp needs --endpoint URL (an OTLP/HTTP receiver)"
                                          : "--endpoint is for --format otlp only");
  }
  if (!to_endpoint && !args.Has("out")) {
    return absl::InvalidArgumentError(absl::StrCat("--format ", format, " needs --out FILE"));
  }
  if (to_endpoint && args.Has("out")) {
    return absl::InvalidArgumentError("--out is not for --format otlp (it POSTs to --endpoint)");
  }
  ExportOptions options;
  TICKTRACE_ASSIGN_OR_RETURN(options.run_id, args.IntValue("run", 0));
  TICKTRACE_ASSIGN_OR_RETURN(options.limit, args.IntValue("limit", 1));
  TICKTRACE_ASSIGN_OR_RETURN(options.slowest, args.IntValue("slowest", 1));
  options.flagged = args.Has("flagged");
  if (args.Has("order")) {
    options.order_id = ParseOrderId(*args.Value("order"));
    if (!options.order_id.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--order: expected an order id, got '", *args.Value("order"), "'"));
    }
  }
  if (format == "hlog" && (options.slowest || options.flagged || options.order_id)) {
    return absl::InvalidArgumentError(
        "--slowest, --flagged and --order select orders: not for --format hlog");
  }
  if (options.slowest.has_value() && options.order_id.has_value()) {
    return absl::InvalidArgumentError("--slowest and --order: give one of them");
  }
  const std::string out_path = to_endpoint ? "" : *args.Value("out");
  if (out_path == "-" && args.Has("json")) {
    return absl::InvalidArgumentError("--json with --out -: stdout holds the export itself");
  }
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  // Check the run (and resolve the window against it) before creating the
  // output file.
  TICKTRACE_ASSIGN_OR_RETURN(options.window, WindowOf(*store, query));
  {
    // Flagged and ERROR spans: the flags the run's percentiles leave out.
    TICKTRACE_ASSIGN_OR_RETURN(const store::RunRow run, store->GetRun(options.run_id));
    TICKTRACE_ASSIGN_OR_RETURN(const bool includes_flagged, RunIncludesFlagged(*store, run));
    options.excluded_flags = includes_flagged ? 0 : store::kFlagsExcludedByDefault;
  }
  ExportResult result;
  if (to_endpoint) {
    const std::string endpoint = *args.Value("endpoint");
    TICKTRACE_ASSIGN_OR_RETURN(result, ExportOtlpHttp(*store, options, endpoint));
    if (args.Has("json")) {
      out << RenderExportJson(result, format, endpoint);
    } else {
      out << "run " << result.run_id << ": " << result.orders << " orders, " << result.spans
          << " spans -> " << endpoint << " (" << result.batches << " batches, " << result.retries
          << " retries)\n";
    }
    return absl::OkStatus();
  }
  TICKTRACE_RETURN_IF_ERROR(
      WriteOutput(out_path, store->path(), [&](std::ostream& file) -> absl::Status {
        absl::StatusOr<ExportResult> r = format == "chrome"      ? ExportChrome(*store, options, file)
                                         : format == "hlog"      ? ExportHlog(*store, options, file)
                                         : format == "otlp-json" ? ExportOtlpJson(*store, options, file)
                                                                 : ExportCsv(*store, options, file);
        if (!r.ok()) return r.status();
        result = *r;
        return absl::OkStatus();
      },
      args.Has("force")));
  if (out_path != "-" && args.Has("json")) {
    out << RenderExportJson(result, format, out_path);
  } else if (out_path != "-") {
    out << "run " << result.run_id << ": "
        << (format == "chrome" ? absl::StrCat(result.orders, " orders, ", result.stamps, " stamps")
            : format == "hlog" ? absl::StrCat(result.rows, " interval histograms")
            : format == "otlp-json" ? absl::StrCat(result.orders, " orders, ", result.spans, " spans")
                               : absl::StrCat(result.orders, " orders, ", result.rows, " samples"))
        << " -> " << out_path << "\n";
  }
  return absl::OkStatus();
}

// top: the summary, redrawn until a signal or --iterations.
absl::Status TopCommand(const ParsedArgs& args, std::ostream& out, bool stdout_is_tty) {
  TopOptions options;
  TICKTRACE_ASSIGN_OR_RETURN(options.query, QueryFromArgs(args));
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> iterations, args.IntValue("iterations", 1));
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> interval, args.IntValue("interval-ms", 1));
  options.iterations = iterations.value_or(0);
  options.interval_ms = interval.value_or(1000);
  options.json = args.Has("json");
  options.clear_screen = stdout_is_tty && !options.json;
  TICKTRACE_ASSIGN_OR_RETURN(const store::StoreUri uri, StoreUriFromArgs(args));
  return RunTop(uri, options, out);
}

// report --out FILE: the self-contained HTML report (report.h).
absl::Status ReportCommand(const ParsedArgs& args, std::ostream& out, bool) {
  ReportRequest request;
  TICKTRACE_ASSIGN_OR_RETURN(request.store_uri, StoreUriFromArgs(args));
  request.out_path = *args.Value("out");
  TICKTRACE_ASSIGN_OR_RETURN(request.run_id, args.IntValue("run", 0));
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> slowest, args.IntValue("slowest", 1));
  request.slowest = slowest.value_or(kDefaultReportSlowest);
  request.force = args.Has("force");
  request.json = args.Has("json");
  if (request.out_path == "-" && request.json) {
    return absl::InvalidArgumentError("--json with --out -: stdout holds the report itself");
  }
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  request.since = query.since;
  request.until = query.until;
  TICKTRACE_ASSIGN_OR_RETURN(request.cross_host, CrossHostFromArgs(args));
  return WriteHtmlReport(request, out);
}

// intervals: per-stage statistics per interval or --every bucket.
absl::Status IntervalsCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  std::optional<int64_t> every_ns;
  if (auto text = args.Value("every")) {
    TICKTRACE_ASSIGN_OR_RETURN(every_ns, ParseDurationNs("--every", *text));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(IntervalsReport report, BuildIntervals(*store, query, every_ns));
  out << (args.Has("json") ? RenderIntervalsJson(report) : RenderIntervalsText(report));
  return absl::OkStatus();
}

// diff: the baseline (--against*) against the run the usual flags name.
absl::Status DiffCommand(const ParsedArgs& args, std::ostream& out, bool) {
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions after, QueryFromArgs(args));
  QueryOptions before = after;
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> against_run, args.IntValue("against", 0));
  const bool other_store = args.Has("against-db") || args.Has("against-store");
  if (args.Has("against-db") && args.Has("against-store")) {
    return absl::InvalidArgumentError("--against-db and --against-store both name a store; give one");
  }
  // The baseline run: --against N; else another store's latest run; else
  // the same run (then a different window must be given).
  before.run_id = against_run.has_value() ? against_run : (other_store ? std::nullopt : after.run_id);
  if (args.Has("against-since") || args.Has("against-until")) {
    before.since.reset();
    before.until.reset();
    if (auto text = args.Value("against-since")) {
      TICKTRACE_ASSIGN_OR_RETURN(before.since, ParseTimeArg("--against-since", *text));
    }
    if (auto text = args.Value("against-until")) {
      TICKTRACE_ASSIGN_OR_RETURN(before.until, ParseTimeArg("--against-until", *text));
    }
  }
  std::optional<int64_t> every_ns;
  if (auto text = args.Value("every")) {
    TICKTRACE_ASSIGN_OR_RETURN(every_ns, ParseDurationNs("--every", *text));
  }
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  std::unique_ptr<store::StoreReader> against_store;
  if (other_store) {
    TICKTRACE_ASSIGN_OR_RETURN(const store::StoreUri uri,
                               StoreUriFromArgs(args, "against-store", "against-db"));
    TICKTRACE_ASSIGN_OR_RETURN(against_store, store::OpenReader(uri));
  }
  TICKTRACE_ASSIGN_OR_RETURN(DiffSide after_side, ReadDiffSide(*store, after, every_ns));
  TICKTRACE_ASSIGN_OR_RETURN(
      DiffSide before_side,
      ReadDiffSide(other_store ? *against_store : *store, before, every_ns));
  if (!other_store && before_side.run.run_id == after_side.run.run_id &&
      before_side.window.since_utc_ns == after_side.window.since_utc_ns &&
      before_side.window.until_utc_ns == after_side.window.until_utc_ns) {
    return absl::InvalidArgumentError(absl::StrCat(
        "diff would compare run ", after_side.run.run_id,
        " with itself: give --against N, --against-since/--against-until or --against-db"));
  }
  const DiffReport report = CompareSides(std::move(before_side), std::move(after_side));
  out << (args.Has("json") ? RenderDiffJson(report) : RenderDiffText(report));
  return absl::OkStatus();
}

// check: the run or window against latency budgets; exit 1 on a breach.
absl::StatusOr<int> CheckCommand(const ParsedArgs& args, std::ostream& out) {
  TICKTRACE_ASSIGN_OR_RETURN(QueryOptions query, QueryFromArgs(args));
  std::vector<Budget> budgets;
  if (auto path = args.Value("budgets")) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<Budget> from_file, ReadBudgetFile(*path));
    TICKTRACE_RETURN_IF_ERROR(AddBudgets(std::move(from_file), &budgets));
  }
  for (const std::string& text : args.Values("budget")) {
    TICKTRACE_ASSIGN_OR_RETURN(Budget b, ParseBudget("--budget", text));
    TICKTRACE_RETURN_IF_ERROR(AddBudgets({std::move(b)}, &budgets));
  }
  BudgetCheckOptions options;
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> min_samples, args.IntValue("min-samples", 1));
  options.min_samples = min_samples.value_or(0);
  TICKTRACE_ASSIGN_OR_RETURN(std::optional<int64_t> worst, args.IntValue("worst", 0));
  options.worst = static_cast<int>(std::min<int64_t>(worst.value_or(3), 100));
  TICKTRACE_ASSIGN_OR_RETURN(std::unique_ptr<store::StoreReader> store, OpenStore(args));
  TICKTRACE_ASSIGN_OR_RETURN(BudgetCheck check, CheckBudgets(*store, query, budgets, options));
  out << (args.Has("json") ? RenderBudgetCheckJson(check) : RenderBudgetCheckText(check));
  return check.breaches > 0 ? kExitBudgetBreach : kExitOk;
}

// Every subcommand, in the order --help lists them.
const std::vector<Command>& Commands() {
  static const std::vector<Command>* commands = new std::vector<Command>{
      {{"summary",
        "per-stage latency table (or --json) of a run",
        "Per-stage latency breakdown of one run: count, min, p50, p90, p99, p99.9, max,\n"
        "mean and flag counts, stages in pipeline order with total last, under a header\n"
        "with the calibration and the loss counters.",
        absl::StrCat(kFilterText, "\n\n", kCrossHostText),
        WithCrossHostFlags(
            {kDbFlag, kStoreFlag, kRunFlag,
             {"stage", "S", "only stage S"},
             kProcessFlag, kSinceFlag, kUntilFlag, kIncludeFlaggedFlag, kExcludeFlaggedFlag,
             kExactFlag, {"json", "", "print one JSON object (fields in docs/viewer.md)"}}),
        "",
        "ticktrace-view summary --db trace.db --since -5m --json"},
       SummaryCommand},
      {{"orders",
        "the N slowest orders with a per-stage waterfall",
        "The N slowest orders (by total, or by one stage) with a per-stage waterfall.",
        absl::StrCat("Every sample ranks, flagged or not; flags are marked M (migrated), N "
                     "(negative),\nX (cross-core).\n\n",
                     kCrossHostText),
        WithCrossHostFlags(
            {kDbFlag, kStoreFlag, {"slowest", "N", "how many orders", /*required=*/true},
             {"stage", "S", "rank by stage S instead of total"}, kRunFlag, kSinceFlag,
             kUntilFlag, kJsonFlag}),
        "",
        "ticktrace-view orders --db trace.db --slowest 10 --stage 'strategy->gateway'"},
       OrdersCommand},
      {{"order",
        "one order's timeline, stamp by stamp",
        "One order's timeline: every stamp of the order and of the orders it is linked\n"
        "to, with process, thread, core, UTC time, the delta from the previous stamp\n"
        "and flags.",
        absl::StrCat("ID is the order ID as given to the trace API (decimal). Default run: the "
                     "latest\nrun that holds the order.\n\n",
                     kCrossHostText),
        WithCrossHostFlags({kDbFlag, kStoreFlag, kRunFlag, kJsonFlag}),
        "ID",
        "ticktrace-view order --db trace.db 1042"},
       OrderCommand},
      {{"percentiles",
        "one stage's distribution, HdrHistogram format",
        "One stage's latency distribution in HdrHistogram's percentile format (Value,\n"
        "Percentile, TotalCount, 1/(1-Percentile)), computed exactly from the samples.",
        "",
        {kDbFlag, kStoreFlag, {"stage", "S", "the stage", /*required=*/true}, kRunFlag, kProcessFlag,
         kSinceFlag, kUntilFlag, kIncludeFlaggedFlag, kExcludeFlaggedFlag,
         {"unit", "U", "unit of the Value column: ns, us (default) or ms"}, kJsonFlag},
        "",
        "ticktrace-view percentiles --db trace.db --stage total > total.hgrm"},
       PercentilesCommand},
      {{"runs",
        "the runs in the store",
        "The runs in the store with their time span, host, calibration, pipeline,\n"
        "processes and counters.",
        "",
        {kDbFlag, kStoreFlag, kJsonFlag},
        "",
        "ticktrace-view runs --db trace.db"},
       RunsCommand},
      {{"export",
        "Chrome trace JSON (Perfetto), CSV of samples, an HdrHistogram log, or OTLP traces",
        "Export a run: its orders as Chrome Trace Event JSON (open in ui.perfetto.dev or\n"
        "chrome://tracing), as CSV of the stage samples, or as OpenTelemetry traces (OTLP),\n"
        "or its interval histograms as an HdrHistogram interval log.",
        "chrome: a track per process and thread, each stamp an event, spans with their\n"
        "duration, an order's stamps joined by flow arrows, and a parent's to its linked\n"
        "children's. csv: one row per sample after a header row. --limit N takes the\n"
        "run's first N orders by time. hlog: one line per stage (Tag=stage) per interval,\n"
        "V2 compressed histograms of latencies in ns (HdrHistogram's tools read it).\n"
        "otlp-json: one OTLP/JSON ExportTraceServiceRequest, a trace per order (a root\n"
        "span, a span per stage); otlp: the same as protobuf POSTed to --endpoint URL\n"
        "(URL/v1/traces). --slowest N, --flagged and --order ID narrow the orders\n"
        "(chrome, csv, otlp). An existing --out is left alone unless --force is given.\n"
        "--out - writes to stdout.",
        {kDbFlag, kStoreFlag, {"format", "F", "chrome, csv, hlog, otlp-json or otlp", /*required=*/true},
         {"out", "FILE", "the output file (not with otlp)"},
         {"endpoint", "URL", "otlp: the OTLP/HTTP receiver, e.g. http://127.0.0.1:4318"},
         {"limit", "N", "only the first N orders (chrome, csv, otlp)"},
         {"slowest", "N", "only the N slowest orders by total latency"},
         {"flagged", "", "only orders with a flag the percentiles exclude"},
         {"order", "ID", "only this order (all its instances)"}, kRunFlag, kSinceFlag,
         kUntilFlag, {"force", "", "replace --out if it exists"},
         {"json", "", "say what was written as JSON (not with --out -)"}},
        "",
        "ticktrace-view export --db trace.db --format chrome --out trace.json --limit 1000\n"
        "ticktrace-view export --db trace.db --format otlp --endpoint http://127.0.0.1:4318 --slowest 100"},
       ExportCommand},
      {{"top",
        "the summary, redrawn every second, until Ctrl-C",
        "The summary, redrawn every second while a collector writes the store, until\n"
        "Ctrl-C. Follows the latest run unless --run is given.",
        kFilterText,
        {kDbFlag, kStoreFlag, kRunFlag, {"stage", "S", "only stage S"}, kProcessFlag, kSinceFlag, kUntilFlag,
         kIncludeFlaggedFlag, kExcludeFlaggedFlag, kExactFlag,
         {"json", "", "each frame one line of JSON (the summary's object)"},
         {"iterations", "N", "stop after N frames (tests)", false, /*hidden=*/true},
         {"interval-ms", "MS", "time between frames (tests)", false, /*hidden=*/true}},
        "",
        "ticktrace-view top --db trace.db"},
       TopCommand},
      {{"report",
        "a self-contained HTML report with plots",
        "One HTML file about a run: header and loss counters, the per-stage breakdown,\n"
        "latency histograms and percentile plots per stage, the slowest orders as\n"
        "waterfalls, and the flag counts. Inline SVG and CSS; no scripts, no network.",
        absl::StrCat("An existing --out is left alone unless --force is given. --out - writes "
                     "to\nstdout. Statistics are the summary's; plots are drawn from the stored "
                     "samples.\n\n",
                     kCrossHostText,
                     "\nThe report then adds the stitched breakdown and the slowest stitched "
                     "orders,\neach stage with the host it ran on."),
        WithCrossHostFlags(
            {kDbFlag, kStoreFlag, {"out", "FILE", "the HTML file", /*required=*/true}, kRunFlag,
             {"slowest", "N", "how many slowest orders to draw (default 5)"}, kSinceFlag,
             kUntilFlag, {"force", "", "replace --out if it exists"},
             {"json", "", "say what was written as JSON (not with --out -)"}}),
        "",
        "ticktrace-view report --db trace.db --out report.html"},
       ReportCommand},
      {{"intervals",
        "per-stage p50/p99/max/count over time",
        "A run's statistics over time: per stage, one row per interval (the collector's\n"
        "--interval-s) or per --every bucket, with count, p50, p99, max, the samples kept\n"
        "out of the percentiles and the orders whose detail the store holds.",
        "The numbers are the stored interval histograms, merged per bucket (log-linear\n"
        "percentiles within 0.4%, every order counted). --since/--until select the\n"
        "intervals that start in the window.",
        {kDbFlag, kStoreFlag, kRunFlag, {"stage", "S", "only stage S"}, kSinceFlag, kUntilFlag,
         {"every", "D", "one row per bucket of D (1m, 10s; a multiple of the run's interval)"},
         kIncludeFlaggedFlag, kExcludeFlaggedFlag,
         {"json", "", "print one JSON object (fields in docs/viewer.md)"}},
        "",
        "ticktrace-view intervals --db trace.db --every 1m --since -1h"},
       IntervalsCommand},
      {{"diff",
        "two runs, windows or stores compared per stage",
        "Compares a baseline (before) with a run (after), per stage: count, p50, p99 and\n"
        "p99.9 before -> after, the change in %, and whether it is beyond both the\n"
        "histograms' precision and the interval-to-interval noise (marked *).",
        "After: the run that --db/--store, --run, --since and --until name. Before: run\n"
        "--against N (default: the same run, or the latest run of --against-db/\n"
        "--against-store), over --against-since..--against-until (default: --since and\n"
        "--until, so relative times take the same part of each run). --every D measures\n"
        "the noise over buckets of D instead of single intervals.",
        {kDbFlag, kStoreFlag, kRunFlag, {"stage", "S", "only stage S"}, kSinceFlag, kUntilFlag,
         {"against", "N", "the baseline run"},
         {"against-db", "PATH", "the baseline's SQLite store (default: the same store)"},
         {"against-store", "URI", "the baseline's store, as --store"},
         {"against-since", "T", "the baseline's window start (as --since)"},
         {"against-until", "T", "the baseline's window end (as --until)"},
         {"every", "D", "buckets for the noise estimate (a multiple of the run's interval)"},
         kIncludeFlaggedFlag, kExcludeFlaggedFlag,
         {"json", "", "print one JSON object (fields in docs/viewer.md)"}},
        "",
        "ticktrace-view diff --db trace.db --run 3 --against 2"},
       DiffCommand},
      {{"check",
        "a run or window against latency budgets (exit 1 on a breach)",
        "Judges a run, or a window of it, against latency budgets: per budget the\n"
        "measured figure, the limit, the samples, OK, BREACH or not enough samples, and\n"
        "the worst intervals. Exit status 1 when any budget is breached: the gate a CI\n"
        "job runs after its benchmark.",
        "A budget is STAGE:STAT<LIMIT (or <= to let the limit itself pass): STAT is max\n"
        "or pQ (p50, p99, p99.9), LIMIT a duration (20us, 1.5ms). A quantile needs\n"
        "100/(100-Q) samples for its rank (p99: 100), else it is \"not enough samples\",\n"
        "which is no breach unless --min-samples asks for more. Figures come from the\n"
        "interval histograms (within 0.4%), flagged samples as the run counted them.",
        {kDbFlag, kStoreFlag, kRunFlag, kSinceFlag, kUntilFlag,
         {"budget", "B", "a budget, e.g. 'decide:p99<20us'", false, false, "", "", /*repeated=*/true},
         {"budgets", "FILE", "budgets, one per line, # comments"},
         {"min-samples", "N", "fewer samples than N is a breach"},
         {"worst", "K", "worst intervals listed per budget (default 3)"},
         {"json", "", "print one JSON object (fields in docs/viewer.md)"}},
        "",
        "ticktrace-view check --db trace.db --budget 'decide:p99<20us' --budget 'total:max<1ms'"},
       nullptr, CheckCommand},
  };
  return *commands;
}

// `ticktrace-view --help`: the subcommands, in the help layout of every
// program (common/flags.h).
std::string GeneralHelp() {
  CommandSpec spec;
  spec.usage = {"<subcommand> --db PATH | --store URI [flags]"};
  spec.synopsis = "Reads a ticktrace store (never writes it).\n\nsubcommands:";
  for (const Command& c : Commands()) {
    absl::StrAppend(&spec.synopsis, "\n  ", c.spec.name,
                    std::string(13 - c.spec.name.size(), ' '), c.spec.brief);
  }
  spec.description = absl::StrCat(kProgram,
                                  " <subcommand> --help shows a subcommand's flags.\n"
                                  "Exit status: 0 ok, 1 runtime or data error, 2 usage error.");
  return CommandHelp(kProgram, spec);
}

}  // namespace

int ExitStatusFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  // Unimplemented: a store kind this build cannot read (clickhouse://), a
  // usage error like an unknown scheme.
  return absl::IsInvalidArgument(status) || absl::IsUnimplemented(status) ? kExitUsageError
                                                                          : kExitRuntimeError;
}

int RunViewer(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              bool stdout_is_tty) {
  const auto fail = [&](const absl::Status& status, absl::string_view command) {
    std::string message = absl::StrReplaceAll(status.message(), {{"\n", " "}});
    err << kProgram << ": " << message;
    if (absl::IsInvalidArgument(status)) {
      err << " (see " << kProgram << (command.empty() ? "" : " ") << command << " --help)";
    }
    err << "\n";
    return ExitStatusFor(status);
  };
  if (args.empty()) return fail(absl::InvalidArgumentError("missing subcommand"), "");
  const std::string& name = args.front();
  if (name == "--help" || name == "-h" || name == "help") {
    out << GeneralHelp();
    return kExitOk;
  }
  if (name == "--version" || name == "version") {
    out << VersionLine(kProgram) << "\n";
    return kExitOk;
  }
  for (const Command& c : Commands()) {
    if (c.spec.name != name) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (WantsHelp(rest)) {
      out << CommandHelp(kProgram, c.spec);
      return kExitOk;
    }
    if (WantsVersion(rest)) {
      out << VersionLine(kProgram) << "\n";
      return kExitOk;
    }
    absl::StatusOr<ParsedArgs> parsed = ParseArgs(c.spec, rest);
    if (!parsed.ok()) return fail(parsed.status(), name);
    if (c.run_with_exit != nullptr) {
      const absl::StatusOr<int> exit_status = c.run_with_exit(*parsed, out);
      if (!exit_status.ok()) return fail(exit_status.status(), name);
      out.flush();
      return *exit_status;
    }
    const absl::Status status = c.run(*parsed, out, stdout_is_tty);
    if (!status.ok()) return fail(status, name);
    out.flush();
    return kExitOk;
  }
  if (name.size() > 1 && name[0] == '-') {
    return fail(absl::InvalidArgumentError(
                    absl::StrCat("unknown flag '", name.substr(0, name.find('=')), "'")),
                "");
  }
  return fail(absl::InvalidArgumentError(absl::StrCat("unknown subcommand '", name, "'")), "");
}

}  // namespace ticktrace::view
