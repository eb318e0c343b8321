// Cores are compared by cpu number (abi.h): a stamp's aux from rseq has the
// cpu only, rdtscp's has node << 12 | cpu; the same cpu read both ways is one
// core. Archives use 1 GHz, so one tick is one ns.

#include <string>

#include "collector/app/collector.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"
#include "tests/collector/replay_util.h"

namespace ticktrace::collect::testing {
namespace {

TEST(CoreCompare, SameCpuWithAndWithoutNodeIsOneCoreOtherCpusCross) {
  ArchiveBuilder b;
  b.Process(1, {"a"}).Process(2, {"b"});
  constexpr uint32_t kRdtscpCpu3Node1 = (1u << 12) | 3;
  constexpr uint32_t kRseqCpu3 = 3, kRseqCpu4 = 4;
  // Orders 1..10: a on cpu 3 via rdtscp (node 1), b on cpu 3 via rseq: same core.
  // Orders 11..30: a on cpu 3 via rseq, b on cpu 4 via rseq: cross-core.
  // Orders 31..35: b's core unknown: not counted either way.
  for (uint64_t id = 1; id <= 35; ++id) {
    const uint64_t t = id * 100'000;
    const uint32_t a_aux = id <= 10 ? kRdtscpCpu3Node1 : kRseqCpu3;
    const uint32_t b_aux = id <= 10 ? kRseqCpu3 : id <= 30 ? kRseqCpu4 : abi::kAuxUnknown;
    b.Records(1, {Stamp(0, id, t, a_aux)});
    b.Records(2, {Stamp(0, id, t + 700, b_aux)});
  }
  b.Clock(10'000'000);

  TempDir dir;
  CollectorOptions o;
  o.store_uri.reset();
  o.pipeline = {"a", "b"};
  const testing::Replayed r = ReplayArchive(b, dir, o);
  const StageSummary* stage = StageOf(r, "a->b");
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->count, 35u);
  EXPECT_EQ(stage->cross_core, 20u);
  EXPECT_EQ(stage->migrated, 0u);
}

}  // namespace
}  // namespace ticktrace::collect::testing
