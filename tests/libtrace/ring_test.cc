// The per-thread ring: wrap-around, exact drop counting, and a producer thread
// racing the consumer with sequence numbers.

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

constexpr uint32_t kRingRecords = 1024;

class RingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options options = testing::SegmentOptions(testing::UniqueSession("ring"), kRingRecords, 8);
    ASSERT_TRUE(testing::InitOnce(options).ok());
  }
  static std::unique_ptr<SegmentReader> OpenReader() {
    absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
        SegmentReader::Open(CurrentSegmentName());
    EXPECT_TRUE(reader.ok()) << reader.status();
    return reader.ok() ? *std::move(reader) : nullptr;
  }
};

// Each test's producer is a new thread. It may claim a slot that an earlier
// test's thread used (a drained, retired slot is reclaimed), and a slot's
// indices and drop counter continue across owners: every expectation below is
// relative to the slot's state when this test's thread claimed it.
TEST_F(RingTest, SingleThreadWrapsAroundAndCountsDropsExactly) {
  static const Tag tag("ring_single");
  std::unique_ptr<SegmentReader> reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  std::vector<abi::Record> drained;
  uint32_t slot = 0;
  bool found = false;
  uint64_t first_index = 0;     // ring index of record 0
  uint64_t dropped_before = 0;  // earlier owners' drops
  std::thread producer([&] {
    // Three rounds of 400 records wrap a 1024-record ring; the consumer drains
    // between rounds, so nothing drops.
    stamp(tag, 0);
    const int s = testing::FindSlotByTid(*reader, static_cast<uint32_t>(gettid()));
    if (s < 0) return;
    found = true;
    slot = static_cast<uint32_t>(s);
    // Only this thread writes the slot now: its write index is exactly one
    // past record 0.
    first_index = reader->Slot(slot).write_index - 1;
    dropped_before = reader->Slot(slot).dropped;
    for (uint64_t seq = 1; seq < 400; ++seq) stamp(tag, seq);
    testing::DrainSlot(*reader, slot, &drained);
    for (uint64_t seq = 400; seq < 800; ++seq) stamp(tag, seq);
    testing::DrainSlot(*reader, slot, &drained);
    for (uint64_t seq = 800; seq < 1200; ++seq) stamp(tag, seq);
    testing::DrainSlot(*reader, slot, &drained);
    // Now 1100 records into an empty ring of 1024: 1024 kept, 76 dropped.
    for (uint64_t seq = 1200; seq < 2300; ++seq) stamp_rdtscp(tag, seq);
  });
  producer.join();
  ASSERT_TRUE(found) << "the producer thread found no slot of its own";
  EXPECT_EQ(reader->Slot(slot).dropped - dropped_before, 76u);
  testing::DrainSlot(*reader, slot, &drained);
  ASSERT_EQ(drained.size(), 2224u);
  for (uint64_t i = 0; i < drained.size(); ++i) {
    EXPECT_EQ(drained[i].order_id, i);
    EXPECT_EQ(drained[i].kind, abi::kStamp);
    EXPECT_EQ(drained[i].tag_id, tag.id());
    if (i < 1200) {
      // stamp(): the core from rseq, or unknown (no rseq, or moved mid-read).
      if (drained[i].aux != abi::kAuxUnknown) {
        EXPECT_LT(abi::AuxCpu(drained[i].aux), uint32_t(sysconf(_SC_NPROCESSORS_CONF)));
      }
    } else {
      EXPECT_NE(drained[i].aux, abi::kAuxUnknown);
    }
  }
  const SlotView view = reader->Slot(slot);
  EXPECT_EQ(view.write_index, first_index + 2224);
  EXPECT_EQ(view.read_index, first_index + 2224);
  // The exited thread's slot is retired, drained, and can go back to free.
  EXPECT_EQ(view.state, abi::kSlotRetired);
  EXPECT_TRUE(reader->FreeIfDrained(slot));
}

