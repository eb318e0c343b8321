// The chunk codec treats every byte as untrusted: random corruption never
// crashes it and never dispatches a chunk whose checksum fails.

#include "collector/stream.h"

#include <random>

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

std::string Sample() {
  std::string out;
  ChunkEncoder::RunInfo("{\"tsc_hz\": 1e9}", &out);
  ProcessChunk p;
  p.process_id = 3;
  p.pid = 77;
  p.segment = "ticktrace.s.77";
  p.name = "proc";
  ChunkEncoder::Process(p, &out);
  TagsChunk t;
  t.process_id = 3;
  t.tags = {{0, "a"}, {1, "bb"}};
  ChunkEncoder::Tags(t, &out);
  std::vector<abi::Record> r(5);
  for (int i = 0; i < 5; ++i) r[i].tsc = 100 + i;
  ChunkEncoder::Records(3, 0, 1, 10, r, &out);
  ChunkEncoder::Clock(999, &out);
  return out;
}

TEST(StreamTest, RoundTrips) {
  CountingVisitor v;
  ASSERT_TRUE(DispatchAll(Sample(), &v).ok());
  EXPECT_EQ(v.chunks, 5);
  EXPECT_EQ(v.tags, 2u);
  EXPECT_EQ(v.records, 5u);
  EXPECT_EQ(v.sum, 510u);
  EXPECT_EQ(v.last_process.segment, "ticktrace.s.77");
}

TEST(StreamTest, RandomCorruptionNeverCrashes) {
  const std::string good = Sample();
  std::mt19937 rng(1);
  int rejected = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string bad = good;
    const int flips = 1 + rng() % 4;
    for (int i = 0; i < flips; ++i) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    if (rng() % 3 == 0) bad.resize(rng() % bad.size());
    CountingVisitor v;
    if (!DispatchAll(bad, &v).ok()) ++rejected;
    EXPECT_LE(v.records, 5u);
  }
  EXPECT_GT(rejected, 4000);
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

}  // namespace
}  // namespace ticktrace::collect
