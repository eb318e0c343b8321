// The strategy: reads ticks, decides (busy-wait inside a Span), and sends 0, 1
// or 2 orders per tick to the gateway (the rule is in messages.h).
//
//   strat_in   stamp_rdtscp(tick id)    the tick arrived from the feed
//   decide     Span(tick id)            the decision itself, both cores recorded
//   link(order id, tick id)             each order continues its tick's chain
//   strat_out  stamp_rdtscp(order id)   per order, just before it is queued

#include <chrono>

#include "absl/strings/str_cat.h"
#include "messages.h"
#include "shared_queue.h"
#include "stage_runtime.h"
#include "stages.h"
#include "ticktrace/trace.h"

namespace ticktrace::examples {
namespace {

Order MakeOrder(const Tick& tick, uint32_t k) {
  Order o{};
  o.order_id = OrderId(tick.tick_id, k);
  o.tick_id = tick.tick_id;
  o.side = k == 0 ? Side::kBuy : Side::kSell;
  o.price_ticks = k == 0 ? tick.bid_price_ticks : tick.ask_price_ticks;
  o.quantity = k == 0 ? tick.bid_size / 2 : tick.ask_size / 2;
  return o;
}

}  // namespace

absl::StatusOr<StrategyResult> RunStrategy(const StageOptions& options) {
  NameThisThread("strategy");
  if (absl::Status s = PinToCpu(options.pin_cpu); !s.ok()) return s;
  absl::StatusOr<double> tsc_hz = ResolveTscHz(options.tsc_hz);
  if (!tsc_hz.ok()) return tsc_hz.status();
  if (absl::Status s = InitTracing(options.session); !s.ok()) return s;
  const Tag strat_in(kTagStratIn);
  const Tag decide(kTagDecide);
  const Tag strat_out(kTagStratOut);
  const BusyWork decision_work(*tsc_hz, options.work_ns);

  // Our input queue first, so the feed can start; then the gateway's.
  absl::StatusOr<std::unique_ptr<TickQueue>> tick_queue =
      TickQueue::Create(QueueSegmentName(options.session, kTicksChannel), QueueRole::kConsumer);
  if (!tick_queue.ok()) return tick_queue.status();
  absl::StatusOr<std::unique_ptr<OrderQueue>> order_queue =
      OrderQueue::Open(QueueSegmentName(options.session, kOrdersChannel), QueueRole::kProducer,
                       std::chrono::milliseconds(options.queue_timeout_ms), StopRequested);
  if (!order_queue.ok()) return order_queue.status();
  SpscConsumer<Tick, kTicksQueueCapacity> ticks((*tick_queue)->layout());
  SpscProducer<Order, kOrdersQueueCapacity> orders((*order_queue)->layout());

  StrategyResult result;
  IdleWaiter waiter;
  Tick tick;
  while (true) {
    if (StopRequested()) {
      result.stopped = true;
      break;
    }
    if (!ticks.TryPop(&tick)) {
      if (ticks.Finished()) break;
      waiter.Idle();
      if (waiter.TimeForSlowCheck()) {
        const int32_t feed_pid = (*tick_queue)->PeerPid(QueueRole::kConsumer);
        if (feed_pid != 0 && !ProcessAlive(feed_pid) && !ticks.Closed()) {
          return absl::AbortedError(absl::StrCat("the feed (pid ", feed_pid,
                                                 ") exited without closing the ticks queue, after ",
                                                 result.ticks_received, " ticks"));
        }
      }
      continue;
    }
    waiter.Reset();
    stamp_rdtscp(strat_in, tick.tick_id);
    uint32_t order_count;
    {
      Span span(decide, tick.tick_id);
      decision_work.Run();
      order_count = OrdersForTick(tick.tick_id);
    }
    ++result.ticks_received;
    ++result.ticks_by_fan_out[order_count];
    for (uint32_t k = 0; k < order_count; ++k) {
      const Order order = MakeOrder(tick, k);
      link(order.order_id, tick.tick_id);
      stamp_rdtscp(strat_out, order.order_id);
      IdleWaiter full_waiter;
      while (!orders.TryPush(order)) {
        if (StopRequested()) break;
        full_waiter.Idle();
        if (full_waiter.TimeForSlowCheck() &&
            !ProcessAlive((*order_queue)->PeerPid(QueueRole::kProducer))) {
          return absl::AbortedError(absl::StrCat("the gateway exited while the orders queue was full"));
        }
      }
      if (StopRequested()) break;
      ++result.orders_sent;
    }
  }
  orders.Close();
  return result;
}

}  // namespace ticktrace::examples
