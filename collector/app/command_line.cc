#include "collector/app/command_line.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/budget.h"
#include "common/duration.h"
#include "common/flags.h"
#include "common/otlp/http_exporter.h"
#include "common/size.h"
#include "common/status_macros.h"
#include "ticktrace/store/uri.h"
#include "ticktrace/store/writer.h"

namespace ticktrace::collect {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kDayNs = 86'400 * kSecondNs;

// One row of the flag table: a value flag writes `text`, a boolean `on`.
struct FlagRow {
  const char* section;  // the heading in --help
  const char* name;
  const char* value_name;  // "" for a boolean
  const char* help;
  std::string CollectorFlags::*text;
  bool CollectorFlags::*on;
};

// Every flag, by section in the order --help lists them.
constexpr FlagRow kFlagTable[] = {
    {"what to collect", "session", "NAME",
     "session to collect (default: $TICKTRACE_SESSION, else 'default')",
     &CollectorFlags::session, nullptr},
    {"what to collect", "replay", "ARCHIVE",
     "run from this raw archive instead of shared memory, then exit",
     &CollectorFlags::replay, nullptr},
    {"what to collect", "allow-uid", "USERS",
     "also drain segments owned by these users (UIDs or names, comma-separated); by "
     "default only this collector's own uid's segments are drained",
     &CollectorFlags::allow_uid, nullptr},
    {"what to collect", "max-segment-bytes", "SIZE",
     "refuse a segment that has reserved more than this in /dev/shm (its header, slot "
     "headers and claimed rings, not its sparse size; 1073741824, 512MiB, 64GiB); "
     "default 64GiB, every default 64 rings at the largest ring size",
     &CollectorFlags::max_segment_bytes, nullptr},
    {"what to collect", "duration-s", "SECONDS",
     "stop after this many seconds; 0: until SIGINT/SIGTERM",
     &CollectorFlags::duration_s, nullptr},
    {"what to collect", "cpu", "N",
     "pin every collector thread to core N (e.g. a housekeeping core; one of the "
     "cores it may run on); the CPU used is reported at exit either way",
     &CollectorFlags::cpu, nullptr},
    {"orders and stages", "pipeline", "TAGS",
     "ordered stage tags, e.g. md_rx,decide,order_sent; empty: learn the order from "
     "the first orders",
     &CollectorFlags::pipeline, nullptr},
    {"orders and stages", "order-timeout-ms", "MS",
     "an order with no new record for this long is finished",
     &CollectorFlags::order_timeout_ms, nullptr},
    {"orders and stages", "max-open-orders", "N",
     "orders open at once at most (about 230 bytes each); records of further new "
     "orders are counted (records_over_open_limit), not kept; 0: no limit",
     &CollectorFlags::max_open_orders, nullptr},
    {"orders and stages", "include-flagged", "",
     "percentiles include flagged samples (migrated, negative, out-of-order, "
     "saturated); their counts are reported either way",
     nullptr, &CollectorFlags::include_flagged},
    {"store", "store", "URI",
     "sqlite:PATH or clickhouse://HOST:PORT/DATABASE (default: sqlite:ticktrace.db)",
     &CollectorFlags::store, nullptr},
    {"store", "db", "PATH",
     "short for --store sqlite:PATH; an existing ticktrace store gets a new run "
     "appended, any other existing file is refused; empty: no store",
     &CollectorFlags::db, nullptr},
    {"store", "detail", "all|tail|none",
     "order detail kept: every order, the tail (per stage and interval the slowest, "
     "every flagged or incomplete order, 1 in 100 of the rest) or none",
     &CollectorFlags::detail, nullptr},
    {"store", "interval-s", "SECONDS",
     "length of an interval of the statistics over time",
     &CollectorFlags::interval_s, nullptr},
    {"store", "retain-detail", "none|AGE|SIZE|N%",
     "delete the oldest order detail beyond this store size on disk (500MB, 2GB; 10%: of "
     "the store's filesystem's free space at start) or older than this (30m, 8h, 7d), or "
     "both (8h,2GB); the intervals stay. Default: 10% of the free space, at most 10 GB, "
     "also with an age alone (docs/operations.md); none: keep all",
     &CollectorFlags::retain_detail, nullptr},
    {"store", "retain", "AGE",
     "delete intervals older than this (30d, 12h); empty: keep all",
     &CollectorFlags::retain, nullptr},
    {"store", "checkpoint-interval", "DURATION",
     "save the analysis this often (seconds, or 500ms, 90s, 10m) so that a restart "
     "replays only the journal after it, and free the journal before it; 0: never "
     "(the journal then grows for the whole run)",
     &CollectorFlags::checkpoint_interval, nullptr},
    {"store", "journal-cap", "SIZE",
     "the journal may hold this much (1048576, 64MiB, 2GiB; at least 1MiB) while the "
     "analysis or the store is behind; past it the drain stops and the producers drop "
     "and count; default 2GiB, about a minute at 1 M records/s",
     &CollectorFlags::journal_cap, nullptr},
    {"store", "raw", "PATH",
     "also write every drained record to this new raw archive",
     &CollectorFlags::raw, nullptr},
    {"store", "group-readable", "",
     "create the store, journal and raw archive 0640 (group may read) instead of 0600",
     nullptr, &CollectorFlags::group_readable},
    {"store", "group-writable-store", "",
     "accept an existing SQLite store (and its -wal/-shm) that its group may write; "
     "without it the store must be this uid's or root's and writable by nobody else",
     nullptr, &CollectorFlags::group_writable_store},
    {"clock", "tsc-hz", "HZ",
     "TSC frequency in Hz: skip the calibration",
     &CollectorFlags::tsc_hz, nullptr},
    {"clock", "host-name", "NAME",
     "this host's name in the store (default: the hostname); several hosts' "
     "collectors may write to one ClickHouse store (docs/clickhouse.md)",
     &CollectorFlags::host_name, nullptr},
    {"clock", "clock-error-ns", "NS",
     "this host's clock-sync error bound, used when neither chrony nor ptp4l says "
     "it; cross-host stages carry it as their uncertainty",
     &CollectorFlags::clock_error_ns, nullptr},
    {"clock", "exchange-clock-error-ns", "NS",
     "how far a venue's times (stamp_at with Clock::kExchange) may be from this "
     "host's CLOCK_REALTIME; without it their stages' uncertainty is unknown",
     &CollectorFlags::exchange_clock_error_ns, nullptr},
    {"clock", "test-clock-offset-ns", "NS",
     "FOR TESTS ONLY: shift this collector's TSC->UTC mapping by NS (simulates a "
     "host whose clock is off)",
     &CollectorFlags::test_clock_offset_ns, nullptr},
    {"clock", "correct-skew", "",
     "subtract the cores' measured TSC offsets from cross-core differences (see "
     "docs/calibration.md)",
     nullptr, &CollectorFlags::correct_skew},
    {"clock", "skew-interval", "DURATION",
     "re-measure the cores' TSC offsets this often in a live run: seconds, or 90s, "
     "10m, 1h; 0: at start only",
     &CollectorFlags::skew_interval, nullptr},
    {"clock", "skew-cores", "allowed|producers",
     "cores whose offsets are measured: the collector's allowed cores, or those the "
     "traced processes may run on",
     &CollectorFlags::skew_cores, nullptr},
    {"monitoring", "metrics-listen", "HOST:PORT",
     "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464): "
     "per-stage latency histograms, flag counts, counters, lag and CPU; see "
     "docs/operations.md",
     &CollectorFlags::metrics_listen, nullptr},
    {"monitoring", "metrics-required", "",
     "with --metrics-listen: exit 1 when the address cannot be bound (a port taken); "
     "without it the collector says so in one line and collects without /metrics",
     nullptr, &CollectorFlags::metrics_required},
    // OpenTelemetry push (collector/sinks/otlp_sink.h).
    {"monitoring", "otlp-endpoint", "URL",
     "push each interval's slowest orders per stage, and every order with a flag the "
     "percentiles exclude, as OpenTelemetry traces to this OTLP/HTTP receiver (e.g. "
     "http://127.0.0.1:4318: URL/v1/traces); see docs/operations.md",
     &CollectorFlags::otlp_endpoint, nullptr},
    {"monitoring", "otlp-slowest", "N",
     "with --otlp-endpoint: the slowest N orders per stage and interval (default 10)",
     &CollectorFlags::otlp_slowest, nullptr},
};

// Registers kFlagTable on `flags`, writing into `f`, then the repeated --budget.
void AddFlags(BoundFlags& flags, CollectorFlags& f) {
  for (const FlagRow& row : kFlagTable) {
    FlagSpec spec{row.name, row.value_name, row.help, false, false, "", row.section};
    if (row.text != nullptr) {
      flags.AddString(std::move(spec), &(f.*row.text));
    } else {
      flags.AddBool(std::move(spec), &(f.*row.on));
    }
  }
  flags.AddRepeated({"budget", "STAGE:STAT<LIMIT",
                     "judge every closed interval against this latency budget (decide:p99<20us, "
                     "total:p99.9<150us, gw_in->gw_sent:max<1ms); a breach is counted, stored "
                     "with its interval, said on stderr at most once a minute and exported on "
                     "/metrics (docs/collector.md, Budgets)",
                     false, false, "", "monitoring"},
                    &f.budgets);
  flags.AddString({"budgets", "FILE",
                   "budgets from FILE, one per line, '#' comments (with any --budget)", false,
                   false, "", "monitoring"},
                  &f.budgets_file);
}

// --budget (each), then --budgets FILE; the same stage and statistic twice is refused.
absl::Status BudgetsFromFlags(const CollectorFlags& f, CollectorOptions& o) {
  std::vector<Budget> budgets;
  for (const std::string& text : f.budgets) {
    TICKTRACE_ASSIGN_OR_RETURN(Budget b, ParseBudget("--budget", text));
    TICKTRACE_RETURN_IF_ERROR(AddBudgets({std::move(b)}, &budgets));
  }
  if (!f.budgets_file.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(std::vector<Budget> more, ReadBudgetFile(f.budgets_file));
    TICKTRACE_RETURN_IF_ERROR(AddBudgets(std::move(more), &budgets));
  }
  if (!budgets.empty() && !o.store_uri.has_value()) {
    return absl::InvalidArgumentError(
        "--budget: budgets are judged on the store's intervals, and --db \"\" keeps no store");
  }
  o.store.budgets = std::move(budgets);
  return absl::OkStatus();
}

// "500MB", "2GB", "1GiB" -> bytes (common/size.h); 0 when `text` is not a size.
uint64_t ParseSize(const std::string& text) { return ParseSizeBytes(text).value_or(0); }

// A retention age ("90s", "30m", "8h", "7d"; a bare number: seconds) in ns,
// up to ten years; nullopt when empty.
absl::StatusOr<std::optional<int64_t>> ParseAge(const char* flag, const std::string& text) {
  if (text.empty()) return std::optional<int64_t>();
  TICKTRACE_ASSIGN_OR_RETURN(const int64_t ns,
                             ParseDurationNs(flag, text, {.bare_number_is_seconds = true}));
  if (ns > 3650 * kDayNs) return BadFlagValue(flag, "an age of at most 3650d", text);
  return std::optional<int64_t>(ns);
}

// A period of at most a week ("600", "500ms", "90s", "10m", "1h"; 0 allowed) in ns.
absl::StatusOr<int64_t> ParsePeriod(const char* flag, const std::string& text) {
  TICKTRACE_ASSIGN_OR_RETURN(
      const int64_t ns,
      ParseDurationNs(flag, text, {.allow_zero = true, .bare_number_is_seconds = true}));
  if (ns > 7 * kDayNs) return BadFlagValue(flag, "a period of at most 7d", text);
  return ns;
}

// --store/--db, --detail, --interval-s, --retain-detail, --retain, --checkpoint-interval.
absl::Status StoreOptionsFromFlags(const CollectorFlags& f, CollectorOptions& o) {
  o.store_uri.reset();  // --db "": no store
  if (!f.db.empty()) o.store_uri = store::StoreUri::LocalFile(f.db);
  if (!f.store.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(store::StoreUri uri, store::ParseStoreUri(f.store));
    o.store_uri = std::move(uri);
  }
  TICKTRACE_ASSIGN_OR_RETURN(o.store.detail, store::ParseDetailPolicy(f.detail));
  TICKTRACE_ASSIGN_OR_RETURN(const double interval_s, ParseDoubleFlag("--interval-s", f.interval_s));
  if (!(interval_s >= 0.001 && interval_s <= 3600)) {
    return absl::InvalidArgumentError("--interval-s: must be between 0.001 and 3600 seconds");
  }
  o.store.interval_ns = static_cast<int64_t>(interval_s * 1e9);
  // The size limit is resolved once the store is open (detail_limit.h).
  TICKTRACE_ASSIGN_OR_RETURN(o.detail_limit, ParseDetailLimit(f.retain_detail));
  o.store.retain_detail_ns = o.detail_limit.age_ns;
  TICKTRACE_ASSIGN_OR_RETURN(o.store.retain_ns, ParseAge("--retain", f.retain));
  TICKTRACE_ASSIGN_OR_RETURN(const int64_t checkpoint_ns,
                             ParsePeriod("--checkpoint-interval", f.checkpoint_interval));
  o.checkpoint_interval = std::chrono::milliseconds(checkpoint_ns / 1'000'000);
  uint64_t cap = 0;
  if (!absl::SimpleAtoi(f.journal_cap, &cap)) cap = ParseSize(f.journal_cap);
  if (cap < (1u << 20) || cap > (uint64_t{1} << 50)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--journal-cap '", f.journal_cap, "': must be a size from 1MiB to 1PiB (e.g. 512MiB, 2GiB)"));
  }
  o.journal_cap_bytes = cap;
  return absl::OkStatus();
}

// --tsc-hz, --host-name, --clock-error-ns, --test-clock-offset-ns, the skew flags.
absl::Status ClockOptionsFromFlags(const CollectorFlags& f, CollectorOptions& o) {
  if (!f.tsc_hz.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(o.tsc_hz, ParseDoubleFlag("--tsc-hz", f.tsc_hz));
    if (o.tsc_hz == 0) return absl::InvalidArgumentError("--tsc-hz 0: must be between 1e6 and 1e11");
  }
  for (const char c : f.host_name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("--host-name: control characters are not allowed");
    }
  }
  o.host_name = f.host_name;
  if (!f.clock_error_ns.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(o.clock_error_ns,
                               ParseDoubleFlag("--clock-error-ns", f.clock_error_ns));
    if (!(*o.clock_error_ns >= 0)) {
      return absl::InvalidArgumentError("--clock-error-ns: must be 0 or more");
    }
  }
  if (!f.exchange_clock_error_ns.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(
        o.exchange_clock_error_ns,
        ParseDoubleFlag("--exchange-clock-error-ns", f.exchange_clock_error_ns));
    if (!(*o.exchange_clock_error_ns >= 0)) {
      return absl::InvalidArgumentError("--exchange-clock-error-ns: must be 0 or more");
    }
  }
  if (!f.test_clock_offset_ns.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(o.test_clock_offset_ns,
                               ParseIntFlag("--test-clock-offset-ns", f.test_clock_offset_ns));
  }
  o.correct_skew = f.correct_skew;
  TICKTRACE_ASSIGN_OR_RETURN(const int64_t skew_ns, ParsePeriod("--skew-interval", f.skew_interval));
  o.skew_interval_s = (skew_ns + kSecondNs - 1) / kSecondNs;  // 500ms: every second
  o.skew_cores = f.skew_cores;
  return absl::OkStatus();
}

}  // namespace

