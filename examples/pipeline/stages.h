// The three stages of the example pipeline, each the body of one program:
//
//   ticktrace-example-feed      RunFeed()      ticks  → "ticks" queue
//   ticktrace-example-strategy  RunStrategy()  "ticks" queue → orders → "orders" queue
//   ticktrace-example-gateway   RunGateway()   "orders" queue → (sent)
//
// Each Run* pins the thread, attaches to the trace session, then loops; it
// returns when its input ends, when StopRequested(), or on an error. What each
// stamps is described in messages.h. Call each from main() only, once.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_STAGES_H_
#define TICKTRACE_EXAMPLES_PIPELINE_STAGES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ticktrace::examples {

// Settings every stage has.
struct StageOptions {
  std::string session = "default";  // trace session and queue names
  uint64_t work_ns = 0;             // busy-wait per message, in ns
  int pin_cpu = -1;                 // core to pin to; -1: not pinned
  double tsc_hz = 0;                // TSC frequency for work_ns; 0: calibrate
  uint64_t queue_timeout_ms = 10000;  // how long to wait for the peer's queue
};

struct FeedOptions {
  StageOptions stage;
  uint64_t ticks = 100000;   // ticks 1..ticks are sent
  double rate_per_s = 10000;  // 0: as fast as the strategy takes them
  // Pause between attaching (trace segment and queue ready) and the first
  // tick, so that a running collector discovers every process of the session
  // before orders start finishing (it scans for new segments every 100 ms).
  uint64_t start_delay_ms = 0;
};

struct FeedResult {
  uint64_t ticks_sent = 0;
  double elapsed_s = 0;
  uint64_t queue_full_waits = 0;  // pushes that found the queue full at first
  bool stopped = false;           // a signal ended the run early
};

// REQUIRES: options.stage.work_ns etc. validated by the caller's flag parsing.
absl::StatusOr<FeedResult> RunFeed(const FeedOptions& options);

struct StrategyResult {
  uint64_t ticks_received = 0;
  uint64_t orders_sent = 0;
  uint64_t ticks_by_fan_out[3] = {0, 0, 0};  // ticks that produced 0, 1, 2 orders
  bool stopped = false;
};

absl::StatusOr<StrategyResult> RunStrategy(const StageOptions& options);

struct GatewayResult {
  uint64_t orders_received = 0;
  uint64_t orders_sent = 0;
  bool stopped = false;
};

absl::StatusOr<GatewayResult> RunGateway(const StageOptions& options);

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_STAGES_H_