TEST_F(RingTest, ProducerAndConsumerThreadsSeeEverySequenceOnceInOrder) {
  static const Tag tag("ring_race");
  constexpr uint64_t kAttempts = 2'000'000;
  std::unique_ptr<SegmentReader> reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  std::atomic<int> slot{-1};
  std::atomic<bool> looked{false};  // the producer has looked its slot up (slot may be -1)
  std::atomic<bool> done{false};
  // `dropped` counts over the slot's lifetime: an earlier owner's drops stay
  // in it. The producer reads the baseline itself, before it can drop any.
  uint64_t dropped_before = 0;
  std::thread producer([&] {
    stamp(tag, 0);
    const int s = testing::FindSlotByTid(*reader, static_cast<uint32_t>(gettid()));
    if (s >= 0) dropped_before = reader->Slot(static_cast<uint32_t>(s)).dropped;
    slot.store(s);
    looked.store(true);
    if (s < 0) return;
    for (uint64_t seq = 1; seq < kAttempts; ++seq) stamp(tag, seq);
    done.store(true);
  });
  while (!looked.load()) std::this_thread::yield();
  if (slot.load() < 0) producer.join();
  ASSERT_GE(slot.load(), 0) << "the producer thread found no slot of its own";
  const uint32_t s = static_cast<uint32_t>(slot.load());
  uint64_t received = 0;
  uint64_t last_seq = 0;
  bool first = true;
  bool in_order = true;
  std::vector<abi::Record> batch;
  for (;;) {
    const bool finished = done.load();
    batch.clear();
    absl::StatusOr<uint64_t> end = reader->Peek(s, 1024, &batch);
    if (!end.ok()) {
      ADD_FAILURE() << end.status();
      break;  // and still join the producer, which never waits for us
    }
    for (const abi::Record& r : batch) {
      if (!first && r.order_id <= last_seq) in_order = false;
      first = false;
      last_seq = r.order_id;
    }
    received += batch.size();
    reader->Commit(s, *end);
    if (finished && batch.empty()) break;
  }
  producer.join();
  EXPECT_TRUE(in_order);
  const SlotView view = reader->Slot(s);
  const uint64_t dropped = view.dropped - dropped_before;
  EXPECT_EQ(received + dropped, kAttempts) << "received " << received << " dropped " << dropped;
  EXPECT_GT(received, 0u);
}

TEST_F(RingTest, SpanKeepsBothCoresAndDuration) {
  static const Tag tag("ring_span");
  std::unique_ptr<SegmentReader> reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  std::vector<abi::Record> drained;
  std::thread producer([&] {
    {
      Span span(tag, 7);
      volatile uint64_t sink = 0;
      for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
    }
    Span ended_early(tag, 8);
    ended_early.end();
    ended_early.end();  // a second end() writes nothing
    link(9, 7);
    const int s = testing::FindSlotByTid(*reader, static_cast<uint32_t>(gettid()));
    ASSERT_GE(s, 0);
    testing::DrainSlot(*reader, static_cast<uint32_t>(s), &drained);
  });
  producer.join();
  ASSERT_EQ(drained.size(), 3u);
  EXPECT_EQ(drained[0].kind, abi::kSpan);
  EXPECT_EQ(drained[0].order_id, 7u);
  EXPECT_NE(drained[0].aux, abi::kAuxUnknown);
  EXPECT_NE(drained[0].payload.span.end_aux, abi::kAuxUnknown);
  EXPECT_GT(drained[0].payload.span.duration_ticks, 0u);
  EXPECT_EQ(drained[1].order_id, 8u);
  EXPECT_EQ(drained[2].kind, abi::kLink);
  EXPECT_EQ(drained[2].order_id, 9u);
  EXPECT_EQ(drained[2].payload.parent_order_id, 7u);
}

}  // namespace
}  // namespace ticktrace
