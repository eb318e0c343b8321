// The measure macros compile (both spellings) and each writes exactly the
// record it promises into this thread's ring, read back with SegmentReader.

#define TICKTRACE_SHORT_MACROS
#include "ticktrace/measure.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/timer.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

class MeasureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options options =
        ticktrace::testing::SegmentOptions(ticktrace::testing::UniqueSession("measure"), 1024, 4);
    // Once per process (also under --gtest_repeat); removed at exit.
    ASSERT_TRUE(ticktrace::testing::InitOnce(options).ok());
  }

  // Every record this thread published since the last call (none before the
  // thread's first trace call, which claims its slot).
  std::vector<abi::Record> Drain() {
    std::vector<abi::Record> out;
    absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
        SegmentReader::Open(CurrentSegmentName());
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return out;
    const int slot = ticktrace::testing::FindSlotByTid(
        **reader, static_cast<uint32_t>(syscall(SYS_gettid)));
    if (slot < 0) return out;
    ticktrace::testing::DrainSlot(**reader, static_cast<uint32_t>(slot), &out);
    return out;
  }
};

volatile uint64_t g_sink;

TEST_F(MeasureTest, EndMeasureRecordsTheInterval) {
  static const Tag kDecode{"decode"};
  Drain();
  TICKTRACE_START_MEASURE(decode_begin);
  for (int i = 0; i < 100; ++i) g_sink = g_sink + i;
  TICKTRACE_END_MEASURE(decode_begin, kDecode);
  const uint64_t after = ReadTsc();

  const std::vector<abi::Record> records = Drain();
  ASSERT_EQ(records.size(), 1u);
  const abi::Record& r = records[0];
  EXPECT_EQ(r.kind, abi::kMeasure);
  EXPECT_EQ(r.tag_id, kDecode.id());
  EXPECT_EQ(r.tsc, decode_begin);
  EXPECT_EQ(r.order_id, 0u);
  EXPECT_EQ(r.aux, abi::kAuxUnknown);
  EXPECT_LE(r.payload.span.duration_ticks, after - decode_begin);
}

TEST_F(MeasureTest, TttMeasureStampsTheOrder) {
  static const Tag kOrderOut{"order_out"};
  Drain();
  const uint64_t before = ReadTsc();
  TICKTRACE_TTT_MEASURE(kOrderOut, 42u);
  const uint64_t after = ReadTsc();

  const std::vector<abi::Record> records = Drain();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, abi::kStamp);
  EXPECT_EQ(records[0].tag_id, kOrderOut.id());
  EXPECT_EQ(records[0].order_id, 42u);
  EXPECT_GE(records[0].tsc, before);
  EXPECT_LE(records[0].tsc, after);
}

TEST_F(MeasureTest, ShortNamesAreTheSameMacros) {
  static const Tag kShort{"short"};
  Drain();
  START_MEASURE(b);
  END_MEASURE(b, kShort);
  TTT_MEASURE(kShort, 7u);
  // As statements they fit an unbraced if/else.
  if (g_sink == 12345678)
    END_MEASURE(b, kShort);
  else
    TTT_MEASURE(kShort, 8u);

  const std::vector<abi::Record> records = Drain();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].kind, abi::kMeasure);
  EXPECT_EQ(records[0].tsc, b);
  EXPECT_EQ(records[1].kind, abi::kStamp);
  EXPECT_EQ(records[1].order_id, 7u);
  EXPECT_EQ(records[2].order_id, 8u);
  for (const abi::Record& r : records) EXPECT_EQ(r.tag_id, kShort.id());

  absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<std::vector<std::string>> tags = (*reader)->Tags();
  ASSERT_TRUE(tags.ok()) << tags.status();
  ASSERT_LT(kShort.id(), tags->size());
  EXPECT_EQ((*tags)[kShort.id()], "short");
}

TEST_F(MeasureTest, IntervalTimerEdgesCanBeRecorded) {
  // A timer's edges are TSC values, so a phase can also go to the ring.
  static const Tag kPhase{"phase"};
  Drain();
  IntervalTimer<2> t;
  t.start(0);
  t.switch_to(0, 1);
  record_interval(kPhase, t.last_start_tsc(0), t.last_stop_tsc(0));
  const std::vector<abi::Record> records = Drain();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].tsc, t.last_start_tsc(0));
  EXPECT_EQ(records[0].payload.span.duration_ticks, t.ticks(0));
}

// The duration rule of abi.h for spans and intervals: up to 2^32-1 ticks it
// is exact; from 2^32 ticks on it saturates at 0xffffffff with
// kRecordSpanSaturated (a lower bound); an end below the begin (two cores)
// writes begin - end (how far backwards) with kRecordSpanBackwards. Checked at the edges through
// record_interval, which takes both TSC values from the caller.
TEST_F(MeasureTest, LongAndBackwardsIntervalsAreFlagged) {
  static const Tag kLong{"long_interval"};
  Drain();
  constexpr uint64_t kBegin = 1'000'000;
  constexpr uint64_t k2to32 = uint64_t{1} << 32;
  record_interval(kLong, kBegin, kBegin + k2to32 - 1, 1);  // longest exact duration
  record_interval(kLong, kBegin, kBegin + k2to32, 2);      // first saturated one
  record_interval(kLong, kBegin, kBegin + 5 * k2to32, 3);  // far beyond
  record_interval(kLong, kBegin, kBegin - 1, 4);           // end one tick before the begin
  record_interval(kLong, kBegin, kBegin, 5);               // zero length: not backwards

  const std::vector<abi::Record> records = Drain();
  ASSERT_EQ(records.size(), 5u);
  for (const abi::Record& r : records) {
    EXPECT_EQ(r.kind, abi::kMeasure);
    EXPECT_EQ(r.tsc, kBegin);
  }
  EXPECT_EQ(records[0].payload.span.duration_ticks, 0xffffffffu);
  EXPECT_EQ(records[0].flags, 0);
  EXPECT_EQ(records[1].payload.span.duration_ticks, 0xffffffffu);
  EXPECT_EQ(records[1].flags, abi::kRecordSpanSaturated);
  EXPECT_EQ(records[2].payload.span.duration_ticks, 0xffffffffu);
  EXPECT_EQ(records[2].flags, abi::kRecordSpanSaturated);
  EXPECT_EQ(records[3].payload.span.duration_ticks, 1u);  // one tick backwards
  EXPECT_EQ(records[3].flags, abi::kRecordSpanBackwards);
  EXPECT_EQ(records[4].payload.span.duration_ticks, 0u);
  EXPECT_EQ(records[4].flags, 0);
}

}  // namespace
}  // namespace ticktrace
