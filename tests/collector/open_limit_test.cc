// Open orders are bounded, so memory is (docs/collector.md#checkpoints-and-restart, --max-open-orders): with max_open_orders N, the
// records of an (N+1)-th order open at once are counted in
// records_over_open_limit and not kept; once orders finish, new ones are
// taken again. Counts by hand: 150 orders opened with a limit of 100.

#include <string>
#include <vector>

#include "collector/analysis/analyzer.h"
#include "collector/app/run_info.h"
#include "collector/stream/stream.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"

namespace ticktrace::collect {
namespace {

using testing::Stamp;

int64_t CounterOf(const Analyzer& a, const std::string& name) {
  for (const auto& [n, v] : a.CounterValues()) {
    if (n == name) return v;
  }
  return -1;
}

TEST(OpenLimitTest, OrdersBeyondTheLimitAreCountedNotKept) {
  RunInfo info;
  info.session = "open_limit_test";
  info.tsc_hz = 1e9;
  info.calibration_source = "test";
  AnalyzerSettings settings;
  settings.stitch.pipeline = {"a", "b"};
  settings.stitch.timeout_ticks = 1'000'000;  // 1 ms
  settings.stitch.max_open_orders = 100;
  Analyzer a(settings, info.time_base(), nullptr);
  std::string chunks;
  ChunkEncoder::RunInfo(info.ToJson(), &chunks);
  testing::AnnounceProcess("open_limit_test", 1, 4300, {"a", "b"}, &chunks);
  // 150 orders open at once (stage a only), then each gets stage b.
  std::vector<abi::Record> records;
  for (uint64_t id = 1; id <= 150; ++id) records.push_back(Stamp(0, id, 1000 + id));
  for (uint64_t id = 1; id <= 150; ++id) records.push_back(Stamp(1, id, 5000 + id));
  ChunkEncoder::Records(1, 0, 1, 0, records, &chunks);
  ASSERT_TRUE(DispatchAll(chunks, &a).ok());
  // Orders 101..150: their a (50) and b (50) records were over the limit.
  EXPECT_EQ(CounterOf(a, "records_over_open_limit"), 100);
  // The 100 kept orders finish; the limit frees up, and new orders are kept.
  for (uint64_t tsc = 10'000; tsc <= 3'000'000; tsc += 10'000) a.OnClock(tsc);
  std::string more;
  const std::vector<abi::Record> next = {Stamp(0, 500, 3'100'000), Stamp(1, 500, 3'100'500)};
  ChunkEncoder::Records(1, 0, 1, 300, next, &more);
  ASSERT_TRUE(DispatchAll(more, &a).ok());
  a.Finish();
  EXPECT_EQ(CounterOf(a, "orders_complete"), 101);
  EXPECT_EQ(CounterOf(a, "records_over_open_limit"), 100);
}

}  // namespace
}  // namespace ticktrace::collect
