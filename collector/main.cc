// ticktrace-collector: parses flags, then runs the collector (collector/collector.h).
// Exit codes: 0 done; 1 runtime error (bad file, store not ours, calibration);
// 2 usage error (unknown flag, bad value). Errors are one line on stderr.

#include <malloc.h>

#include <cctype>
#include <cstring>
#include <optional>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/collector.h"
#include "collector/options.h"
#include "collector/store/uri.h"
#include "collector/store/writer.h"

// Values are strings so that every bad value gets our one-line message and exit 2.
ABSL_FLAG(std::string, session, "",
          "session to collect (default: $TICKTRACE_SESSION, else 'default')");
ABSL_FLAG(std::string, db, "ticktrace.db",
          "SQLite store; an existing ticktrace store gets a new run appended, any other "
          "existing file is refused. Empty: no store");
ABSL_FLAG(std::string, pipeline, "",
          "ordered stage tags, e.g. md_rx,decide,order_sent; empty: learn the order");
ABSL_FLAG(std::string, order_timeout_ms, "1000",
          "an order with no new record for this long is finished");
ABSL_FLAG(std::string, duration_s, "0", "stop after this many seconds (0: until SIGINT/SIGTERM)");
ABSL_FLAG(std::string, raw, "", "write a raw archive of every drained record to this new file");
ABSL_FLAG(std::string, replay, "", "run from this raw archive instead of shared memory, then exit");
ABSL_FLAG(std::string, tsc_hz, "", "TSC frequency in Hz: skip calibration");
ABSL_FLAG(bool, include_flagged, false,
          "percentiles include flagged (migrated, negative, out-of-order, saturated) samples");
ABSL_FLAG(bool, correct_skew, false,
          "subtract the cores' measured TSC offsets from cross-core differences (off: the "
          "offsets are only known within their bounds; see docs/calibration.md)");
ABSL_FLAG(std::string, skew_interval, "600",
          "re-measure the cores' TSC offsets this often during a live run: seconds, or with "
          "a unit (90s, 10m, 1h); 0: at start only");
ABSL_FLAG(std::string, allow_uid, "",
          "also drain segments owned by these users (UID or name, comma-separated); by "
          "default only this collector's own uid's segments are drained");
ABSL_FLAG(bool, group_readable, false,
          "create the store, journal and raw archive 0640 (group may read) instead of 0600");
ABSL_FLAG(std::string, store, "",
          "the store: sqlite:PATH (default sqlite:ticktrace.db; --db PATH is the short form) "
          "or clickhouse://HOST:PORT/DATABASE");
ABSL_FLAG(std::string, detail, "all",
          "order detail kept: all (every order), tail (per stage and interval the slowest, "
          "every flagged or incomplete order, 1 in 100 of the rest) or none (statistics only)");
ABSL_FLAG(std::string, interval_s, "1", "seconds per interval of the statistics over time");
ABSL_FLAG(std::string, retain_detail, "",
          "delete order detail older than this (30m, 8h, 7d) or beyond this store size "
          "(500MB, 2GB); the intervals stay. Empty: keep all");
ABSL_FLAG(std::string, retain, "", "delete intervals older than this (30d). Empty: keep all");
ABSL_FLAG(std::string, skew_cores, "allowed",
          "cores whose offsets are measured: 'allowed' (the collector's) or 'producers' "
          "(the cores the traced processes may run on)");

namespace {

constexpr const char* kProgram = "ticktrace-collector";
const std::vector<std::string> kValueFlags = {
    "session", "db", "pipeline", "order_timeout_ms", "duration_s", "raw", "replay", "tsc_hz",
    "skew_interval", "skew_cores", "allow_uid", "store", "detail", "interval_s", "retain_detail",
    "retain"};
// Abseil's --flagfile/--fromenv/--tryfromenv/--undefok are not offered: their
// errors would bypass our one-line usage errors.
const std::vector<std::string> kOtherFlags = {
    "include_flagged", "noinclude_flagged", "correct_skew", "nocorrect_skew", "help", "helpfull", "helpshort", "helppackage",
    "version", "only_check_args", "helpon", "helpmatch", "group_readable", "nogroup_readable"};

// The spellings Abseil accepts for a bool flag's value.
bool IsBoolText(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ok : {"true", "false", "1", "0", "yes", "no", "t", "f", "y", "n"}) {
    if (v == ok) return true;
  }
  return false;
}

