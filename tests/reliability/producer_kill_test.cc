// docs/reliability.md#the-table, "producer crashes (kill -9)": producers SIGKILLed at random
// moments while one collector runs. For every trial, every record the
// producer had published before the kill is drained and stored, the process
// is marked exited, and its segment is removed.
//
// "Published" is exact: the test maps the producer's segment before the kill
// and reads each ring's write_index after the producer is dead (the mapping
// outlives the collector's shm_unlink). write_index moves only with a release
// store after a record is in its cell, so it is the number of records
// published, no more, no less. The producer's own progress cells (stored after
// each stamp returns) cross-check it: progress <= published <= progress + 1
// per thread.

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using ProducerKillTest = RelTestOf<"pkill">;

struct RingFigure {
  uint32_t tid = 0;
  uint64_t published = 0;  // write_index at death
  uint64_t dropped = 0;
};

struct Trial {
  pid_t pid = 0;
  int threads = 1;
  int64_t kill_after_ms = 0;
  int64_t killed_utc_ns = 0;  // CLOCK_REALTIME just before the SIGKILL
  std::string progress;
  std::unique_ptr<SegmentReader> segment;
  std::vector<RingFigure> rings;
  uint64_t published = 0;
  uint64_t dropped = 0;
};

uint64_t ReadProgress(const std::string& path, int threads) {
  uint64_t sum = 0;
  std::ifstream in(path, std::ios::binary);
  for (int t = 0; t < threads; ++t) {
    uint64_t v = 0;
    in.read(reinterpret_cast<char*>(&v), sizeof(v));
    sum += v;
  }
  return sum;
}

