// ArchiveReader skips a corrupt chunk instead of stopping at it
// (docs/collector.md#a-corrupt-journal-chunk):
// it resynchronises at the next whole valid chunk, reports the skip (offset,
// bytes, the records lost when a later chunk of the same ring shows the gap)
// and reads on; a torn tail (a chunk cut short, or zeros) is still only cut.
// Each case builds its file chunk by chunk (stream.h's encoder), damages
// known bytes and compares with what the construction says.

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collector/stream/archive.h"
#include "collector/stream/stream.h"
#include "gtest/gtest.h"
#include "tests/collector/archive_builder.h"

namespace ticktrace::collect {
namespace {

using testing::Stamp;

// Counts what reaches the analysis.
class CountingVisitor : public NullChunkVisitor {
 public:
  void OnRecords(const RecordsChunk& c) override {
    records += c.count;
    firsts.push_back(c.first_index);
  }
  void OnClock(uint64_t) override { ++clocks; }
  uint64_t records = 0;
  uint64_t clocks = 0;
  std::vector<uint64_t> firsts;
};

class ArchiveResyncTest : public ::testing::Test {
 protected:
  ArchiveResyncTest() : path_(absl::StrCat(::testing::TempDir(), "resync_", getpid(), ".tt")) {
    ArchiveHeader h;
    bytes_ = EncodeArchiveHeader(h);
  }
  ~ArchiveResyncTest() override { ::unlink(path_.c_str()); }

  // Appends a kRecords chunk of `n` records of ring (1, slot) from `first`;
  // returns its offset.
  size_t AddRecords(uint32_t slot, uint64_t first, size_t n) {
    std::vector<abi::Record> r;
    for (size_t i = 0; i < n; ++i) r.push_back(Stamp(1, first + i, 1000 + first + i));
    const size_t at = bytes_.size();
    ChunkEncoder::Records(1, slot, 0, first, r, &bytes_);
    return at;
  }
  size_t AddClock(uint64_t tsc) {
    const size_t at = bytes_.size();
    ChunkEncoder::Clock(tsc, &bytes_);
    return at;
  }
  static size_t RecordsChunkBytes(size_t n) {
    return kChunkHeaderBytes + kRecordsHeaderBytes + n * sizeof(abi::Record);
  }

  // Writes the bytes and reads them back through ArchiveReader.
  ArchiveReader Read(CountingVisitor* v, size_t buffer = ArchiveReader::kDefaultReadBufferBytes) {
    {
      std::ofstream f(path_, std::ios::binary | std::ios::trunc);
      f.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    }
    absl::StatusOr<ArchiveReader> r = ArchiveReader::Open(path_, buffer);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->ReadAll(v).ok());
    return *std::move(r);
  }