[[noreturn]] void UsageError(absl::string_view message) {
  std::cerr << kProgram << ": " << message << " (see --help)\n";
  std::exit(2);
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

// Accepts --order-timeout-ms as well as --order_timeout_ms, and turns unknown
// flags and missing values into usage errors (exit 2) before Abseil sees them.
std::vector<std::string> NormalizeArgs(int argc, char** argv) {
  std::vector<std::string> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (; i < argc; ++i) args.emplace_back(argv[i]);
      break;
    }
    if (a.size() < 2 || a[0] != '-') UsageError(absl::StrCat("unexpected argument '", a, "'"));
    const size_t dashes = a[1] == '-' ? 2 : 1;
    const size_t eq = a.find('=');
    std::string name = a.substr(dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
    for (char& c : name) {
      if (c == '-') c = '_';
    }
    if (!Contains(kValueFlags, name) && !Contains(kOtherFlags, name)) {
      UsageError(absl::StrCat("unknown flag --", a.substr(dashes, eq == std::string::npos
                                                                      ? std::string::npos
                                                                      : eq - dashes)));
    }
    if ((name == "include_flagged" || name == "noinclude_flagged" || name == "correct_skew" ||
         name == "nocorrect_skew" || name == "group_readable" || name == "nogroup_readable") &&
        eq != std::string::npos && !IsBoolText(a.substr(eq + 1))) {
      UsageError(absl::StrCat("--", name, " '", a.substr(eq + 1), "': not true or false"));
    }
    std::string rebuilt = "--" + name + (eq == std::string::npos ? "" : a.substr(eq));
    args.push_back(rebuilt);
    if (eq == std::string::npos && Contains(kValueFlags, name)) {
      if (i + 1 >= argc) UsageError(absl::StrCat("--", name, " needs a value"));
      args.emplace_back(argv[++i]);
    }
  }
  return args;
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
  absl::SetProgramUsageMessage(
      "collects ticktrace records from shared memory, stitches orders across processes, "
      "and stores per-stage latencies in SQLite.\n"
      "  ticktrace-collector [--session NAME] [--store sqlite:PATH | --db PATH] [--pipeline a,b,c]\n"
      "      [--detail all|tail|none] [--interval-s 1] [--retain-detail 8h|2GB] [--retain 30d]\n"
      "      [--order-timeout-ms N] [--duration-s N] [--raw PATH] [--tsc-hz HZ]\n"
      "      [--include-flagged] [--correct-skew] [--skew-interval 10m]\n"
      "      [--skew-cores allowed|producers]\n"
      "  ticktrace-collector --replay ARCHIVE [--db PATH] [--pipeline ...] [--tsc-hz HZ]\n"
      "Flag names take '-' or '_'. Exit: 0 ok, 1 runtime error, 2 usage error.");
  absl::FlagsUsageConfig usage;
  // --help lists the flags of this file (Abseil matches the program name by default).
  usage.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "collector/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> args = NormalizeArgs(argc, argv);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(cargs.size()), cargs.data());
  if (rest.size() > 1) UsageError(absl::StrCat("unexpected argument '", rest[1], "'"));

  ticktrace::collect::CollectorOptions o;
  o.session = absl::GetFlag(FLAGS_session);
  if (o.session.empty()) {
    const char* env = std::getenv("TICKTRACE_SESSION");
    o.session = env != nullptr && *env != '\0' ? env : "default";
  }
  o.db_path = absl::GetFlag(FLAGS_db);
  if (const std::string store = absl::GetFlag(FLAGS_store); !store.empty()) {
    absl::StatusOr<ticktrace::store::StoreUri> uri = ticktrace::store::ParseStoreUri(store);
    if (!uri.ok()) UsageError(uri.status().message());
    if (uri->kind != ticktrace::store::StoreUri::Kind::kSqlite) {
      UsageError(absl::StrCat("--store ", store,
                              ": this collector writes SQLite stores only (ClickHouse is not "
                              "built yet)"));
    }
    o.db_path = uri->path;
  }
  {
    absl::StatusOr<ticktrace::store::DetailPolicy> detail =
        ticktrace::store::ParseDetailPolicy(absl::GetFlag(FLAGS_detail));
    if (!detail.ok()) UsageError(detail.status().message());
    o.store.detail = *detail;
    const double interval_s = ParseNumber<double>("interval-s", absl::GetFlag(FLAGS_interval_s));
    if (!(interval_s >= 0.001 && interval_s <= 3600)) {
      UsageError("--interval-s: must be between 0.001 and 3600 seconds");
    }
    o.store.interval_ns = static_cast<int64_t>(interval_s * 1e9);
    const std::string retain_detail = absl::GetFlag(FLAGS_retain_detail);
    if (const uint64_t bytes = ParseSize(retain_detail); bytes > 0) {
      o.store.retain_detail_bytes = bytes;
    } else {
      o.store.retain_detail_ns = ParseAge("retain-detail", retain_detail);
    }
    o.store.retain_ns = ParseAge("retain", absl::GetFlag(FLAGS_retain));
  }
  absl::StatusOr<std::vector<std::string>> pipeline =
      ticktrace::collect::ParsePipeline(absl::GetFlag(FLAGS_pipeline));
  if (!pipeline.ok()) UsageError(pipeline.status().message());
  o.pipeline = *pipeline;
  o.order_timeout_ms = ParseNumber<int64_t>("order-timeout-ms", absl::GetFlag(FLAGS_order_timeout_ms));
  o.duration_s = ParseNumber<double>("duration-s", absl::GetFlag(FLAGS_duration_s));
  o.raw_path = absl::GetFlag(FLAGS_raw);
  o.replay_path = absl::GetFlag(FLAGS_replay);
  const std::string hz = absl::GetFlag(FLAGS_tsc_hz);
  if (!hz.empty()) {
    o.tsc_hz = ParseNumber<double>("tsc-hz", hz);
    if (o.tsc_hz == 0) UsageError("--tsc-hz 0: must be between 1e6 and 1e11");
  }
  o.include_flagged = absl::GetFlag(FLAGS_include_flagged);
  o.correct_skew = absl::GetFlag(FLAGS_correct_skew);
  o.skew_interval_s = ParseSeconds("skew-interval", absl::GetFlag(FLAGS_skew_interval));
  o.skew_cores = absl::GetFlag(FLAGS_skew_cores);
  absl::StatusOr<std::vector<uint32_t>> uids =
      ticktrace::collect::ParseUidList(absl::GetFlag(FLAGS_allow_uid));
  if (!uids.ok()) UsageError(uids.status().message());
  o.allow_uids = *uids;
  o.group_readable = absl::GetFlag(FLAGS_group_readable);
  if (absl::Status s = ticktrace::collect::ValidateOptions(o); !s.ok()) UsageError(s.message());

  absl::Status s = ticktrace::collect::RunCollector(o);
  if (!s.ok()) {
    std::cerr << kProgram << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}
