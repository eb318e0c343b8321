// A fanned-out parent (a tick whose chain continues in linked child orders)
// is finished once its last child is emitted, not at its order timeout: the
// tick's stages must show while a run goes on (in `top`, for one). Times are
// hand-chosen ticks of a 1 GHz clock.

#include <string>
#include <vector>

#include "collector/analysis/analyzer.h"
#include "collector/app/run_info.h"
#include "collector/stream/stream.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"

namespace ticktrace::collect {
namespace {

using testing::Link;
using testing::Stamp;

class Emitted : public OrderSink {
 public:
  void OnFinishedOrder(FinishedOrder&& f) override { ids.push_back(f.order.order_id); }
  std::vector<uint64_t> ids;
};

// Pipeline tick -> decide -> order_out, a 1 s timeout, a 1 ms linger; one
// process with those tags; `records` in its ring; then drain passes every
// 100 us for 20 ms (far less than the timeout). Returns the emitted ids.
std::vector<uint64_t> EmittedWithin20Ms(const std::vector<abi::Record>& records) {
  RunInfo info;
  info.session = "fanout_finish_test";
  info.tsc_hz = 1e9;
  info.calibration_source = "test";
  info.anchor_utc_ns = 1700000000000000000;
  AnalyzerSettings settings;
  settings.stitch.pipeline = {"tick", "decide", "order_out"};
  settings.stitch.timeout_ticks = 1'000'000'000;  // 1 s
  settings.stitch.linger_ticks = 1'000'000;       // 1 ms
  Emitted sink;
  Analyzer a(settings, info.time_base(), &sink);
  std::string chunks;
  ChunkEncoder::RunInfo(info.ToJson(), &chunks);
  testing::AnnounceProcess("fanout_finish_test", 1, 4242, {"tick", "decide", "order_out"},
                           &chunks);
  ChunkEncoder::Records(1, 0, 1, 0, records, &chunks);
  EXPECT_TRUE(DispatchAll(chunks, &a).ok());
  for (uint64_t tsc = 100'000; tsc <= 20'000'000; tsc += 100'000) a.OnClock(tsc);
  return sink.ids;
}

TEST(FanoutFinishTest, ParentFinishesWhenItsChildrenHaveFinished) {
  // Tick 1 fans out to orders 2 and 3; each reaches the last stage.
  const std::vector<uint64_t> ids = EmittedWithin20Ms(
      {Stamp(0, 1, 1'000), Link(2, 1, 1'500), Link(3, 1, 1'600), Stamp(1, 2, 2'000),
       Stamp(2, 2, 3'000), Stamp(1, 3, 2'100), Stamp(2, 3, 3'500)});
  // Children after their linger, then the parent: all three before the timeout.
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.back(), 1u) << "the parent is emitted after its children";
}

TEST(FanoutFinishTest, ParentWithAChildStillOpenWaits) {
  // Order 3 never reaches the last stage: it and its parent wait for the timeout.
  const std::vector<uint64_t> ids = EmittedWithin20Ms(
      {Stamp(0, 1, 1'000), Link(2, 1, 1'500), Link(3, 1, 1'600), Stamp(1, 2, 2'000),
       Stamp(2, 2, 3'000), Stamp(1, 3, 2'100)});
  EXPECT_EQ(ids, std::vector<uint64_t>{2}) << "only the finished child";
}

}  // namespace
}  // namespace ticktrace::collect
