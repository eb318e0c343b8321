// The example pipeline's messages, id scheme, fan-out rule and stage tags.
//
//   feed ──Tick──► strategy ──Order(s)──► gateway
//
// Ids. Ticks are numbered 1, 2, 3, ... by the feed. Orders live in a separate
// range so that a tick id and an order id never collide in the collector's
// order table:
//
//   order id = kOrderIdBase | (tick_id << 1) | k      k = 0 or 1 (first or second order of the tick)
//
// kOrderIdBase is bit 62 (not 63) so that every id stays a positive SQLite
// INTEGER. A tick id must stay below kMaxTickId (2^61) for the shift to fit.
//
// Fan-out, decided deterministically from the tick id so that every count is
// known in advance:
//
//   tick_id % 4 == 0  → no order
//   tick_id % 4 == 1  → one order
//   tick_id % 4 == 2  → one order
//   tick_id % 4 == 3  → two orders
//
// Stages (ticktrace tags), in pipeline order:
//
//   feed:      md_rx ── work ──► md_decoded        (stamp, stamp_rdtscp)
//   strategy:  strat_in ─[decide: Span, work]─► strat_out (one per order, link()ed to the tick)
//   gateway:   gw_in ── work ──► gw_sent
//
// Everything here is plain data shared by the programs, the demo and the tests.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_MESSAGES_H_
#define TICKTRACE_EXAMPLES_PIPELINE_MESSAGES_H_

#include <cstdint>
#include <type_traits>

namespace ticktrace::examples {

inline constexpr uint64_t kOrderIdBase = 1ull << 62;
inline constexpr uint64_t kMaxTickId = (1ull << 61) - 1;

// One market-data update, as the feed hands it to the strategy.
struct Tick {
  uint64_t tick_id;
  int64_t bid_price_ticks;  // price in exchange ticks
  int64_t ask_price_ticks;
  uint32_t bid_size;
  uint32_t ask_size;
};
static_assert(sizeof(Tick) == 32 && std::is_trivially_copyable_v<Tick>);

enum class Side : uint8_t { kBuy = 0, kSell = 1 };

// One order, as the strategy hands it to the gateway.
struct Order {
  uint64_t order_id;
  uint64_t tick_id;  // the tick that caused it (also link()ed in the trace)
  int64_t price_ticks;
  uint32_t quantity;
  Side side;
  uint8_t reserved[3];
};
static_assert(sizeof(Order) == 32 && std::is_trivially_copyable_v<Order>);

// How many orders tick `tick_id` produces (0, 1 or 2); see the table above.
constexpr uint32_t OrdersForTick(uint64_t tick_id) {
  switch (tick_id % 4) {
    case 0:
      return 0;
    case 3:
      return 2;
    default:
      return 1;
  }
}

// The id of the k-th order (k = 0 or 1) of tick `tick_id`.
// REQUIRES: 1 <= tick_id <= kMaxTickId, k < OrdersForTick(tick_id).
constexpr uint64_t OrderId(uint64_t tick_id, uint32_t k) {
  return kOrderIdBase | (tick_id << 1) | (k & 1u);
}

// True when `id` is an order id (as opposed to a tick id).
constexpr bool IsOrderId(uint64_t id) { return (id & kOrderIdBase) != 0; }

// The tick an order id was made from.
constexpr uint64_t TickOfOrder(uint64_t order_id) { return (order_id & ~kOrderIdBase) >> 1; }

// What a run of ticks 1..ticks produces.
struct ExpectedCounts {
  uint64_t ticks = 0;
  uint64_t orders = 0;
  uint64_t ticks_without_order = 0;
  uint64_t ticks_with_one_order = 0;
  uint64_t ticks_with_two_orders = 0;
};

// The counts for ticks 1..ticks, in closed form.
constexpr ExpectedCounts CountsForTicks(uint64_t ticks) {
  ExpectedCounts c;
  c.ticks = ticks;
  const uint64_t full = ticks / 4;  // complete groups of ids 4q+1 .. 4q+4
  const uint64_t rest = ticks % 4;  // leftover ids with residues 1 .. rest
  c.ticks_without_order = full;
  c.ticks_with_one_order = 2 * full + (rest >= 1 ? 1 : 0) + (rest >= 2 ? 1 : 0);
  c.ticks_with_two_orders = full + (rest >= 3 ? 1 : 0);
  c.orders = c.ticks_with_one_order + 2 * c.ticks_with_two_orders;
  return c;
}

// Tag names, shared by the programs, the demo (the collector's --pipeline) and the tests.
inline constexpr char kTagMdRx[] = "md_rx";
inline constexpr char kTagMdDecoded[] = "md_decoded";
inline constexpr char kTagStratIn[] = "strat_in";
inline constexpr char kTagDecide[] = "decide";  // a Span inside the strategy
inline constexpr char kTagStratOut[] = "strat_out";
inline constexpr char kTagGwIn[] = "gw_in";
inline constexpr char kTagGwSent[] = "gw_sent";

// The declared pipeline: the stamp tags in order (the span is measured on its own).
inline constexpr char kPipeline[] = "md_rx,md_decoded,strat_in,strat_out,gw_in,gw_sent";

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_MESSAGES_H_