TEST_F(ProducerKillTest, EveryPublishedRecordOfAKilledProducerIsStored) {
  const int kWaves = 5 * Scale();
  constexpr int kPerWave = 6;
  std::mt19937_64 rng(Seed());
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});

  std::vector<Trial> trials;
  for (int w = 0; w < kWaves; ++w) {
    std::vector<size_t> wave;
    for (int i = 0; i < kPerWave; ++i) {
      const size_t n = trials.size();
      Trial t;
      t.threads = 1 + static_cast<int>(rng() % 2);
      t.kill_after_ms = static_cast<int64_t>(rng() % 400);
      t.progress = dir_.File(absl::StrCat("progress.", n));
      t.pid = StartProducer({"--mode", "seq", "--rings", "4", "--threads",
                             std::to_string(t.threads), "--base",
                             std::to_string(uint64_t{n + 1} << 40), "--pace-every", "2",
                             "--pace-us", "1000", "--progress", t.progress},
                            absl::StrCat("producer.", n, ".log"));
      trials.push_back(std::move(t));
      wave.push_back(n);
    }
    for (size_t n : wave) {
      trials[n].segment = OpenSegment(trials[n].pid);
      ASSERT_NE(trials[n].segment, nullptr) << "producer " << n << " made no segment";
      // The identity the collector's liveness check compares with /proc (a
      // wrong one makes a live producer look dead: drained early, removed).
      absl::StatusOr<uint64_t> start = ReadProcessStartTicks(trials[n].pid);
      ASSERT_TRUE(start.ok()) << start.status();
      EXPECT_EQ(trials[n].segment->info().process_start_ticks, *start) << "trial " << n;
    }
    // Kill them in the order of their random moments.
    std::sort(wave.begin(), wave.end(),
              [&](size_t a, size_t b) { return trials[a].kill_after_ms < trials[b].kill_after_ms; });
    const auto start = std::chrono::steady_clock::now();
    for (size_t n : wave) {
      Trial& t = trials[n];
      std::this_thread::sleep_until(start + std::chrono::milliseconds(t.kill_after_ms));
      timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      t.killed_utc_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
      ASSERT_EQ(kill(t.pid, SIGKILL), 0);
      EXPECT_EQ(WaitExit(t.pid, 10s), 128 + SIGKILL);
      Forget(t.pid);
      for (uint32_t s = 0; s < t.segment->info().slot_count; ++s) {
        const SlotView v = t.segment->Slot(s);
        if (v.generation == 0) continue;  // never claimed
        t.rings.push_back({v.tid, v.write_index, v.dropped});
        t.published += v.write_index;
        t.dropped += v.dropped;
      }
      t.segment.reset();  // unmap
      const uint64_t progress = ReadProgress(t.progress, t.threads);
      EXPECT_LE(progress, t.published) << "trial " << n;
      EXPECT_LE(t.published, progress + static_cast<uint64_t>(t.threads)) << "trial " << n;
    }
  }
  ExpectSegmentsRemoved();
  StopCollector(c);

  StoreQuery q(db());
  ExpectStoreWriterKeptUp(q);
  uint64_t published_total = 0, dropped_total = 0, rings_total = 0;
  for (size_t n = 0; n < trials.size(); ++n) {
    const Trial& t = trials[n];
    SCOPED_TRACE(absl::StrCat("trial ", n, " pid ", t.pid, " killed after ", t.kill_after_ms,
                              " ms, published ", t.published, ", store: ",
                              q.Text(absl::StrCat("SELECT 'start_ticks ' || start_ticks || "
                                                  "' first_seen ' || first_seen_utc_ns || "
                                                  "' exited ' || exited_utc_ns FROM processes "
                                                  "WHERE pid=", t.pid))));
    published_total += t.published;
    dropped_total += t.dropped;
    const auto rows = q.Rows(absl::StrCat(
        "SELECT process_id, exited_utc_ns IS NOT NULL FROM processes WHERE pid=", t.pid));
    ASSERT_EQ(rows.size(), 1u);
    const std::string id = rows[0][0];
    EXPECT_EQ(rows[0][1], "1") << "not marked exited";
    // Marked exited only after it died (a live process taken for dead would
    // have its later records lost with its removed segment).
    EXPECT_GE(q.Int(absl::StrCat("SELECT exited_utc_ns FROM processes WHERE process_id=",
                                 rows[0][0])),
              t.killed_utc_ns)
        << "marked exited before it was killed";
    EXPECT_FALSE(FileExists(SegmentPath(session_, t.pid))) << "segment not removed";
    EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads WHERE process_id=" + id),
              int64_t(t.published));
    EXPECT_EQ(q.Int("SELECT SUM(dropped) FROM threads WHERE process_id=" + id),
              int64_t(t.dropped));
    for (const RingFigure& r : t.rings) {
      ++rings_total;
      if (r.published == 0) continue;
      // Every record of the ring, and nothing else: stamps a,b,a,b,... of
      // consecutive orders, so ceil(p/2) orders with no gap.
      const std::string where = absl::StrCat(" FROM stamps WHERE process_id=", id, " AND tid=", r.tid);
      EXPECT_EQ(q.Int("SELECT COUNT(*)" + where), int64_t(r.published)) << "tid " << r.tid;
      EXPECT_EQ(q.Int("SELECT COUNT(*)" + where + " AND tag='a'"), int64_t((r.published + 1) / 2));
      EXPECT_EQ(q.Int("SELECT COUNT(*)" + where + " AND tag='b'"), int64_t(r.published / 2));
      EXPECT_EQ(q.Int("SELECT MAX(order_id) - MIN(order_id) + 1" + where),
                int64_t((r.published + 1) / 2));
      EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id)" + where), int64_t((r.published + 1) / 2));
    }
  }
  EXPECT_EQ(Counter(q, "drained"), int64_t(published_total));
  EXPECT_EQ(Counter(q, "dropped"), int64_t(dropped_total));
  EXPECT_EQ(Counter(q, "processes_exited"), int64_t(trials.size()));
  EXPECT_EQ(Counter(q, "segments_removed"), int64_t(trials.size()));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes WHERE exited_utc_ns IS NULL"), 0);
  absl::PrintF("FIGURE producer_kill: trials %zu, rings %llu, records published %llu, drained %lld, "
              "dropped (full ring, counted) %llu, lost %lld, stamps_not_stored %d\n",
              trials.size(), static_cast<unsigned long long>(rings_total),
              static_cast<unsigned long long>(published_total), Counter(q, "drained"),
              static_cast<unsigned long long>(dropped_total),
              static_cast<long long>(published_total) - Counter(q, "drained"),
              Counter(q, "stamps_not_stored"));
}

}  // namespace
}  // namespace ticktrace::reliability
