#include "demo_options.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "stage_flags.h"
#include "messages.h"

namespace ticktrace::examples {

namespace {

constexpr char kProgram[] = "ticktrace-demo";

// --work-ns and --cpus: three comma-separated values, one per stage.
void AddPerStageFlags(BoundFlags& flags, DemoOptions& o) {
  flags.AddCustom({"work-ns", "FEED,STRATEGY,GATEWAY",
                   "busy-wait work per message in each stage, in ns", false, false,
                   "500,2000,1000"},
                  [&o](absl::string_view flag, absl::string_view text) {
                    std::vector<uint64_t> w;
                    if (absl::Status s = ParseUint64List(flag, text, 3, &w); !s.ok()) return s;
                    for (int i = 0; i < 3; ++i) o.work_ns[i] = w[i];
                    return absl::OkStatus();
                  });
  flags.AddBool({"pin", "", "pin feed, strategy and gateway to cores (see --cpus)"}, &o.pin);
  flags.AddCustom({"cpus", "FEED,STRATEGY,GATEWAY",
                   "pin to these cores (implies --pin; default with --pin: 0,1,0 on two cores, "
                   "0,1,2 on more)"},
                  [&o](absl::string_view flag, absl::string_view text) {
                    std::vector<uint64_t> c;
                    if (absl::Status s = ParseUint64List(flag, text, 3, &c); !s.ok()) return s;
                    for (int i = 0; i < 3; ++i) {
                      if (c[i] > 4095) return BadFlagValue(flag, "cores 0 to 4095", text);
                      o.cpus[i] = static_cast<int>(c[i]);
                    }
                    o.pin = true;
                    return absl::OkStatus();
                  });
}

}  // namespace

DemoOptions ParseDemoFlagsOrExit(int argc, const char* const* argv) {
  DemoOptions o;
  CommandSpec spec;
  spec.usage = {"[flags]"};
  spec.synopsis =
      "Runs the example pipeline (feed -> strategy -> gateway, three processes) under\n"
      "ticktrace-collector on a fresh session, then prints where the time went.";
  spec.last_value_wins = true;
  BoundFlags flags(std::move(spec));
  flags.AddUint64({"ticks", "N", "market-data ticks the feed sends"}, &o.ticks);
  flags.AddDouble({"rate", "PER_S", "ticks per second; 0: as fast as possible"}, &o.rate_per_s);
  AddPerStageFlags(flags, o);
  flags.AddString({"db", "PATH",
                   "store; an existing ticktrace store gets a new run, any other file is refused"},
                  &o.db_path);
  flags.AddString({"store", "URI",
                   "the store as a URI: sqlite:PATH (as --db) or clickhouse://HOST:PORT/DB "
                   "(a ClickHouse server: docs/clickhouse.md says how to start one)"},
                  &o.db_path);
  flags.AddString({"bin-dir", "DIR",
                   "where ticktrace-collector and the example programs are ($TICKTRACE_BIN_DIR; "
                   "default: beside ticktrace-demo)"},
                  &o.bin_dir);
  flags.AddString({"session", "NAME", "trace session (default: a fresh demo-<time>-<pid>)"},
                  &o.session);
  flags.AddDouble({"tsc-hz", "HZ", "give the collector this TSC frequency; 0: it calibrates"},
                  &o.tsc_hz);
  flags.AddUint64({"order-timeout-ms", "MS", "the collector's --order-timeout-ms"},
                  &o.order_timeout_ms);
  flags.AddBool({"include-flagged", "",
                 "percentiles include migrated and negative samples too (collector's "
                 "--include-flagged)"},
                &o.include_flagged);
  flags.AddUint64({"timeout-s", "SECONDS",
                   "give up when the pipeline runs longer; 0: twice the expected time + 60 s"},
                  &o.timeout_s);
  flags.AddBool({"verbose", "", "print every program's full output"}, &o.verbose);
  flags.ParseOrExit(kProgram, argc, argv);
  if (absl::Status s = ValidateDemoOptions(o); !s.ok()) ExitWithUsageError(kProgram, s.message());
  return o;
}

absl::Status ValidateDemoOptions(const DemoOptions& o) {
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
  return absl::OkStatus();
}

std::array<int, 3> PinLayout(const std::vector<int>& allowed) {
  if (allowed.empty()) return {-1, -1, -1};
  if (allowed.size() == 1) return {allowed[0], allowed[0], allowed[0]};
  if (allowed.size() == 2) return {allowed[0], allowed[1], allowed[0]};
  return {allowed[0], allowed[1], allowed[2]};
}

}  // namespace ticktrace::examples
