// ticktrace-example-feed: the pipeline's market-data feed handler (see feed.cc).

#include <cstdio>
#include <string>

#include "stage_flags.h"
#include "stage_runtime.h"
#include "stages.h"

constexpr char kProgram[] = "ticktrace-example-feed";

int main(int argc, char** argv) {
  using namespace ticktrace::examples;
  using ticktrace::BoundFlags;
  FeedOptions options;
  options.stage = DefaultStageOptions(/*work_ns=*/500);
  BoundFlags flags(StageCommand(
      "Generates market-data ticks, stamps md_rx and md_decoded, and queues them to "
      "ticktrace-example-strategy."));
  AddStageFlags(&flags, &options.stage);
  flags.AddUint64({"ticks", "N", "ticks to send (ids 1..N)"}, &options.ticks);
  flags.AddDouble({"rate", "PER_S", "ticks per second; 0: as fast as possible"},
                  &options.rate_per_s);
  flags.AddUint64({"start-delay-ms", "MS",
                   "wait this long after attaching before the first tick (lets a running "
                   "collector discover every process first)"},
                  &options.start_delay_ms);
  StartStage(&flags, kProgram, argc, argv);
  if (options.rate_per_s < 0) ticktrace::ExitWithUsageError(kProgram, "--rate: must be >= 0");
  const absl::StatusOr<FeedResult> result = RunFeed(options);
  if (!result.ok()) return StageFailed(kProgram, result.status());
  std::printf("feed: sent %llu ticks in %.2f s (%.0f ticks/s), queue full %llu times%s\n",
              static_cast<unsigned long long>(result->ticks_sent), result->elapsed_s,
              result->elapsed_s > 0 ? result->ticks_sent / result->elapsed_s : 0.0,
              static_cast<unsigned long long>(result->queue_full_waits),
              result->stopped ? " (stopped by a signal)" : "");
  return StageExitCode(result->stopped);
}
