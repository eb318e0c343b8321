#include "stage_flags.h"

namespace ticktrace::examples {

void AddStageFlags(FlagParser* parser, StageOptions* options) {
  parser->AddString("session", &options->session,
                    "trace session; also names the example's queues ($TICKTRACE_SESSION)");
  parser->AddUint64("work-ns", &options->work_ns, "busy-wait work per message, in ns");
  parser->AddInt("pin", &options->pin_cpu, "pin to this cpu; -1: do not pin");
  parser->AddDouble("tsc-hz", &options->tsc_hz,
                    "TSC frequency for the busy-wait; 0: calibrate at start (~0.5 s)");
  parser->AddUint64("queue-timeout-ms", &options->queue_timeout_ms,
                    "how long to wait for the other side's queue to appear");
}

}  // namespace ticktrace::examples
