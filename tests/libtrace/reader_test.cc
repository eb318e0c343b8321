// The reader treats every byte of a segment as hostile: each kind of damage
// gives a Status, never a crash or an out-of-bounds read (ASan checks the latter).

#include <unistd.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <functional>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

namespace bip = boost::interprocess;

constexpr uint32_t kFakePid = 999'999'001;  // above pid_max: no real process has it
constexpr uint32_t kRing = 16;              // records per ring of this process's segment

class ReaderTest : public ::testing::Test {
 protected:
  // This process's segment (once per process, also under --gtest_repeat):
  // the main thread's ring holds exactly two stamps, which the copies below
  // carry. Nothing drains that ring.
  static void SetUpTestSuite() {
    Options options = testing::SegmentOptions(testing::UniqueSession("reader"), kRing, 2);
    ASSERT_TRUE(testing::InitOnce(options).ok());
    static const bool stamped = [] {
      static const Tag tag("reader");
      stamp(tag, 1);
      stamp(tag, 2);
      return true;
    }();
    (void)stamped;
  }
  void TearDown() override { (void)RemoveSegment(FakeName()); }

  static std::string FakeName() {
    return SegmentName(testing::UniqueSession("reader"), kFakePid);
  }

  // A copy of this process's (valid) segment under a fake pid, damaged by
  // `damage`, `size` bytes long (0: full size).
  static void MakeCopy(const std::function<void(uint8_t*)>& damage, uint64_t size = 0) {
    absl::StatusOr<std::unique_ptr<SegmentReader>> self = SegmentReader::Open(CurrentSegmentName());
    ASSERT_TRUE(self.ok()) << self.status();
    SegmentReader* reader = self->get();
    ASSERT_NE(reader, nullptr);
    const uint64_t full = reader->info().segment_size;
    std::vector<uint8_t> bytes(reader->base_for_testing(), reader->base_for_testing() + full);
    const uint32_t fake_pid = kFakePid;
    std::memcpy(bytes.data() + offsetof(abi::SegmentHeader, pid), &fake_pid, sizeof(fake_pid));
    damage(bytes.data());
    bip::shared_memory_object::remove(FakeName().c_str());
    bip::shared_memory_object shm(bip::create_only, FakeName().c_str(), bip::read_write);
    const uint64_t n = size == 0 ? full : size;
    shm.truncate(static_cast<bip::offset_t>(n));
    bip::mapped_region region(shm, bip::read_write);
    std::memcpy(region.get_address(), bytes.data(), std::min(n, full));
  }

  static absl::StatusCode OpenCode() {
    absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(FakeName());
    return r.status().code();
  }
  static abi::SegmentHeader* Header(uint8_t* base) {
    return reinterpret_cast<abi::SegmentHeader*>(base);
  }
  static abi::SlotControl* Slot0(uint8_t* base) {
    return reinterpret_cast<abi::SlotControl*>(base + Header(base)->slots_offset);
  }
};

TEST_F(ReaderTest, AnUndamagedCopyOpens) {
  MakeCopy([](uint8_t*) {});
  absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(FakeName());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->info().pid, kFakePid);
  EXPECT_EQ((*r)->info().ring_capacity, kRing);
  // The main thread's ring, found by its tid (another test's thread may have
  // claimed a slot first when tests run shuffled).
  const int slot = testing::FindSlotByTid(**r, static_cast<uint32_t>(gettid()));
  ASSERT_GE(slot, 0);
  std::vector<abi::Record> out;
  absl::StatusOr<uint64_t> end = (*r)->Peek(static_cast<uint32_t>(slot), 100, &out);
  ASSERT_TRUE(end.ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].order_id, 1u);
  EXPECT_EQ(out[1].order_id, 2u);
  for (const abi::Record& rec : out) EXPECT_TRUE(ValidateRecord(rec, 1).ok());
}

TEST_F(ReaderTest, BadMagicVersionSizesAndGeometryAreRefused) {
  MakeCopy([](uint8_t* b) { Header(b)->magic.store(0x1234); });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Header(b)->magic.store(0); });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kUnavailable);
  MakeCopy([](uint8_t* b) { Header(b)->abi_version = abi::kAbiVersion + 1; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kFailedPrecondition);
  MakeCopy([](uint8_t* b) { Header(b)->record_size = 48; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Header(b)->ring_capacity = 17; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Header(b)->slot_count = 1u << 30; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Header(b)->slots_offset += 64; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Header(b)->slot_count = 3; Header(b)->segment_size += 192 + 16 * 32; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss) << "a header claiming more than the file";
  MakeCopy([](uint8_t* b) { Header(b)->pid = 42; });
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss) << "pid must match the name";
}

