// An order id used again while the pipeline is still being learned (no
// --pipeline): each use is its own order, with its own latency. Regression
// for the learning hold keyed by id, which emitted the first use twice and
// lost the second (samples {100, 100, 200} instead of {100, 500, 200}).
// Archives use 1 GHz, so one tick is one ns.

#include <string>

#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"

namespace ticktrace::collect::testing {
namespace {

TEST(LearnedPipelineReuse, EachUseOfAnIdIsItsOwnOrder) {
  // One process, tags md_rx (0) and order_sent (1). Each order finishes by
  // the 1 ms timeout (the pipeline is not known yet) and its 1 ms linger
  // passes before the next starts.
  ArchiveBuilder b;
  b.Process(1, {"md_rx", "order_sent"});
  constexpr uint64_t kGap = 10'000'000;  // 10 ms between orders: past the 1 ms timeout
  const struct {
    uint64_t id;
    uint64_t latency_ns;
  } uses[] = {{1, 100}, {1, 500}, {2, 200}};
  uint64_t t = kGap;
  for (const auto& u : uses) {
    b.Records(1, {Stamp(0, u.id, t), Stamp(1, u.id, t + u.latency_ns)});
    b.Clock(t + u.latency_ns + 1);
    t += kGap;
    b.Clock(t);  // the timeout sweep finishes the order; it lingers 1 ms
    t += kGap;
    b.Clock(t);  // past its linger: held for learning, so the next use is a new instance
  }
  b.Clock(t + kGap);

  TempDir dir;
  CollectorOptions o;
  o.store_uri.reset();  // statistics only: the store's id key is another finding
  o.learn_orders = 3;
  o.order_timeout_ms = 1;
  const testing::Replayed r = ReplayArchive(b, dir, o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  const RunSummary& s = r.summary;

  ASSERT_TRUE(s.pipeline_learned) << r.log;
  const StageSummary* stage = s.stage("md_rx->order_sent");
  ASSERT_NE(stage, nullptr) << r.log;
  // By hand: samples {100, 500, 200} ns.
  EXPECT_EQ(stage->count, 3u);
  EXPECT_DOUBLE_EQ(stage->min_ns, 100);
  EXPECT_DOUBLE_EQ(stage->max_ns, 500);
  EXPECT_DOUBLE_EQ(stage->mean_ns, 800.0 / 3);
  EXPECT_EQ(s.counter("orders_complete") + s.counter("orders_incomplete"), 3);
}

}  // namespace
}  // namespace ticktrace::collect::testing
