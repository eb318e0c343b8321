// ticktrace-example-gateway: the pipeline's order gateway (see gateway.cc).

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
  options.work_ns = 1000;
  BoundFlags flags(StageCommand(
      "Receives orders from ticktrace-example-strategy, stamps gw_in, works, stamps "
      "gw_sent."));
  AddStageFlags(&flags, &options);
  flags.ParseOrExit("ticktrace-example-gateway", argc, argv);
  InstallStopHandlers();
  const absl::StatusOr<GatewayResult> result = RunGateway(options);
  if (!result.ok()) {
    // The message only: no status code name in front of it (docs/viewer.md#exit-status-and-errors:
    // one line, the program's name, then what went wrong).
    std::fprintf(stderr, "ticktrace-example-gateway: %s\n",
                 std::string(result.status().message()).c_str());
    return kExitError;
  }
  std::printf("gateway: received %llu orders, sent %llu%s\n",
              static_cast<unsigned long long>(result->orders_received),
              static_cast<unsigned long long>(result->orders_sent),
              result->stopped ? " (stopped by a signal)" : "");
  return result->stopped ? kExitStopped : kExitOk;
}