TEST_F(ReaderTest, TruncatedSegmentsAreRefused) {
  MakeCopy([](uint8_t*) {}, 100);
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t*) {}, 4096);
  EXPECT_EQ(OpenCode(), absl::StatusCode::kDataLoss);
}

TEST_F(ReaderTest, ImpossibleIndicesMakePeekFail) {
  MakeCopy([](uint8_t* b) { Slot0(b)->write_index.store(1000); });
  absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(FakeName());
  ASSERT_TRUE(r.ok());
  std::vector<abi::Record> out;
  EXPECT_EQ((*r)->Peek(0, 100, &out).status().code(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) { Slot0(b)->read_index.store(5); Slot0(b)->write_index.store(1); });
  r = SegmentReader::Open(FakeName());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Peek(0, 100, &out).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty());
}

TEST_F(ReaderTest, TagTableDamageAndBadRecordsAreReported) {
  MakeCopy([](uint8_t* b) { Header(b)->tag_count.store(1u << 30); });
  absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(FakeName());
  ASSERT_TRUE(r.ok());
  // The count is clamped to the capacity; the unwritten entries have no name.
  EXPECT_EQ((*r)->Tags().status().code(), absl::StatusCode::kDataLoss);
  MakeCopy([](uint8_t* b) {
    reinterpret_cast<abi::TagEntry*>(b + Header(b)->tag_table_offset)[0].name[0] = '\x01';
  });
  r = SegmentReader::Open(FakeName());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Tags().status().code(), absl::StatusCode::kDataLoss);

  abi::Record rec{};
  rec.kind = abi::kStamp;
  rec.tag_id = 5;
  EXPECT_EQ(ValidateRecord(rec, 3).code(), absl::StatusCode::kDataLoss);
  rec.tag_id = abi::kTagInvalid;
  EXPECT_EQ(ValidateRecord(rec, 3).code(), absl::StatusCode::kOutOfRange);
  rec.kind = 77;
  EXPECT_EQ(ValidateRecord(rec, 3).code(), absl::StatusCode::kDataLoss);
  rec.kind = abi::kLink;
  rec.flags = 0x80;
  EXPECT_EQ(ValidateRecord(rec, 3).code(), absl::StatusCode::kDataLoss);
}

TEST_F(ReaderTest, RandomHeaderDamageNeverCrashes) {
  std::mt19937_64 rng(12345);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    MakeCopy([&](uint8_t* b) {
      for (int k = 0; k < 4; ++k) b[rng() % 256] = static_cast<uint8_t>(rng());
      Header(b)->magic.store(abi::kMagic);  // get past the first check most of the time
    });
    absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(FakeName());
    if (!r.ok()) {
      ++refused;
      continue;
    }
    std::vector<abi::Record> out;
    for (uint32_t s = 0; s < (*r)->info().slot_count; ++s) {
      (void)(*r)->Peek(s, 1000, &out);
      (void)(*r)->Slot(s);
    }
    (void)(*r)->Tags();
  }
  EXPECT_GT(refused, 0);
}

// --- Ring indices near 2^64 ---------------------------------------------
//
// Indices grow forever and are compared modulo 2^64 (abi.h): the number of
// published records is write - read, whatever the two values are. These tests
// start a ring a few records below 2^64 and run it past the wrap.

// A one-slot segment built by hand (no producer process), `kCapacity` records
// per ring, opened through OpenMemory().
class CraftedSegment {
 public:
  static constexpr uint32_t kCapacity = 8;

  CraftedSegment() {
    size_ = abi::SegmentSize(/*tag_capacity=*/1, /*slot_count=*/1, kCapacity);
    base_ = static_cast<uint8_t*>(std::aligned_alloc(abi::kCacheLineSize, size_));
    std::memset(base_, 0, size_);
    auto* h = reinterpret_cast<abi::SegmentHeader*>(base_);
    h->abi_version = abi::kAbiVersion;
    h->header_size = sizeof(abi::SegmentHeader);
    h->record_size = sizeof(abi::Record);
    h->ring_capacity = kCapacity;
    h->slot_count = 1;
    h->tag_capacity = 1;
    h->tag_table_offset = abi::TagTableOffset();
    h->slots_offset = abi::SlotsOffset(1);
    h->slot_stride = abi::SlotStride(kCapacity);
    h->segment_size = size_;
    h->pid = kFakePid;
    h->magic.store(abi::kMagic, std::memory_order_release);
  }
  ~CraftedSegment() { std::free(base_); }
  CraftedSegment(const CraftedSegment&) = delete;
  CraftedSegment& operator=(const CraftedSegment&) = delete;

