// Slot life cycle: claim on first use, retire at thread exit, reuse after the
// consumer drained it, and a counted no-op when no slot is free.

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

// The segment lives as long as the process (--gtest_repeat runs this again
// on it): the header counters are compared with their values at the start.
// The test's own threads are the only ones that trace, and each run leaves
// both slots retired and drained, so each run starts with both claimable.
TEST(SlotsTest, ExhaustionIsACountedNoOpAndSlotsAreReusedAfterDraining) {
  Options options = testing::SegmentOptions(testing::UniqueSession("slots"), 64, 2);
  ASSERT_TRUE(testing::InitOnce(options).ok());
  static const Tag tag("slots");
  absl::StatusOr<std::unique_ptr<SegmentReader>> opened = SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(opened.ok()) << opened.status();
  SegmentReader& reader = **opened;
  const SegmentCounters before = reader.counters();

  // Two threads hold both slots until released.
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  auto holder = [&](uint64_t id) {
    stamp(tag, id);
    ready.fetch_add(1);
    while (!release.load()) std::this_thread::yield();
  };
  std::thread a(holder, 1), b(holder, 2);
  while (ready.load() < 2) std::this_thread::yield();
  EXPECT_EQ(reader.Slot(0).state, abi::kSlotOwned);
  EXPECT_EQ(reader.Slot(1).state, abi::kSlotOwned);

  // A third thread finds no slot: its ten records are counted, not written.
  std::thread c([&] {
    for (uint64_t i = 0; i < 10; ++i) stamp(tag, 100 + i);
  });
  c.join();
  EXPECT_EQ(reader.counters().threads_without_slot, before.threads_without_slot + 1);
  EXPECT_EQ(reader.counters().slotless_dropped, before.slotless_dropped + 10);

  release.store(true);
  a.join();
  b.join();
  // Exited owners retire their slots; records are still there to drain.
  EXPECT_EQ(reader.Slot(0).state, abi::kSlotRetired);
  EXPECT_EQ(reader.Slot(1).state, abi::kSlotRetired);
  EXPECT_FALSE(reader.FreeIfDrained(0)) << "a slot with unread records must not be freed";

  // A new thread cannot take an undrained retired slot.
  std::thread d([&] { stamp(tag, 200); });
  d.join();
  EXPECT_EQ(reader.counters().threads_without_slot, before.threads_without_slot + 2);

  // Drain slot 0 and free it; drain slot 1 but leave it retired: both are claimable.
  std::vector<abi::Record> records;
  testing::DrainSlot(reader, 0, &records);
  testing::DrainSlot(reader, 1, &records);
  EXPECT_EQ(records.size(), 2u);
  EXPECT_TRUE(reader.FreeIfDrained(0));
  EXPECT_EQ(reader.Slot(0).state, abi::kSlotFree);
  const uint64_t generation0 = reader.Slot(0).generation;
  const uint64_t generation1 = reader.Slot(1).generation;

  std::atomic<uint32_t> tid_e{0}, tid_f{0};
  std::atomic<int> claimed{0};
  std::atomic<bool> release2{false};
  auto claimer = [&](std::atomic<uint32_t>* tid, uint64_t id) {
    stamp(tag, id);
    tid->store(static_cast<uint32_t>(gettid()));
    claimed.fetch_add(1);
    while (!release2.load()) std::this_thread::yield();
  };
  std::thread e(claimer, &tid_e, 300), f(claimer, &tid_f, 301);
  while (claimed.load() < 2) std::this_thread::yield();
  EXPECT_EQ(reader.Slot(0).generation, generation0 + 1);
  EXPECT_EQ(reader.Slot(1).generation, generation1 + 1);
  EXPECT_EQ(reader.counters().threads_without_slot, before.threads_without_slot + 2);
  release2.store(true);
  e.join();
  f.join();
  records.clear();
  testing::DrainSlot(reader, 0, &records);
  testing::DrainSlot(reader, 1, &records);
  ASSERT_EQ(records.size(), 2u);
}

}  // namespace
}  // namespace ticktrace
