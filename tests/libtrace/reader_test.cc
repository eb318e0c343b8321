// The reader treats every byte of a segment as hostile: each kind of damage
// gives a Status, never a crash or an out-of-bounds read (ASan checks the latter).

#include <unistd.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>
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

class ReaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::testing::AddGlobalTestEnvironment(new testing::RemoveSegmentAtExit);
    Options options;
    options.session = testing::UniqueSession("reader");
    options.ring_records = 16;
    options.rings = 2;
    ASSERT_TRUE(Init(options).ok());
    static const Tag tag("reader");
    stamp(tag, 1);
    stamp(tag, 2);
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
  EXPECT_EQ((*r)->info().ring_capacity, 16u);
  std::vector<abi::Record> out;
  absl::StatusOr<uint64_t> end = (*r)->Peek(0, 100, &out);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(out.size(), 2u);
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

}  // namespace
}  // namespace ticktrace
