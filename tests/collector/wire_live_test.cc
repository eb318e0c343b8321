// The wire on the order's timeline, live: a producer sends each order over
// loopback UDP, stamps md_rx after recvmsg and wire_rx at the kernel's
// receive timestamp (stamp_at, CLOCK_REALTIME), then order_send and wire_tx
// at the kernel's send timestamp (ticktrace/net.h). A real collector places
// the kernel's times through its UTC anchors. Checked against the
// producer's own CLOCK_REALTIME reads:
//   - every wire_rx precedes its md_rx: wire_rx->md_rx is positive (the
//     packet waits --gap-us = 500 us in the socket before recvmsg, far more
//     than the mapping's error);
//   - wire_rx->md_rx is below the time from before the send to after md_rx,
//     plus the stage's uncertainty;
//   - the send timestamp follows the send call: order_send->wire_tx is not
//     negative beyond its uncertainty;
//   - every such stage is flagged external (256), and the TSC-only stage
//     md_rx->order_send is not.

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/collector/live_fixture.h"
#include "tests/collector/store_query.h"

namespace ticktrace::collect::testing {
namespace {

struct ProducerTimes {
  int64_t before_send = 0, rx = 0, after_md_rx = 0, before_order_send = 0, tx = 0;
};

using WireLiveTest = LiveTest;

TEST_F(WireLiveTest, KernelTimestampsLandOnTheOrdersTimeline) {
  constexpr int kOrders = 100;
  const pid_t collector =
      StartCollector({"--pipeline", "wire_rx,md_rx,order_send,wire_tx", "--order-timeout-ms", "2000"});
  const std::string times_file = dir_.File("times.txt");
  const pid_t producer = StartProducer({"--mode", "udp", "--orders", std::to_string(kOrders),
                                        "--gap-us", "500", "--out", times_file});
  WaitProducers({producer});
  FinishRun(collector);

  std::map<int64_t, ProducerTimes> times;
  std::ifstream in(times_file);
  int64_t id;
  ProducerTimes t;
  while (in >> id >> t.before_send >> t.rx >> t.after_md_rx >> t.before_order_send >> t.tx) {
    times[id] = t;
  }
  ASSERT_EQ(times.size(), static_cast<size_t>(kOrders)) << ReadFile(dir_.File("producer.log"));

  StoreQuery q(db());
  const double rx_uncertainty =
      q.Real("SELECT uncertainty_ns FROM stage_stats WHERE stage = 'wire_rx->md_rx'");
  const double tx_uncertainty =
      q.Real("SELECT uncertainty_ns FROM stage_stats WHERE stage = 'order_send->wire_tx'");
  EXPECT_GT(rx_uncertainty, 0) << "an external stage always carries its uncertainty";
  int rx_seen = 0, tx_seen = 0;
  for (const auto& row : q.Rows("SELECT order_id, stage, latency_ns, flags FROM samples")) {
    const int64_t order = std::stoll(row[0]);
    const std::string& stage = row[1];
    const double latency_ns = std::stod(row[2]);
    const int64_t flags = std::stoll(row[3]);
    ASSERT_TRUE(times.count(order)) << order;
    const ProducerTimes& p = times[order];
    if (stage == "wire_rx->md_rx") {
      ++rx_seen;
      ASSERT_NE(p.rx, 0) << "order " << order << " got no receive timestamp";
      EXPECT_GT(latency_ns, 0) << "order " << order << ": wire_rx must precede md_rx";
      EXPECT_LT(latency_ns, static_cast<double>(p.after_md_rx - p.before_send) + rx_uncertainty)
          << "order " << order;
      EXPECT_EQ(flags & 256, 256) << "order " << order;
      EXPECT_EQ(flags & 2, 0) << "order " << order << " negative";
    } else if (stage == "order_send->wire_tx") {
      ++tx_seen;
      ASSERT_NE(p.tx, 0) << "order " << order << " got no send timestamp";
      EXPECT_GE(p.tx, p.before_order_send) << "the kernel's send time follows the call";
      EXPECT_GT(latency_ns, -tx_uncertainty) << "order " << order;
      EXPECT_EQ(flags & 256, 256) << "order " << order;
      EXPECT_EQ(flags & 2, 0) << "order " << order << " negative";
    } else if (stage == "md_rx->order_send") {
      EXPECT_EQ(flags & 256, 0) << "a TSC-only stage is not external";
    }
  }
  EXPECT_EQ(rx_seen, kOrders) << ReadFile(dir_.File("producer.log")) << ReadFile(log());
  EXPECT_EQ(tx_seen, kOrders);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE tag = 'wire_rx' AND flags & 256 = 256"),
            kOrders);
}

}  // namespace
}  // namespace ticktrace::collect::testing
