// ticktrace-example-strategy: the pipeline's strategy (see strategy.cc).

#include <cstdio>

#include "stage_flags.h"
#include "stages.h"

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  return StageMain(
      argc, argv, "ticktrace-example-strategy",
      "Reads ticks from ticktrace-example-feed, decides (a Span), and queues 0-2 orders per "
      "tick to ticktrace-example-gateway.",
      /*work_ns=*/2000, RunStrategy, [](const StrategyResult& r) {
        std::printf(
            "strategy: received %llu ticks, sent %llu orders (ticks with 0/1/2 orders: "
            "%llu/%llu/%llu)%s\n",
            static_cast<unsigned long long>(r.ticks_received),
            static_cast<unsigned long long>(r.orders_sent),
            static_cast<unsigned long long>(r.ticks_by_fan_out[0]),
            static_cast<unsigned long long>(r.ticks_by_fan_out[1]),
            static_cast<unsigned long long>(r.ticks_by_fan_out[2]),
            r.stopped ? " (stopped by a signal)" : "");
      });
}
