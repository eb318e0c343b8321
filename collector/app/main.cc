// ticktrace-collector: parses flags (collector/app/command_line.h), then runs the
// collector (collector/app/collector.h).
// Exit codes: 0 done (and --help, --version); 1 runtime error (bad file, store
// not ours, calibration, a busy --metrics-listen port); 2 usage error (unknown
// flag, bad value). Errors are one line on stderr.
//
// To add a flag: a field in Flags, one Add* line in RegisterFlags (dashes in
// its name), and its conversion into CollectorOptions in main().

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collector/app/collector.h"
#include "collector/app/command_line.h"
#include "collector/metrics/metrics_server.h"
#include "collector/app/options.h"
#include "ticktrace/store/uri.h"
#include "ticktrace/store/writer.h"
#include "ticktrace/version.h"

namespace {

constexpr const char* kProgram = "ticktrace-collector";

// The flags as typed; values are strings so that every bad value gets our
// one-line message and exit 2.
struct Flags {
  std::string session;
  std::string db = "ticktrace.db";
  std::string store;
  std::string pipeline;
  std::string order_timeout_ms = "1000";
  std::string duration_s = "0";
  std::string raw;
  std::string replay;
  std::string tsc_hz;
  std::string host_name;
  std::string clock_error_ns;
  std::string test_clock_offset_ns;
  bool include_flagged = false;
  bool correct_skew = false;
  std::string skew_interval = "600";
  std::string skew_cores = "allowed";
  std::string allow_uid;
  bool group_readable = false;
  std::string cpu;
  std::string checkpoint_interval = "5";
  std::string max_open_orders = "2000000";
  std::string detail = "all";
  std::string interval_s = "1";
  std::string retain_detail;
  std::string retain;
  std::string metrics_listen;
};

void RegisterFlags(ticktrace::collect::CommandLine& cl, Flags& f) {
  cl.Section("What to collect");
  cl.AddValue("session", "NAME", &f.session,
              "session to collect (default: $TICKTRACE_SESSION, else 'default')");
  cl.AddValue("replay", "ARCHIVE", &f.replay,
              "run from this raw archive instead of shared memory, then exit");
  cl.AddValue("allow-uid", "USERS", &f.allow_uid,
              "also drain segments owned by these users (UIDs or names, comma-separated); by "
              "default only this collector's own uid's segments are drained");
  cl.AddValue("duration-s", "SECONDS", &f.duration_s,
              "stop after this many seconds; 0: until SIGINT/SIGTERM");
  cl.AddValue("cpu", "N", &f.cpu,
              "pin every collector thread to core N (e.g. a housekeeping core; one of the "
              "cores it may run on); the CPU used is reported at exit either way");

  cl.Section("Orders and stages");
  cl.AddValue("pipeline", "TAGS", &f.pipeline,
              "ordered stage tags, e.g. md_rx,decide,order_sent; empty: learn the order from "
              "the first orders");
  cl.AddValue("order-timeout-ms", "MS", &f.order_timeout_ms,
              "an order with no new record for this long is finished");
  cl.AddValue("max-open-orders", "N", &f.max_open_orders,
              "orders open at once at most (about 230 bytes each); records of further new "
              "orders are counted (records_over_open_limit), not kept; 0: no limit");
  cl.AddBool("include-flagged", &f.include_flagged,
             "percentiles include flagged samples (migrated, negative, out-of-order, "
             "saturated); their counts are reported either way");

  cl.Section("Store");
  cl.AddValue("store", "URI", &f.store,
              "sqlite:PATH or clickhouse://HOST:PORT/DATABASE (default: sqlite:ticktrace.db)");
  cl.AddValue("db", "PATH", &f.db,
              "short for --store sqlite:PATH; an existing ticktrace store gets a new run "
              "appended, any other existing file is refused; empty: no store");
  cl.AddValue("detail", "all|tail|none", &f.detail,
              "order detail kept: every order, the tail (per stage and interval the slowest, "
              "every flagged or incomplete order, 1 in 100 of the rest) or none");
  cl.AddValue("interval-s", "SECONDS", &f.interval_s,
              "length of an interval of the statistics over time");
  cl.AddValue("retain-detail", "AGE|SIZE", &f.retain_detail,
              "delete order detail older than this (30m, 8h, 7d) or beyond this store size "
              "(500MB, 2GB); the intervals stay; empty: keep all");
  cl.AddValue("retain", "AGE", &f.retain,
              "delete intervals older than this (30d); empty: keep all");
  cl.AddValue("checkpoint-interval", "DURATION", &f.checkpoint_interval,
              "save the analysis this often (seconds, or 90s, 10m) so that a restart replays "
              "only the journal after it, and free the journal before it; 0: never (the "
              "journal then grows for the whole run)");
  cl.AddValue("raw", "PATH", &f.raw, "also write every drained record to this new raw archive");
  cl.AddBool("group-readable", &f.group_readable,
             "create the store, journal and raw archive 0640 (group may read) instead of 0600");

  cl.Section("Clock");
  cl.AddValue("tsc-hz", "HZ", &f.tsc_hz, "TSC frequency in Hz: skip the calibration");
  cl.AddValue("host-name", "NAME", &f.host_name,
              "this host's name in the store (default: the hostname); several hosts' "
              "collectors may write to one ClickHouse store (docs/clickhouse.md)");
  cl.AddValue("clock-error-ns", "NS", &f.clock_error_ns,
              "this host's clock-sync error bound, used when neither chrony nor ptp4l says "
              "it; cross-host stages carry it as their uncertainty");
  cl.AddValue("test-clock-offset-ns", "NS", &f.test_clock_offset_ns,
              "FOR TESTS ONLY: shift this collector's TSC->UTC mapping by NS (simulates a "
              "host whose clock is off)");
  cl.AddBool("correct-skew", &f.correct_skew,
             "subtract the cores' measured TSC offsets from cross-core differences (see "
             "docs/calibration.md)");
  cl.AddValue("skew-interval", "DURATION", &f.skew_interval,
              "re-measure the cores' TSC offsets this often in a live run: seconds, or 90s, "
              "10m, 1h; 0: at start only");
  cl.AddValue("skew-cores", "allowed|producers", &f.skew_cores,
              "cores whose offsets are measured: the collector's allowed cores, or those the "
              "traced processes may run on");

  cl.Section("Monitoring");
  cl.AddValue("metrics-listen", "HOST:PORT", &f.metrics_listen,
              "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464): "
              "per-stage latency histograms, flag counts, counters, lag and CPU; see "
              "docs/operations.md");
}

[[noreturn]] void UsageError(absl::string_view message) {
  std::cerr << kProgram << ": " << message << " (see --help)\n";
  std::exit(2);
}

template <typename T>
T ParseNumber(absl::string_view flag, const std::string& text) {
  T v{};
  bool ok;
  if constexpr (std::is_floating_point_v<T>) {
    ok = absl::SimpleAtod(text, &v);
  } else {
    ok = absl::SimpleAtoi(text, &v);
  }
  if (!ok) UsageError(absl::StrCat("--", flag, " '", text, "': not a number"));
  return v;
}

// "600", "90s", "10m", "1h" -> seconds.
int64_t ParseSeconds(absl::string_view flag, std::string text) {
  int64_t unit = 1;
  if (!text.empty()) {
    const char last = text.back();
    if (last == 's' || last == 'm' || last == 'h') {
      unit = last == 'h' ? 3600 : last == 'm' ? 60 : 1;
      text.pop_back();
    }
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 0 || v > 7 * 24 * 3600) {
    UsageError(absl::StrCat("--", flag, " '", text, "': not a duration (e.g. 600, 90s, 10m, 1h)"));
  }
  return v * unit;
}

// "90s", "30m", "8h", "7d" (a bare number: seconds) -> ns; nullopt when empty.
std::optional<int64_t> ParseAge(absl::string_view flag, std::string text) {
  if (text.empty()) return std::nullopt;
  int64_t unit = 1;
  const char last = text.back();
  if (last == 's' || last == 'm' || last == 'h' || last == 'd') {
    unit = last == 'd' ? 86400 : last == 'h' ? 3600 : last == 'm' ? 60 : 1;
    text.pop_back();
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v <= 0 || v > 3650 * 86400 / unit) {
    UsageError(absl::StrCat("--", flag, " '", text, "': not a duration (e.g. 90s, 30m, 8h, 7d)"));
  }
  return v * unit * 1'000'000'000;
}

// "500MB", "2GB", "1GiB" -> bytes; 0 when `text` is not a size.
uint64_t ParseSize(std::string text) {
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
      {"KB", 1000ull},     {"MB", 1000000ull},  {"GB", 1000000000ull}, {"TB", 1000000000000ull}};
  for (const auto& [suffix, unit] : kUnits) {
    if (absl::EndsWith(text, suffix)) {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(text.substr(0, text.size() - std::strlen(suffix)), &v) || v == 0 ||
          v > (1ull << 50) / unit * 1024) {
        return 0;
      }
      return v * unit;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Keep freed memory instead of returning it to the kernel: the drain loop
  // and the store writer reuse large buffers, and a page fault costs tens of
  // microseconds on a VM.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);

  ticktrace::collect::CommandLine cl(
      kProgram,
      "ticktrace-collector [OPTIONS]                  collect a session live\n"
      "ticktrace-collector --replay ARCHIVE [OPTIONS] analyse a raw archive, then exit",
      "Collects ticktrace records from shared memory, stitches orders across processes, and "
      "stores per-stage latencies (statistics per interval, and order detail).");
  cl.Epilogue(
      "Exit status: 0 ok, 1 runtime error, 2 usage error. Docs: docs/collector.md, "
      "docs/operations.md.");
  Flags f;
  RegisterFlags(cl, f);
  absl::StatusOr<ticktrace::collect::CommandLine::Outcome> outcome = cl.Parse(argc, argv);
  if (!outcome.ok()) UsageError(outcome.status().message());
  if (*outcome == ticktrace::collect::CommandLine::Outcome::kHelp) {
    std::cout << cl.Usage();
    return 0;
  }
  if (*outcome == ticktrace::collect::CommandLine::Outcome::kVersion) {
    std::cout << ticktrace::VersionLine(kProgram) << "\n";
    return 0;
  }

  ticktrace::collect::CollectorOptions o;
  o.session = f.session;
  if (o.session.empty()) {
    const char* env = std::getenv("TICKTRACE_SESSION");
    o.session = env != nullptr && *env != '\0' ? env : "default";
  }
  o.store_uri.reset();  // --db "": no store
  if (!f.db.empty()) o.store_uri = ticktrace::store::StoreUri::LocalFile(f.db);
  if (!f.store.empty()) {
    absl::StatusOr<ticktrace::store::StoreUri> uri = ticktrace::store::ParseStoreUri(f.store);
    if (!uri.ok()) UsageError(uri.status().message());
    o.store_uri = *std::move(uri);
  }
  {
    absl::StatusOr<ticktrace::store::DetailPolicy> detail =
        ticktrace::store::ParseDetailPolicy(f.detail);
    if (!detail.ok()) UsageError(detail.status().message());
    o.store.detail = *detail;
    const double interval_s = ParseNumber<double>("interval-s", f.interval_s);
    if (!(interval_s >= 0.001 && interval_s <= 3600)) {
      UsageError("--interval-s: must be between 0.001 and 3600 seconds");
    }
    o.store.interval_ns = static_cast<int64_t>(interval_s * 1e9);
    if (const uint64_t bytes = ParseSize(f.retain_detail); bytes > 0) {
      o.store.retain_detail_bytes = bytes;
    } else {
      o.store.retain_detail_ns = ParseAge("retain-detail", f.retain_detail);
    }
    o.store.retain_ns = ParseAge("retain", f.retain);
  }
  absl::StatusOr<std::vector<std::string>> pipeline =
      ticktrace::collect::ParsePipeline(f.pipeline);
  if (!pipeline.ok()) UsageError(pipeline.status().message());
  o.pipeline = *pipeline;
  o.order_timeout_ms = ParseNumber<int64_t>("order-timeout-ms", f.order_timeout_ms);
  o.duration_s = ParseNumber<double>("duration-s", f.duration_s);
  o.raw_path = f.raw;
  o.replay_path = f.replay;
  if (!f.tsc_hz.empty()) {
    o.tsc_hz = ParseNumber<double>("tsc-hz", f.tsc_hz);
    if (o.tsc_hz == 0) UsageError("--tsc-hz 0: must be between 1e6 and 1e11");
  }
  for (const char c : f.host_name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      UsageError("--host-name: control characters are not allowed");
    }
  }
  o.host_name = f.host_name;
  if (!f.clock_error_ns.empty()) {
    o.clock_error_ns = ParseNumber<double>("clock-error-ns", f.clock_error_ns);
    if (!(*o.clock_error_ns >= 0)) UsageError("--clock-error-ns: must be 0 or more");
  }
  if (!f.test_clock_offset_ns.empty()) {
    o.test_clock_offset_ns = ParseNumber<int64_t>("test-clock-offset-ns", f.test_clock_offset_ns);
  }
  o.include_flagged = f.include_flagged;
  o.correct_skew = f.correct_skew;
  o.skew_interval_s = ParseSeconds("skew-interval", f.skew_interval);
  o.skew_cores = f.skew_cores;
  absl::StatusOr<std::vector<uint32_t>> uids = ticktrace::collect::ParseUidList(f.allow_uid);
  if (!uids.ok()) UsageError(uids.status().message());
  o.allow_uids = *uids;
  o.group_readable = f.group_readable;
  o.max_open_orders = ParseNumber<uint64_t>("max-open-orders", f.max_open_orders);
  o.checkpoint_interval =
      std::chrono::seconds(ParseSeconds("checkpoint-interval", f.checkpoint_interval));
  if (!f.cpu.empty()) {
    o.cpu = ParseNumber<int>("cpu", f.cpu);
    if (o.cpu < 0) UsageError(absl::StrCat("--cpu ", f.cpu, ": not a core number"));
  }
  if (absl::Status s = ticktrace::collect::ValidateOptions(o); !s.ok()) UsageError(s.message());

  std::optional<ticktrace::metrics::MetricsServer> metrics;
  if (!f.metrics_listen.empty()) {
    absl::StatusOr<ticktrace::metrics::ListenAddress> address =
        ticktrace::metrics::ParseListenAddress(f.metrics_listen);
    if (!address.ok()) UsageError(address.status().message());
    metrics.emplace(std::string(ticktrace::kVersion), std::string(ticktrace::kGitCommit));
    if (absl::Status s = metrics->Start(*address); !s.ok()) {
      std::cerr << kProgram << ": " << s.message() << "\n";
      return 1;
    }
    o.metrics = &*metrics;
    std::string host = address->host.empty() ? "0.0.0.0" : address->host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    std::cout << kProgram << ": metrics at http://" << host << ":" << metrics->port()
              << "/metrics\n"
              << std::flush;
  }

  absl::Status s = ticktrace::collect::RunCollector(o);
  if (!s.ok()) {
    std::cerr << kProgram << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}
