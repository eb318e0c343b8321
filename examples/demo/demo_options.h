// ticktrace-demo's settings and their flags.

#ifndef TICKTRACE_EXAMPLES_DEMO_DEMO_OPTIONS_H_
#define TICKTRACE_EXAMPLES_DEMO_DEMO_OPTIONS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ticktrace::examples {

// Index of each pipeline stage in the per-stage arrays below.
enum StageIndex : int { kFeed = 0, kStrategy = 1, kGateway = 2 };
inline constexpr const char* kStageNames[3] = {"feed", "strategy", "gateway"};

struct DemoOptions {
  uint64_t ticks = 100000;
  double rate_per_s = 10000;                        // 100000 ticks at 10000/s: ~10 s
  std::array<uint64_t, 3> work_ns = {500, 2000, 1000};  // feed, strategy, gateway
  std::string db_path = "ticktrace-demo.db";
  bool pin = false;                 // pin the three programs (layout chosen by PinLayout)
  std::array<int, 3> cpus = {-1, -1, -1};  // --cpus: explicit cores; implies pinning
  std::string bin_dir;              // where the programs are; "" = beside this executable
  std::string session;              // "" = a fresh "demo-<time>-<pid>"
  double tsc_hz = 0;                // > 0: given to the collector instead of calibrating
  // The collector's --order-timeout-ms. Generous: on a loaded machine a drain
  // pass can be late by hundreds of ms, and an order must not time out between
  // two of its stamps. It does not lengthen the demo: the collector finishes
  // every open order when it stops.
  uint64_t order_timeout_ms = 5000;
  // The collector's --include-flagged: the queue hops between pinned processes
  // are cross-core by construction, and flagged samples are otherwise kept out
  // of the percentiles (their counts are reported either way).
  bool include_flagged = false;
  uint64_t timeout_s = 0;           // 0 = expected duration x 2 + 60 s
  bool verbose = false;             // print every child's full output
};

// Parses argv into the demo's options: on --help or --version prints and
// exits 0; on a bad flag or value prints one line (common/flags.h) and
// exits 2.
DemoOptions ParseDemoFlagsOrExit(int argc, const char* const* argv);

// Checks values the flags' types do not: InvalidArgument naming the flag.
absl::Status ValidateDemoOptions(const DemoOptions& o);

// The cores for feed, strategy and gateway with --pin on a machine whose
// allowed cores are `allowed` (ascending). Two cores: feed and gateway share
// the first, the strategy has the second to itself (see docs/quickstart.md).
std::array<int, 3> PinLayout(const std::vector<int>& allowed);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_DEMO_DEMO_OPTIONS_H_
