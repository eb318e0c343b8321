// The chunk codec treats every byte as untrusted: random corruption never
// crashes it, never dispatches a chunk whose checksum fails, and dispatches
// exactly the valid prefix.

#include "collector/stream/stream.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ticktrace::collect {
namespace {

class CountingVisitor : public ChunkVisitor {
 public:
  void OnRunInfo(std::string_view) override { ++chunks; }
  void OnProcess(const ProcessChunk& c) override { ++chunks; last_process = c; }
  void OnTags(const TagsChunk& c) override { ++chunks; tags += c.tags.size(); }
  void OnThread(const ThreadChunk&) override { ++chunks; }
  void OnRecords(const RecordsChunk& c) override {
    ++chunks;
    for (size_t i = 0; i < c.count; ++i) sum += c.RecordAt(i).tsc;
    records += c.count;
  }
  void OnSlotDropped(const SlotDroppedChunk&) override { ++chunks; }
  void OnProcessCounters(const ProcessCountersChunk&) override { ++chunks; }
  void OnProcessExited(const ProcessExitedChunk&) override { ++chunks; }
  void OnClock(uint64_t) override { ++chunks; }
  int chunks = 0;
  size_t tags = 0, records = 0;
  uint64_t sum = 0;
  ProcessChunk last_process;
};

// A stream of known chunks. `ends` gets the byte offset where each chunk ends
// and `tsc_sums` the sum of the TSCs of that chunk's records (0 for a chunk
// without records), so a test can say by hand what a prefix holds.
std::string Sample(std::vector<size_t>* ends = nullptr, std::vector<uint64_t>* tsc_sums = nullptr,
                   std::vector<size_t>* record_counts = nullptr) {
  std::string out;
  auto mark = [&](uint64_t tsc_sum, size_t records) {
    if (ends != nullptr) ends->push_back(out.size());
    if (tsc_sums != nullptr) tsc_sums->push_back(tsc_sum);
    if (record_counts != nullptr) record_counts->push_back(records);
  };
  ChunkEncoder::RunInfo("{\"tsc_hz\": 1e9}", &out);
  mark(0, 0);
  ProcessChunk p;
  p.process_id = 3;
  p.pid = 77;
  p.segment = "ticktrace.s.77";
  p.name = "proc";
  ChunkEncoder::Process(p, &out);
  mark(0, 0);
  TagsChunk t;
  t.process_id = 3;
  t.tags = {{0, "a"}, {1, "bb"}};
  ChunkEncoder::Tags(t, &out);
  mark(0, 0);
  std::vector<abi::Record> r(5);
  for (int i = 0; i < 5; ++i) r[i].tsc = 100 + i;
  ChunkEncoder::Records(3, 0, 1, 10, r, &out);
  mark(100 + 101 + 102 + 103 + 104, 5);
  ChunkEncoder::Clock(999, &out);
  mark(0, 0);
  // A second records chunk whose TSCs are powers of two: any subset of the
  // chunks gives a sum that names the subset.
  std::vector<abi::Record> r2(3);
  r2[0].tsc = uint64_t{1} << 20;
  r2[1].tsc = uint64_t{1} << 21;
  r2[2].tsc = uint64_t{1} << 22;
  ChunkEncoder::Records(3, 0, 1, 15, r2, &out);
  mark((uint64_t{1} << 20) + (uint64_t{1} << 21) + (uint64_t{1} << 22), 3);
  ChunkEncoder::Clock(1999, &out);
  mark(0, 0);
  return out;
}

TEST(StreamTest, RoundTrips) {
  CountingVisitor v;
  ASSERT_TRUE(DispatchAll(Sample(), &v).ok());
  EXPECT_EQ(v.chunks, 7);
  EXPECT_EQ(v.tags, 2u);
  EXPECT_EQ(v.records, 8u);
  EXPECT_EQ(v.sum, 510u + (1u << 20) + (1u << 21) + (1u << 22));
  EXPECT_EQ(v.last_process.segment, "ticktrace.s.77");
}

// Random byte flips and cuts: exactly the chunks wholly before the first
// damaged byte are dispatched (DispatchAll stops at the first bad chunk), the
// damaged chunk and everything after it never are. What was dispatched is
// compared with the valid prefix's records, computed from the layout above.
TEST(StreamTest, RandomCorruptionDispatchesExactlyTheValidPrefix) {
  std::vector<size_t> ends;
  std::vector<uint64_t> tsc_sums;
  std::vector<size_t> record_counts;
  const std::string good = Sample(&ends, &tsc_sums, &record_counts);
  ASSERT_EQ(ends.back(), good.size());
  std::mt19937 rng(1);
  int rejected = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string bad = good;
    size_t first_bad = good.size();  // the first byte that differs from `good`
    const int flips = 1 + rng() % 4;
    for (int i = 0; i < flips; ++i) {
      const size_t at = rng() % bad.size();
      bad[at] ^= static_cast<char>(1 + rng() % 255);  // never 0: the byte changes
      first_bad = std::min(first_bad, at);
    }
    if (rng() % 3 == 0) bad.resize(rng() % bad.size());
    first_bad = std::min(first_bad, bad.size());
    // The valid prefix: chunks that end at or before the first damaged byte.
    size_t intact = 0;
    uint64_t expected_sum = 0;
    size_t expected_records = 0;
    while (intact < ends.size() && ends[intact] <= first_bad) {
      expected_sum += tsc_sums[intact];
      expected_records += record_counts[intact];
      ++intact;
    }
    // Clean only when nothing was flipped before the cut and the cut falls
    // on a chunk boundary.
    const bool clean = first_bad == bad.size() &&
                       (bad.size() == 0 ||
                        std::find(ends.begin(), ends.end(), bad.size()) != ends.end());
    CountingVisitor v;
    const absl::Status status = DispatchAll(bad, &v);
    if (!status.ok()) ++rejected;
    EXPECT_EQ(status.ok(), clean) << "round " << round << ": " << status;
    EXPECT_EQ(v.chunks, static_cast<int>(intact)) << "round " << round;
    EXPECT_EQ(v.records, expected_records) << "round " << round;
    EXPECT_EQ(v.sum, expected_sum) << "round " << round;
  }
  EXPECT_GT(rejected, 4000);
}

