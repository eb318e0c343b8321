// The feed handler: makes ticks 1..N at a steady rate, "decodes" each one
// (busy-wait), and pushes it to the strategy.
//
//   md_rx       stamp()        the tick arrived (plain rdtsc: cheapest)
//   (work_ns busy-wait: decode)
//   md_decoded  stamp_rdtscp() decoded; records the core for the hand-off to the strategy

#include <sys/prctl.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "messages.h"
#include "shared_queue.h"
#include "stage_runtime.h"
#include "stages.h"
#include "ticktrace/trace.h"

namespace ticktrace::examples {
namespace {

timespec AddNs(timespec t, uint64_t ns) {
  const uint64_t total = static_cast<uint64_t>(t.tv_nsec) + ns;
  t.tv_sec += static_cast<time_t>(total / 1000000000u);
  t.tv_nsec = static_cast<long>(total % 1000000000u);
  return t;
}

// A made-up but deterministic quote for tick `id`.
Tick MakeTick(uint64_t id) {
  Tick t{};
  t.tick_id = id;
  t.bid_price_ticks = 10000 + static_cast<int64_t>(id % 17);
  t.ask_price_ticks = t.bid_price_ticks + 1 + static_cast<int64_t>(id % 3);
  t.bid_size = static_cast<uint32_t>(100 + id % 50);
  t.ask_size = static_cast<uint32_t>(120 + id % 40);
  return t;
}

}  // namespace

absl::StatusOr<FeedResult> RunFeed(const FeedOptions& options) {
  const StageOptions& stage = options.stage;
  if (options.ticks > kMaxTickId) {
    return absl::InvalidArgumentError(absl::StrCat("--ticks must be at most ", kMaxTickId));
  }
  NameThisThread("feed");
  if (absl::Status s = PinToCpu(stage.pin_cpu); !s.ok()) return s;
  absl::StatusOr<double> tsc_hz = ResolveTscHz(stage.tsc_hz);
  if (!tsc_hz.ok()) return tsc_hz.status();
  if (absl::Status s = InitTracing(stage.session); !s.ok()) return s;
  // Tags register into the segment, so they are made after InitTracing().
  const Tag md_rx(kTagMdRx);
  const Tag md_decoded(kTagMdDecoded);
  const BusyWork decode(*tsc_hz, stage.work_ns);

  absl::StatusOr<std::unique_ptr<TickQueue>> queue =
      TickQueue::Open(QueueSegmentName(stage.session, kTicksChannel), QueueRole::kProducer,
                      std::chrono::milliseconds(stage.queue_timeout_ms), StopRequested);
  if (!queue.ok()) return queue.status();
  SpscProducer<Tick, kTicksQueueCapacity> ticks((*queue)->layout());
  const auto start_at =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.start_delay_ms);
  while (std::chrono::steady_clock::now() < start_at && !StopRequested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // Wake-ups within 1 us of the schedule instead of the default 50 us slack.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  const uint64_t period_ns =
      options.rate_per_s > 0 ? static_cast<uint64_t>(1e9 / options.rate_per_s) : 0;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const auto started = std::chrono::steady_clock::now();

  FeedResult result;
  IdleWaiter waiter;
  for (uint64_t id = 1; id <= options.ticks; ++id) {
    if (StopRequested()) {
      result.stopped = true;
      break;
    }
    if (period_ns > 0) {
      // An absolute schedule: a late wake-up does not slow the average rate.
      const timespec due = AddNs(start, (id - 1) * period_ns);
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr) == EINTR &&
             !StopRequested()) {
      }
    }
    stamp(md_rx, id);
    decode.Run();
    const Tick tick = MakeTick(id);
    stamp_rdtscp(md_decoded, id);
    if (!ticks.TryPush(tick)) {
      ++result.queue_full_waits;
      waiter.Reset();
      while (!ticks.TryPush(tick)) {
        if (StopRequested()) break;
        waiter.Idle();
        if (waiter.TimeForSlowCheck() &&
            !ProcessAlive((*queue)->PeerPid(QueueRole::kProducer))) {
          return absl::AbortedError(absl::StrCat(
              "the strategy (pid ", (*queue)->PeerPid(QueueRole::kProducer),
              ") exited while the ticks queue was full, after ", result.ticks_sent, " ticks"));
        }
      }
      if (StopRequested()) {
        result.stopped = true;
        break;
      }
    }
    ++result.ticks_sent;
  }
  ticks.Close();
  result.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace ticktrace::examples