  std::string path_;
  std::string bytes_;
};

TEST_F(ArchiveResyncTest, PayloadFlipLosesOnlyThatChunkAndCountsItsRecords) {
  AddRecords(0, 0, 10);
  const size_t bad = AddRecords(0, 10, 10);
  AddClock(5);
  AddRecords(0, 20, 10);
  bytes_[bad + kChunkHeaderBytes + kRecordsHeaderBytes + 40] ^= 0x01;
  CountingVisitor v;
  ArchiveReader r = Read(&v);
  EXPECT_EQ(v.records, 20u);
  EXPECT_EQ(v.clocks, 1u);
  EXPECT_EQ(r.corrupt_chunks(), 1u);
  EXPECT_EQ(r.corrupt_records_lost(), 10u);
  ASSERT_EQ(r.corrupt_skips().size(), 1u);
  const CorruptSkip& s = r.corrupt_skips()[0];
  EXPECT_EQ(s.offset, bad);
  EXPECT_EQ(s.bytes, RecordsChunkBytes(10));
  EXPECT_FALSE(s.to_end);
  EXPECT_EQ(s.records_lost, 10u);
  EXPECT_EQ(s.rings_with_gaps, 1u);
  EXPECT_NE(s.reason.find("checksum"), std::string::npos) << s.reason;
  EXPECT_FALSE(r.torn_tail());
  EXPECT_EQ(r.valid_bytes(), bytes_.size());
  EXPECT_NE(CorruptSkipLine("journal x", s).find("10 records lost"), std::string::npos)
      << CorruptSkipLine("journal x", s);
}

TEST_F(ArchiveResyncTest, DamagedHeaderIsScannedPast) {
  AddRecords(0, 0, 10);
  const size_t bad = AddRecords(0, 10, 7);
  AddRecords(1, 0, 3);
  AddRecords(0, 17, 5);
  std::memset(bytes_.data() + bad, 0, 4);  // type 0: impossible
  CountingVisitor v;
  ArchiveReader r = Read(&v);
  EXPECT_EQ(v.records, 18u);
  ASSERT_EQ(r.corrupt_skips().size(), 1u);
  EXPECT_EQ(r.corrupt_skips()[0].offset, bad);
  EXPECT_EQ(r.corrupt_skips()[0].bytes, RecordsChunkBytes(7));
  EXPECT_EQ(r.corrupt_skips()[0].records_lost, 7u);  // slot 0's next chunk starts at 17
  EXPECT_EQ(r.corrupt_records_lost(), 7u);
}

TEST_F(ArchiveResyncTest, SizeRunningPastTheEndInTheMiddleIsCorruptNotTorn) {
  AddRecords(0, 0, 4);
  const size_t bad = AddRecords(0, 4, 4);
  AddRecords(0, 8, 4);
  const uint32_t huge = 60u << 20;  // within kMaxChunkPayload, far past the end
  std::memcpy(bytes_.data() + bad + 4, &huge, 4);
  CountingVisitor v;
  ArchiveReader r = Read(&v);
  EXPECT_EQ(v.records, 8u);
  EXPECT_FALSE(r.torn_tail());
  EXPECT_EQ(r.corrupt_chunks(), 1u);
  EXPECT_EQ(r.corrupt_records_lost(), 4u);
}

TEST_F(ArchiveResyncTest, GarbageBetweenChunksIsSkippedWithTheLossUnknown) {
  AddRecords(0, 0, 4);
  const size_t at = bytes_.size();
  std::string garbage(1000, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131 + 7);
  bytes_ += garbage;
  AddRecords(0, 4, 4);  // no gap: nothing of ring 0 was in the garbage
  CountingVisitor v;
  ArchiveReader r = Read(&v);
  EXPECT_EQ(v.records, 8u);
  ASSERT_EQ(r.corrupt_skips().size(), 1u);
  EXPECT_EQ(r.corrupt_skips()[0].offset, at);
  EXPECT_EQ(r.corrupt_skips()[0].bytes, 1000u);
  EXPECT_EQ(r.corrupt_skips()[0].rings_with_gaps, 0u);
  EXPECT_NE(CorruptSkipLine("x", r.corrupt_skips()[0]).find("unknown"), std::string::npos);
}

TEST_F(ArchiveResyncTest, TornTailAndZeroTailAreCutNotCounted) {
  AddRecords(0, 0, 4);
  const size_t last = AddRecords(0, 4, 4);
  // Either tail is cut off where the last chunk begins; the first chunk stands.
  auto expect_cut = [&] {
    CountingVisitor v;
    ArchiveReader r = Read(&v);
    EXPECT_EQ(v.records, 4u);
    EXPECT_TRUE(r.torn_tail());
    EXPECT_EQ(r.corrupt_chunks(), 0u);
    EXPECT_EQ(r.valid_bytes(), last);
  };
  bytes_.resize(bytes_.size() - 10);  // the last chunk cut short
  expect_cut();
  bytes_.resize(last);
  bytes_.append(4096, '\0');  // allocated, never written
  expect_cut();
}

TEST_F(ArchiveResyncTest, CorruptLastChunkIsCountedAndKept) {
  AddRecords(0, 0, 4);
  const size_t bad = AddRecords(0, 4, 4);
  bytes_[bytes_.size() - 1] ^= 0x10;
  CountingVisitor v;
  ArchiveReader r = Read(&v);
  EXPECT_EQ(v.records, 4u);
  EXPECT_FALSE(r.torn_tail());
  ASSERT_EQ(r.corrupt_skips().size(), 1u);
  EXPECT_EQ(r.corrupt_skips()[0].offset, bad);
  EXPECT_TRUE(r.corrupt_skips()[0].to_end);
  EXPECT_EQ(r.valid_bytes(), bytes_.size()) << "a corrupt tail is kept, to be found again";
}

TEST_F(ArchiveResyncTest, LargeChunksThroughASmallBufferAndTwoSkipsOfTwoRings) {
  // 2000-record chunks (64 KB) read through a 4 KiB buffer: the reader grows
  // it for one chunk and scans across refills.
  AddRecords(0, 0, 2000);
  const size_t bad0 = AddRecords(0, 2000, 2000);
  AddRecords(1, 0, 2000);
  const size_t bad1 = AddRecords(1, 2000, 1500);
  AddRecords(0, 4000, 2000);
  AddRecords(1, 3500, 10);
  bytes_[bad0 + 100] ^= 0x80;
  std::memset(bytes_.data() + bad1, 0xff, 8);  // type and size impossible
  CountingVisitor v;
  ArchiveReader r = Read(&v, 4096);
  EXPECT_EQ(v.records, 2000u + 2000 + 2000 + 10);
  ASSERT_EQ(r.corrupt_skips().size(), 2u);
  EXPECT_EQ(r.corrupt_skips()[0].offset, bad0);
  EXPECT_EQ(r.corrupt_skips()[0].records_lost, 2000u);
  EXPECT_EQ(r.corrupt_skips()[1].offset, bad1);
  EXPECT_EQ(r.corrupt_skips()[1].bytes, RecordsChunkBytes(1500));
  EXPECT_EQ(r.corrupt_skips()[1].records_lost, 1500u);
  EXPECT_EQ(r.corrupt_records_lost(), 3500u);
  EXPECT_EQ(r.valid_bytes(), bytes_.size());
}

// The header's format version: this collector writes 2 (its chunks may
// hold kExternal records) and reads 1 and 2; a version it does not know is
// refused in one line that says which it reads.
TEST(ArchiveHeaderTest, WritesVersionTwoReadsOneAndTwoRefusesOthersInOneLine) {
  const std::string header = EncodeArchiveHeader(ArchiveHeader{ArchiveKind::kRaw, 0});
  uint32_t written = 0;
  std::memcpy(&written, header.data() + 8, 4);
  EXPECT_EQ(written, 2u);
  for (uint32_t version : {1u, 2u, 0u, 3u}) {
    std::string h = header;
    std::memcpy(h.data() + 8, &version, 4);
    absl::StatusOr<ArchiveHeader> decoded = DecodeArchiveHeader(h);
    if (version == 1 || version == 2) {
      EXPECT_TRUE(decoded.ok()) << version << ": " << decoded.status();
    } else {
      ASSERT_FALSE(decoded.ok()) << version;
      EXPECT_EQ(decoded.status().message(),
                "archive format version " + std::to_string(version) +
                    " (this collector reads 1 to 2)");
    }
  }
}

}  // namespace
}  // namespace ticktrace::collect
