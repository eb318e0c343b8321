// The order gateway: receives orders, "encodes and sends" each one (busy-wait).
//
//   gw_in    stamp_rdtscp(order id)   the order arrived from the strategy
//   (work_ns busy-wait: encode, send)
//   gw_sent  stamp_rdtscp(order id)   on the wire: the order's last stage

#include <chrono>

#include "absl/strings/str_cat.h"
#include "messages.h"
#include "shared_queue.h"
#include "stage_runtime.h"
#include "stages.h"
#include "ticktrace/trace.h"

namespace ticktrace::examples {

absl::StatusOr<GatewayResult> RunGateway(const StageOptions& options) {
  NameThisThread("gateway");
  if (absl::Status s = PinToCpu(options.pin_cpu); !s.ok()) return s;
  absl::StatusOr<double> tsc_hz = ResolveTscHz(options.tsc_hz);
  if (!tsc_hz.ok()) return tsc_hz.status();
  if (absl::Status s = InitTracing(options.session); !s.ok()) return s;
  const Tag gw_in(kTagGwIn);
  const Tag gw_sent(kTagGwSent);
  const BusyWork send_work(*tsc_hz, options.work_ns);

  absl::StatusOr<std::unique_ptr<OrderQueue>> order_queue =
      OrderQueue::Create(QueueSegmentName(options.session, kOrdersChannel), QueueRole::kConsumer);
  if (!order_queue.ok()) return order_queue.status();
  SpscConsumer<Order, kOrdersQueueCapacity> orders((*order_queue)->layout());

  GatewayResult result;
  IdleWaiter waiter;
  Order order;
  while (true) {
    if (StopRequested()) {
      result.stopped = true;
      break;
    }
    if (!orders.TryPop(&order)) {
      if (orders.Finished()) break;
      waiter.Idle();
      if (waiter.TimeForSlowCheck()) {
        const int32_t strategy_pid = (*order_queue)->PeerPid(QueueRole::kConsumer);
        if (strategy_pid != 0 && !ProcessAlive(strategy_pid) && !orders.Closed()) {
          return absl::AbortedError(
              absl::StrCat("the strategy (pid ", strategy_pid,
                           ") exited without closing the orders queue, after ",
                           result.orders_received, " orders"));
        }
      }
      continue;
    }
    waiter.Reset();
    stamp_rdtscp(gw_in, order.order_id);
    ++result.orders_received;
    send_work.Run();
    stamp_rdtscp(gw_sent, order.order_id);
    ++result.orders_sent;
  }
  return result;
}

}  // namespace ticktrace::examples
