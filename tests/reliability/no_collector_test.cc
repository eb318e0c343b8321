// docs/reliability.md#the-table, "no collector running" and "ring full": producers trace at full
// speed with no collector; they never block, their rings fill, and from then
// on every record is dropped and counted. Per ring, exactly:
//   attempted (the thread's own count) = published (write_index) + dropped,
// then, once a collector drains the stale segment,
//   attempted = drained + dropped   (store: threads table, counters).

#include <cstdio>
#include <algorithm>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using NoCollectorTest = RelTestOf<"nocoll">;

TEST_F(NoCollectorTest, AttemptedEqualsDrainedPlusDroppedPerRing) {
  constexpr int kProcesses = 2;
  constexpr int kThreads = 3;
  constexpr uint64_t kRing = 4096;
  const uint64_t orders = 100000 * uint64_t(Scale());  // 200k records per thread
  ASSERT_EQ(SegmentCount(session_), 0u);

  struct Ring {
    uint64_t attempted = 0;
    uint64_t published = 0;
    uint64_t dropped = 0;
  };
  std::map<std::pair<pid_t, uint32_t>, Ring> rings;  // (pid, tid)
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    pids.push_back(StartProducer({"--mode", "seq", "--rings", "4", "--ring",
                                  std::to_string(kRing), "--threads", std::to_string(kThreads),
                                  "--orders", std::to_string(orders), "--base",
                                  std::to_string(uint64_t(p + 1) << 40)},
                                 absl::StrCat("producer.", p, ".log")));
  }
  double worst_ns_per_record = 0;
  for (int p = 0; p < kProcesses; ++p) {
    // Full speed with nobody draining: it must finish, not block.
    ASSERT_EQ(WaitExit(pids[p], 120s), 0) << "producer blocked or failed";
    Forget(pids[p]);
    const auto out = ParseProducerLog(ReadFile(dir_.File(absl::StrCat("producer.", p, ".log"))));
    for (int t = 0; t < kThreads; ++t) {
      auto it = out.find(absl::StrCat("thread ", t));
      ASSERT_NE(it, out.end());
      unsigned tid = 0;
      unsigned long long attempted = 0;
      ASSERT_EQ(std::sscanf(it->second.c_str(), "tid %u attempted %llu", &tid, &attempted), 2);
      EXPECT_EQ(attempted, 2 * orders);
      rings[{pids[p], tid}].attempted = attempted;
    }
    const double elapsed_ns = std::stod(out.at("elapsed_ns"));
    worst_ns_per_record = std::max(worst_ns_per_record, elapsed_ns / double(2 * orders));

    // Before any collector: the segment itself says published + dropped = attempted.
    std::unique_ptr<SegmentReader> seg = OpenSegment(pids[p], 1s);
    ASSERT_NE(seg, nullptr);
    for (uint32_t s = 0; s < seg->info().slot_count; ++s) {
      const SlotView v = seg->Slot(s);
      if (v.generation == 0) continue;
      auto it = rings.find({pids[p], v.tid});
      ASSERT_NE(it, rings.end()) << "slot of an unknown thread " << v.tid;
      it->second.published = v.write_index;
      it->second.dropped = v.dropped;
      EXPECT_EQ(v.write_index, kRing) << "a full ring holds exactly its capacity";
      EXPECT_EQ(v.read_index, 0u);
      EXPECT_EQ(v.write_index + v.dropped, it->second.attempted);
    }
  }
  ASSERT_EQ(rings.size(), size_t(kProcesses * kThreads));

  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "200"});
  ExpectSegmentsRemoved();
  StopCollector(c);

  StoreQuery q(db());
  uint64_t attempted = 0, dropped = 0;
  for (const auto& [key, r] : rings) {
    SCOPED_TRACE(absl::StrCat("pid ", key.first, " tid ", key.second));
    const std::string where = absl::StrCat(
        " FROM threads t JOIN processes p USING(run_id, process_id) WHERE p.pid=", key.first,
        " AND t.tid=", key.second);
    EXPECT_EQ(q.Int("SELECT COUNT(*)" + where), 1);
    const int64_t drained = q.Int("SELECT t.drained" + where);
    const int64_t ring_dropped = q.Int("SELECT t.dropped" + where);
    EXPECT_EQ(drained, int64_t(r.published));
    EXPECT_EQ(ring_dropped, int64_t(r.dropped));
    EXPECT_EQ(drained + ring_dropped, int64_t(r.attempted));
    attempted += r.attempted;
    dropped += r.dropped;
  }
  EXPECT_EQ(Counter(q, "drained") + Counter(q, "dropped"), int64_t(attempted));
  EXPECT_EQ(Counter(q, "dropped"), int64_t(dropped));
  EXPECT_EQ(Counter(q, "malformed"), 0);
  absl::PrintF("FIGURE no_collector: processes %d, rings %zu, attempted %llu, drained %lld, "
              "dropped %lld, unaccounted %lld, slowest producer %.1f ns/record at full speed\n",
              kProcesses, rings.size(), static_cast<unsigned long long>(attempted),
              Counter(q, "drained"), Counter(q, "dropped"),
              static_cast<long long>(attempted) - Counter(q, "drained") - Counter(q, "dropped"),
              worst_ns_per_record);
}

}  // namespace
}  // namespace ticktrace::reliability