// One bad checksum in the middle: the chunks before it are dispatched, its
// records and everything after it are not.
TEST(StreamTest, ABadChecksumStopsBeforeTheChunk) {
  std::vector<size_t> ends;
  std::string bytes = Sample(&ends);
  // The last byte of the second records chunk (chunk 5) is one of its
  // records' bytes: flip it, so that only its checksum can catch it.
  bytes[ends[5] - 1] ^= 0x40;
  CountingVisitor v;
  const absl::Status status = DispatchAll(bytes, &v);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_NE(status.message().find("checksum"), std::string::npos) << status;
  EXPECT_EQ(v.chunks, 5);
  EXPECT_EQ(v.records, 5u);
  EXPECT_EQ(v.sum, 510u);  // 100 + 101 + 102 + 103 + 104: the first chunk only
}

TEST(StreamTest, RejectsImpossibleHeaders) {
  std::string c;
  ChunkEncoder::Clock(1, &c);
  uint32_t huge = kMaxChunkPayload + 1;
  std::memcpy(c.data() + 4, &huge, 4);
  EXPECT_EQ(ParseChunkFrame(reinterpret_cast<const uint8_t*>(c.data()), c.size()).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseChunkFrame(reinterpret_cast<const uint8_t*>(c.data()), 5).status().code(),
            absl::StatusCode::kOutOfRange);
}

// A records chunk whose index range wraps 2^64 is malformed: DispatchAll
// (a caller that wants all or nothing) stops at it; DispatchEach, what the
// live analysis uses, skips that one chunk and counts it, as the journal's
// and the archive's readers do, so a live run and a replay of its bytes
// analyse the same chunks.
TEST(StreamTest, DispatchEachSkipsOneMalformedChunkAndGoesOn) {
  std::vector<size_t> ends;
  std::string bytes = Sample(&ends);
  // After the first records chunk (chunk 3): 4 records from 2^64 - 2.
  std::string bad;
  std::vector<abi::Record> r(4);
  ChunkEncoder::Records(3, 0, 1, ~uint64_t{0} - 1, r, &bad);
  bytes.insert(ends[3], bad);
  {
    CountingVisitor v;
    const absl::Status status = DispatchAll(bytes, &v);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("index overflow"), std::string::npos) << status;
    EXPECT_EQ(v.chunks, 4);  // run info, process, tags, the first records
  }
  CountingVisitor v;
  uint64_t malformed = 0;
  EXPECT_TRUE(DispatchEach(bytes, &v, &malformed).ok());
  EXPECT_EQ(malformed, 1u);
  // By hand: the seven chunks of Sample(), both records chunks (5 + 3 records).
  EXPECT_EQ(v.chunks, 7);
  EXPECT_EQ(v.records, 8u);
  EXPECT_EQ(v.sum, 510u + (uint64_t{1} << 20) + (uint64_t{1} << 21) + (uint64_t{1} << 22));
}

}  // namespace
}  // namespace ticktrace::collect