  abi::SlotControl* slot() {
    return reinterpret_cast<abi::SlotControl*>(base_ + abi::SlotsOffset(1));
  }
  absl::StatusOr<std::unique_ptr<SegmentReader>> Open() {
    return SegmentReader::OpenMemory(SegmentName("t_crafted", kFakePid), base_, size_);
  }

  // The producer's side of abi.h's ring protocol, done by hand: writes a
  // stamp carrying `seq` and publishes it, or counts it dropped when full.
  void Publish(uint64_t seq) {
    abi::SlotControl* c = slot();
    const uint64_t w = c->write_index.load(std::memory_order_relaxed);
    if (w - c->read_index.load(std::memory_order_acquire) >= kCapacity) {
      c->dropped.store(c->dropped.load() + 1, std::memory_order_relaxed);
      return;
    }
    auto* records = reinterpret_cast<abi::Record*>(reinterpret_cast<uint8_t*>(c) +
                                                   sizeof(abi::SlotControl));
    abi::Record& r = records[w & (kCapacity - 1)];
    r = abi::Record{};
    r.tsc = 1000 + seq;
    r.order_id = seq;
    r.aux = abi::kAuxUnknown;
    r.kind = abi::kStamp;
    c->write_index.store(w + 1, std::memory_order_release);
  }

 private:
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
};

// Drains slot 0 of `reader` `step` records at a time; returns every index
// Peek() returned, in order.
std::vector<uint64_t> DrainInSteps(SegmentReader& reader, size_t step,
                                   std::vector<abi::Record>* out) {
  std::vector<uint64_t> ends;
  for (int guard = 0; guard < 1000; ++guard) {
    absl::StatusOr<uint64_t> end = reader.Peek(0, step, out);
    if (!end.ok()) {
      ADD_FAILURE() << end.status();
      break;
    }
    if (*end == reader.Slot(0).read_index) break;
    ends.push_back(*end);
    reader.Commit(0, *end);
  }
  return ends;
}

TEST(ReaderWrapTest, ACraftedRingDrainsInOrderAcross2To64) {
  CraftedSegment seg;
  constexpr uint64_t kStart = ~uint64_t{0} - 4;  // 2^64 - 5
  seg.slot()->write_index.store(kStart);
  seg.slot()->read_index.store(kStart);
  absl::StatusOr<std::unique_ptr<SegmentReader>> opened = seg.Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  SegmentReader& reader = **opened;

  // Ten stamps into an empty ring of 8: 0..7 published (indices 2^64-5 ..
  // 2^64+2, so write_index wraps to 3), 8 and 9 dropped.
  for (uint64_t seq = 0; seq < 10; ++seq) seg.Publish(seq);
  EXPECT_EQ(reader.Slot(0).write_index, 3u);
  EXPECT_EQ(reader.Slot(0).dropped, 2u);
  std::vector<abi::Record> out;
  const std::vector<uint64_t> ends = DrainInSteps(reader, 3, &out);
  // 3 + 3 + 2 records; the second step crosses 2^64.
  EXPECT_EQ(ends, (std::vector<uint64_t>{kStart + 3, kStart + 6, kStart + 8}));
  EXPECT_EQ(kStart + 8, 3u);
  ASSERT_EQ(out.size(), 8u);
  for (uint64_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].order_id, i) << i;

  // After the wrap the ring goes on as before: five more, nothing dropped.
  for (uint64_t seq = 10; seq < 15; ++seq) seg.Publish(seq);
  out.clear();
  DrainInSteps(reader, 4, &out);
  ASSERT_EQ(out.size(), 5u);
  for (uint64_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].order_id, 10 + i) << i;
  EXPECT_EQ(reader.Slot(0).read_index, 8u);
  EXPECT_EQ(reader.Slot(0).write_index, 8u);
  EXPECT_EQ(reader.Slot(0).dropped, 2u);
}

