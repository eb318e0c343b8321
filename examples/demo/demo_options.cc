#include "demo_options.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "flag_parser.h"
#include "messages.h"

namespace ticktrace::examples {

absl::StatusOr<ParsedDemoFlags> ParseDemoFlags(int argc, const char* const* argv) {
  ParsedDemoFlags parsed;
  DemoOptions& o = parsed.options;
  FlagParser parser(
      "ticktrace-demo",
      "Runs the example pipeline (feed -> strategy -> gateway, three processes) under\n"
      "ticktrace-collector on a fresh session, then prints where the time went.");
  parser.AddUint64("ticks", &o.ticks, "market-data ticks the feed sends");
  parser.AddDouble("rate", &o.rate_per_s, "ticks per second; 0: as fast as possible");
  parser.AddCustom(
      "work-ns", "FEED,STRATEGY,GATEWAY",
      [&o](absl::string_view v) {
        std::vector<uint64_t> w;
        if (absl::Status s = ParseUint64List(v, 3, &w); !s.ok()) return s;
        for (int i = 0; i < 3; ++i) o.work_ns[i] = w[i];
        return absl::OkStatus();
      },
      "busy-wait work per message in each stage, in ns (default: 500,2000,1000)");
  parser.AddString("db", &o.db_path,
                   "store; an existing ticktrace store gets a new run, any other file is refused");
  parser.AddString("store", &o.db_path,
                   "the store as a URI: sqlite:PATH (as --db) or clickhouse://HOST:PORT/DB "
                   "(a ClickHouse server: docs/clickhouse.md says how to start one)");
  parser.AddBool("pin", &o.pin, "pin feed, strategy and gateway to cores (see --cpus)");
  parser.AddCustom(
      "cpus", "FEED,STRATEGY,GATEWAY",
      [&o](absl::string_view v) {
        std::vector<uint64_t> c;
        if (absl::Status s = ParseUint64List(v, 3, &c); !s.ok()) return s;
        for (int i = 0; i < 3; ++i) {
          if (c[i] > 4095) return absl::InvalidArgumentError(absl::StrCat("no cpu ", c[i]));
          o.cpus[i] = static_cast<int>(c[i]);
        }
        o.pin = true;
        return absl::OkStatus();
      },
      "pin to these cores (implies --pin; default with --pin: 0,1,0 on two cores, 0,1,2 on more)");
  parser.AddString("bin-dir", &o.bin_dir,
                   "where ticktrace-collector and the example programs are ($TICKTRACE_BIN_DIR; "
                   "default: beside ticktrace-demo)");
  parser.AddString("session", &o.session, "trace session (default: a fresh demo-<time>-<pid>)");
  parser.AddDouble("tsc-hz", &o.tsc_hz, "give the collector this TSC frequency; 0: it calibrates");
  parser.AddUint64("order-timeout-ms", &o.order_timeout_ms, "the collector's --order-timeout-ms");
  parser.AddBool("include-flagged", &o.include_flagged,
                 "percentiles include migrated and negative samples too (collector's --include-flagged)");
  parser.AddUint64("timeout-s", &o.timeout_s,
                   "give up when the pipeline runs longer; 0: twice the expected time + 60 s");
  parser.AddBool("verbose", &o.verbose, "print every program's full output");
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) return s;
  parsed.help = parser.help_requested();
  parsed.version = parser.version_requested();
  parsed.usage = parser.Usage();
  if (parsed.help || parsed.version) return parsed;

  if (o.ticks == 0 || o.ticks > kMaxTickId) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ticks: must be between 1 and ", kMaxTickId, ", got ", o.ticks));
  }
  if (!(o.rate_per_s >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--rate: must be >= 0, got ", o.rate_per_s));
  }
  for (int i = 0; i < 3; ++i) {
    if (o.work_ns[i] > 1000000000u) {
      return absl::InvalidArgumentError(
          absl::StrCat("--work-ns: ", kStageNames[i], " work must be at most 1 s, got ",
                       o.work_ns[i], " ns"));
    }
  }
  if (o.db_path.empty()) return absl::InvalidArgumentError("--db: must not be empty");
  if (!(o.tsc_hz >= 0)) return absl::InvalidArgumentError("--tsc-hz: must be >= 0");
  if (!o.session.empty()) {
    if (o.session.size() > 64) return absl::InvalidArgumentError("--session: at most 64 characters");
    for (char c : o.session) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("--session: only letters, digits, '_' and '-' allowed, got '",
                         o.session, "'"));
      }
    }
  }
  return parsed;
}

std::array<int, 3> PinLayout(const std::vector<int>& allowed) {
  if (allowed.empty()) return {-1, -1, -1};
  if (allowed.size() == 1) return {allowed[0], allowed[0], allowed[0]};
  if (allowed.size() == 2) return {allowed[0], allowed[1], allowed[0]};
  return {allowed[0], allowed[1], allowed[2]};
}

}  // namespace ticktrace::examples
