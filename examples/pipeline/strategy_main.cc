// ticktrace-example-strategy: the pipeline's strategy (see strategy.cc).

#include <cstdio>
#include <string>

#include "stage_flags.h"
#include "stage_runtime.h"
#include "stages.h"

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  using ticktrace::BoundFlags;
  StageOptions options;
  options.session = DefaultSession();
  options.work_ns = 2000;
  BoundFlags flags(StageCommand(
      "Reads ticks from ticktrace-example-feed, decides (a Span), and queues 0-2 "
      "orders per tick to ticktrace-example-gateway."));
  AddStageFlags(&flags, &options);
  flags.ParseOrExit("ticktrace-example-strategy", argc, argv);
  InstallStopHandlers();
  const absl::StatusOr<StrategyResult> result = RunStrategy(options);
  if (!result.ok()) {
    // The message only: no status code name in front of it (docs/viewer.md#exit-status-and-errors:
    // one line, the program's name, then what went wrong).
    std::fprintf(stderr, "ticktrace-example-strategy: %s\n",
                 std::string(result.status().message()).c_str());
    return kExitError;
  }
  std::printf(
      "strategy: received %llu ticks, sent %llu orders (ticks with 0/1/2 orders: %llu/%llu/%llu)%s\n",
      static_cast<unsigned long long>(result->ticks_received),
      static_cast<unsigned long long>(result->orders_sent),
      static_cast<unsigned long long>(result->ticks_by_fan_out[0]),
      static_cast<unsigned long long>(result->ticks_by_fan_out[1]),
      static_cast<unsigned long long>(result->ticks_by_fan_out[2]),
      result->stopped ? " (stopped by a signal)" : "");
  return result->stopped ? kExitStopped : kExitOk;
}
