// The ABI seen from a second translation unit: the sizes and offsets the
// layout comment in ticktrace/abi.h promises, checked at compile time and run
// time, and a geometry computation done by hand.

#include <cstddef>

#include "gtest/gtest.h"
#include "ticktrace/abi.h"

namespace ticktrace::abi {
namespace {

static_assert(sizeof(Record) == 32, "two records per cache line");
static_assert(sizeof(SegmentHeader) == 1024);
static_assert(sizeof(SlotControl) == 192);
static_assert(offsetof(SlotControl, write_index) / kCacheLineSize !=
                  offsetof(SlotControl, read_index) / kCacheLineSize,
              "producer and collector indices must not share a cache line");
static_assert(offsetof(SlotControl, state) / kCacheLineSize !=
                  offsetof(SlotControl, write_index) / kCacheLineSize,
              "the claim line is not the producer's hot line");

TEST(AbiTest, GeometryMatchesAHandComputation) {
  // 4 tags: header 1024 + 4 * 64 = 1280 (already line-aligned); each slot
  // 192 + 8 * 32 = 448; three slots.
  EXPECT_EQ(TagTableOffset(), 1024u);
  EXPECT_EQ(SlotsOffset(4), 1280u);
  EXPECT_EQ(SlotStride(8), 448u);
  EXPECT_EQ(SegmentSize(4, 3, 8), 1280u + 3 * 448u);
  // An odd tag count still starts the slots on a cache line.
  EXPECT_EQ(SlotsOffset(1) % kCacheLineSize, 0u);
}

TEST(AbiTest, AuxDecodesCpuAndNode) {
  EXPECT_EQ(AuxCpu((3u << 12) | 17u), 17u);
  EXPECT_EQ(AuxNode((3u << 12) | 17u), 3u);
  EXPECT_EQ(AuxCpu(0xfffu), 0xfffu);
}

TEST(AbiTest, AllZeroMemoryIsAnEmptySlot) {
  alignas(kCacheLineSize) unsigned char bytes[sizeof(SlotControl)] = {};
  const auto* slot = reinterpret_cast<const SlotControl*>(bytes);
  EXPECT_EQ(slot->state.load(), kSlotFree);
  EXPECT_EQ(slot->write_index.load(), 0u);
  EXPECT_EQ(slot->read_index.load(), 0u);
  EXPECT_EQ(slot->generation.load(), 0u);
}

}  // namespace
}  // namespace ticktrace::abi
