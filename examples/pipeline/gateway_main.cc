// ticktrace-example-gateway: the pipeline's order gateway (see gateway.cc).

#include <cstdio>

#include "stage_flags.h"
#include "stages.h"

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  return StageMain(
      argc, argv, "ticktrace-example-gateway",
      "Receives orders from ticktrace-example-strategy, stamps gw_in, works, stamps gw_sent.",
      /*work_ns=*/1000, RunGateway, [](const GatewayResult& r) {
        std::printf("gateway: received %llu orders, sent %llu%s\n",
                    static_cast<unsigned long long>(r.orders_received),
                    static_cast<unsigned long long>(r.orders_sent),
                    r.stopped ? " (stopped by a signal)" : "");
      });
}