TEST(ReaderWrapTest, ImpossibleIndicesAcross2To64AreStillRefused) {
  CraftedSegment seg;
  absl::StatusOr<std::unique_ptr<SegmentReader>> opened = seg.Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  SegmentReader& reader = **opened;
  std::vector<abi::Record> out;
  // Exactly a full ring across the wrap: fine.
  seg.slot()->read_index.store(~uint64_t{0} - 1);  // 2^64 - 2
  seg.slot()->write_index.store(6);                // 2^64 + 6: 8 published
  absl::StatusOr<uint64_t> end = reader.Peek(0, 100, &out);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, 6u);
  EXPECT_EQ(out.size(), 8u);
  // One more than the ring holds, across the wrap.
  out.clear();
  seg.slot()->write_index.store(7);
  EXPECT_EQ(reader.Peek(0, 100, &out).status().code(), absl::StatusCode::kDataLoss);
  // Write behind read across the wrap (read 2, write 2^64 - 3).
  seg.slot()->read_index.store(2);
  seg.slot()->write_index.store(~uint64_t{0} - 2);
  EXPECT_EQ(reader.Peek(0, 100, &out).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty());
}

// The real producer (libtrace's hot path and its slow path) writing into a
// ring of this process's segment whose indices start 20 below 2^64: every
// record that fit is drained once, in order; every one that did not is
// counted in `dropped`; nothing else is lost at the wrap.
TEST_F(ReaderTest, TheProducerRunsPast2To64WithExactDrops) {
  constexpr uint64_t kStart = ~uint64_t{0} - 19;  // 2^64 - 20
  absl::StatusOr<std::unique_ptr<SegmentReader>> self = SegmentReader::Open(CurrentSegmentName());
  ASSERT_TRUE(self.ok()) << self.status();
  SegmentReader& reader = **self;
  // Every slot a new thread could claim (free, or retired and drained)
  // starts at kStart; the owned one is the main thread's.
  std::vector<uint64_t> dropped_before(reader.info().slot_count);
  for (uint32_t s = 0; s < reader.info().slot_count; ++s) {
    auto* c = reinterpret_cast<abi::SlotControl*>(
        reader.base_for_testing() + abi::SlotsOffset(reader.info().tag_capacity) +
        s * abi::SlotStride(reader.info().ring_capacity));
    const SlotView v = reader.Slot(s);
    dropped_before[s] = v.dropped;
    if (v.state == abi::kSlotOwned || v.write_index != v.read_index) continue;
    c->write_index.store(kStart);
    c->read_index.store(kStart);
  }

  static const Tag tag("wrap");
  std::atomic<int> phase{0};  // 1: first batch written; 2: drained; 3: second batch written
  std::atomic<int> slot{-1};
  std::thread producer([&] {
    // 16 fit the empty ring (indices 2^64-20 .. 2^64-5); 4 more are dropped.
    for (uint64_t seq = 0; seq < 20; ++seq) stamp(tag, seq);
    slot.store(testing::FindSlotByTid(reader, static_cast<uint32_t>(gettid())));
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    // The ring is empty again at 2^64-4: 16 fit (up to index 2^64+11), 8 dropped.
    for (uint64_t seq = 20; seq < 44; ++seq) stamp(tag, seq);
    phase.store(3);
  });
  while (phase.load() != 1) std::this_thread::yield();
  const int s = slot.load();
  if (s < 0) {
    phase.store(2);
    producer.join();
    FAIL() << "the producer thread found no slot";
  }
  const auto us = static_cast<uint32_t>(s);
  EXPECT_EQ(reader.Slot(us).write_index, kStart + 16);
  EXPECT_EQ(reader.Slot(us).dropped - dropped_before[us], 4u);
  std::vector<abi::Record> first;
  testing::DrainSlot(reader, us, &first);
  phase.store(2);
  while (phase.load() != 3) std::this_thread::yield();
  producer.join();
  std::vector<abi::Record> second;
  testing::DrainSlot(reader, us, &second);

  ASSERT_EQ(first.size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(first[i].order_id, i) << i;
  ASSERT_EQ(second.size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(second[i].order_id, 20 + i) << i;
  const SlotView v = reader.Slot(us);
  EXPECT_EQ(v.write_index, kStart + 32);  // 12: wrapped
  EXPECT_EQ(v.read_index, kStart + 32);
  EXPECT_EQ(v.dropped - dropped_before[us], 12u);
  // Attempted = consumed + dropped, across the wrap.
  EXPECT_EQ(first.size() + second.size() + (v.dropped - dropped_before[us]), 44u);
  EXPECT_TRUE(reader.FreeIfDrained(us));
}

}  // namespace
}  // namespace ticktrace
