// docs/reliability.md#the-table, "too many threads / tags": waves of threads that all trace at
// once and exit (so slots are retired, drained and reused), more threads per
// wave than the segment has rings, and more tags than its tag table holds.
// Everything is a counted no-op, reported in the store; the producer neither
// crashes nor deadlocks. Exact accounting:
//   attempted = drained + dropped + slotless_dropped
//   threads rows = threads started - threads_without_slot
//   slotless_dropped = threads_without_slot * records per thread
//   tags_rejected = tags constructed - tag capacity

#include <cstdio>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using ChurnTest = RelTestOf<"churn">;

TEST_F(ChurnTest, ThreadChurnSlotExhaustionAndFullTagTableAreCounted) {
  constexpr int kRings = 4;
  constexpr int kThreadsPerWave = 7;
  constexpr uint64_t kRecords = 500;
  const int waves = 12 * Scale();
  constexpr int kExtraTags = 1100;  // the tag table holds 1024 (libtrace's capacity)
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "200"});
  const pid_t p = StartProducer({"--mode", "churn", "--rings", std::to_string(kRings), "--waves",
                                 std::to_string(waves), "--threads",
                                 std::to_string(kThreadsPerWave), "--records",
                                 std::to_string(kRecords), "--gap-ms", "30", "--extra-tags",
                                 std::to_string(kExtraTags)},
                                "producer.log");
  std::unique_ptr<SegmentReader> seg = OpenSegment(p);
  ASSERT_NE(seg, nullptr);
  const uint32_t tag_capacity = seg->info().tag_capacity;
  seg.reset();
  ASSERT_EQ(WaitExit(p, 120s), 0) << "producer crashed or deadlocked\n"
                                  << ReadFile(dir_.File("producer.log"));
  Forget(p);
  ExpectSegmentsRemoved();
  StopCollector(c);

  const auto out = ParseProducerLog(ReadFile(dir_.File("producer.log")));
  const int64_t attempted = std::stoll(out.at("attempted"));
  const int64_t threads = std::stoll(out.at("threads"));
  const int64_t tags = std::stoll(out.at("tags_constructed"));
  EXPECT_EQ(std::stoll(out.at("rejected_tag_id")), abi::kTagInvalid);
  ASSERT_EQ(attempted, int64_t(waves) * kThreadsPerWave * int64_t(kRecords));

  StoreQuery q(db());
  const int64_t without_slot = Counter(q, "threads_without_slot");
  const int64_t slotless = Counter(q, "slotless_dropped");
  const int64_t drained = Counter(q, "drained");
  const int64_t dropped = Counter(q, "dropped");
  EXPECT_EQ(Counter(q, "tags_rejected"), tags - tag_capacity);
  EXPECT_GE(without_slot, int64_t(waves) * (kThreadsPerWave - kRings));
  EXPECT_EQ(slotless, without_slot * int64_t(kRecords));
  EXPECT_EQ(drained + dropped + slotless, attempted) << "records unaccounted for";
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM threads"), threads - without_slot);
  EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads"), drained);
  // Each thread with a slot stamped its last record with the rejected tag.
  EXPECT_EQ(Counter(q, "unattributed"), threads - without_slot);
  // Slots were reused: generations beyond the first.
  EXPECT_GT(q.Int("SELECT MAX(generation) FROM threads"), 1);
  EXPECT_LE(q.Int("SELECT COUNT(DISTINCT slot) FROM threads"), kRings);
  // The producer's header counters reach its processes row too.
  EXPECT_EQ(q.Int("SELECT tags_rejected FROM processes"), tags - tag_capacity);
  EXPECT_EQ(q.Int("SELECT threads_without_slot FROM processes"), without_slot);
  EXPECT_EQ(q.Int("SELECT slotless_dropped FROM processes"), slotless);
  absl::PrintF("FIGURE churn: threads %lld in %d waves over %d rings (max generation %lld), "
              "threads_without_slot %lld, tags %lld (rejected %lld), attempted %lld = drained "
              "%lld + dropped %lld + slotless_dropped %lld, unaccounted %lld\n",
              static_cast<long long>(threads), waves, kRings,
              q.Int("SELECT MAX(generation) FROM threads"), static_cast<long long>(without_slot),
              static_cast<long long>(tags), Counter(q, "tags_rejected"),
              static_cast<long long>(attempted), static_cast<long long>(drained),
              static_cast<long long>(dropped), static_cast<long long>(slotless),
              static_cast<long long>(attempted - drained - dropped - slotless));
}

}  // namespace
}  // namespace ticktrace::reliability