CollectorFlags ParseFlagsOrExit(int argc, const char* const* argv) {
  CommandSpec spec;
  spec.usage = {"[OPTIONS]", "--replay ARCHIVE [OPTIONS]"};
  spec.synopsis =
      "Collects ticktrace records from shared memory, stitches orders across processes, and "
      "stores per-stage latencies (statistics per interval, and order detail). With --replay "
      "it analyses a raw archive instead, then exits.";
  spec.description =
      "Exit status: 0 ok, 1 runtime error, 2 usage error. Docs: docs/collector.md, "
      "docs/operations.md.";
  spec.last_value_wins = true;  // wrappers append to a base command line
  CollectorFlags f;
  BoundFlags flags(std::move(spec));
  AddFlags(flags, f);
  flags.ParseOrExit(kCollectorProgram, argc, argv);
  return f;
}

absl::StatusOr<CollectorOptions> OptionsFromFlags(const CollectorFlags& f) {
  CollectorOptions o;
  o.session = f.session;
  if (o.session.empty()) {
    const char* env = std::getenv("TICKTRACE_SESSION");
    o.session = env != nullptr && *env != '\0' ? env : "default";
  }
  TICKTRACE_RETURN_IF_ERROR(StoreOptionsFromFlags(f, o));
  TICKTRACE_RETURN_IF_ERROR(BudgetsFromFlags(f, o));
  TICKTRACE_ASSIGN_OR_RETURN(o.pipeline, ParsePipeline(f.pipeline));
  TICKTRACE_ASSIGN_OR_RETURN(o.order_timeout_ms,
                             ParseIntFlag("--order-timeout-ms", f.order_timeout_ms));
  TICKTRACE_ASSIGN_OR_RETURN(o.duration_s, ParseDoubleFlag("--duration-s", f.duration_s));
  o.raw_path = f.raw;
  o.replay_path = f.replay;
  TICKTRACE_RETURN_IF_ERROR(ClockOptionsFromFlags(f, o));
  o.include_flagged = f.include_flagged;
  TICKTRACE_ASSIGN_OR_RETURN(o.allow_uids, ParseUidList(f.allow_uid));
  uint64_t max_segment = 0;
  if (!absl::SimpleAtoi(f.max_segment_bytes, &max_segment)) {
    max_segment = ParseSize(f.max_segment_bytes);
  }
  if (max_segment < (1u << 20) || max_segment > (uint64_t{1} << 50)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-segment-bytes '", f.max_segment_bytes,
                     "': must be a size from 1MiB to 1PiB (e.g. 512MiB, 64GiB)"));
  }
  o.max_segment_bytes = max_segment;
  o.group_readable = f.group_readable;
  o.group_writable_store = f.group_writable_store;
  TICKTRACE_ASSIGN_OR_RETURN(o.max_open_orders,
                             ParseUintFlag("--max-open-orders", f.max_open_orders));
  if (!f.cpu.empty()) {
    TICKTRACE_ASSIGN_OR_RETURN(const int64_t cpu, ParseIntFlag("--cpu", f.cpu));
    if (cpu < 0 || cpu > 1 << 20) {
      return absl::InvalidArgumentError(absl::StrCat("--cpu ", f.cpu, ": not a core number"));
    }
    o.cpu = static_cast<int>(cpu);
  }
  // OpenTelemetry push: --otlp-endpoint, --otlp-slowest.
  if (!f.otlp_endpoint.empty()) {
    if (absl::Status s = otlp::TracesUrl(f.otlp_endpoint).status(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--otlp-", s.message()));
    }
    o.otlp.endpoint = f.otlp_endpoint;
  }
  TICKTRACE_ASSIGN_OR_RETURN(const uint64_t otlp_slowest,
                             ParseUintFlag("--otlp-slowest", f.otlp_slowest));
  if (otlp_slowest > 100000) {
    return absl::InvalidArgumentError("--otlp-slowest: at most 100000 orders per stage");
  }
  o.otlp.slowest_per_stage = otlp_slowest;
  // A test hook, never a flag users see (options.h).
  if (const char* pause = std::getenv("TICKTRACE_TEST_PAUSE_ANALYSIS_WHILE"); pause != nullptr) {
    o.test_pause_analysis_file = pause;
  }
  TICKTRACE_RETURN_IF_ERROR(ValidateOptions(o));
  return o;
}

}  // namespace ticktrace::collect
