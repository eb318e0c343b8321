// docs/reliability.md#the-table, "corrupt or hostile segment": while the collector drains, a
// hostile writer overwrites a victim producer's segment with random bytes
// (header, tag table, slot control words and records), and a garbage file
// appears under a segment name. The collector keeps running and exits
// cleanly; the damage is reported (segments_corrupt, slots_corrupt,
// malformed); the healthy producers' data is exact.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <thread>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using HostileSegmentTest = RelTestOf<"hostile">;

// Overwrites random ranges of the file at `path` with random bytes for
// `duration`; returns how many bytes it wrote.
uint64_t Vandalize(const std::string& path, std::chrono::milliseconds duration,
                   std::mt19937_64& rng) {
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return 0;
  struct stat st;
  fstat(fd, &st);
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return 0;
  auto* bytes = static_cast<uint8_t*>(p);
  uint64_t written = 0;
  // The whole control area of every slot and the header first, then random
  // ranges: the records the producer keeps writing get garbage too.
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
    const size_t len = 1 + rng() % 4096;
    const size_t at = rng() % size;
    for (size_t i = at; i < std::min(size, at + len); ++i) bytes[i] = static_cast<uint8_t>(rng());
    written += std::min(size, at + len) - at;
    if (rng() % 8 == 0) {
      for (size_t i = 0; i < std::min<size_t>(size, 1024); ++i) bytes[i] = static_cast<uint8_t>(rng());
      written += std::min<size_t>(size, 1024);
    }
    std::this_thread::sleep_for(2ms);
  }
  munmap(p, size);
  return written;
}

TEST_F(HostileSegmentTest, VandalizedSegmentIsSkippedOthersAreExact) {
  constexpr int kHealthy = 2;
  constexpr uint64_t kOrders = 20000;
  std::mt19937_64 rng(Seed());
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});

  const pid_t victim = StartProducer({"--mode", "seq", "--rings", "4", "--ring", "4096",
                                      "--threads", "2", "--base", std::to_string(1ull << 50),
                                      "--pace-every", "16", "--pace-us", "200"},
                                     "victim.log");
  std::vector<pid_t> healthy;
  for (int i = 0; i < kHealthy; ++i) {
    healthy.push_back(StartProducer(
        {"--mode", "seq", "--rings", "4", "--orders", std::to_string(kOrders), "--base",
         std::to_string(uint64_t(i + 1) << 40), "--pace-every", "16", "--pace-us", "300"},
        absl::StrCat("healthy.", i, ".log")));
  }
  // A slow producer that runs until the end, so that records keep flowing
  // and the collector keeps writing its counters to the store (a snapshot
  // goes with a store transaction).
  const pid_t ticker = StartProducer({"--mode", "seq", "--rings", "2", "--base",
                                      std::to_string(3ull << 40), "--pace-every", "1",
                                      "--pace-us", "2000"},
                                     "ticker.log");
  ASSERT_TRUE(WaitCollectorReads(victim)) << "the collector never drained the victim\n"
                                          << ReadFile(log());

  // A garbage file under a segment name, appearing while the collector runs.
  const std::string garbage = SegmentPath(session_, 999999998);
  {
    std::string junk(64 * 1024, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    std::ofstream(garbage, std::ios::binary) << junk;
  }
  const uint64_t vandal_bytes = Vandalize(SegmentPath(session_, victim), 2s, rng);
  EXPECT_GT(vandal_bytes, 0u);
  EXPECT_EQ(waitpid(c, nullptr, WNOHANG), 0) << "collector died under hostile input\n"
                                             << ReadFile(log());

  for (pid_t p : healthy) {
    EXPECT_EQ(WaitExit(p, 120s), 0);
    Forget(p);
  }
  kill(victim, SIGKILL);
  EXPECT_EQ(WaitExit(victim, 10s), 128 + SIGKILL);
  Forget(victim);
  // The collector gives a segment it cannot open a grace period (it may be
  // mid-creation) before it counts it corrupt: wait until it has (the ticker's
  // records keep the collector writing its counters to the store).
  EXPECT_TRUE(WaitStoreCounter("segments_corrupt", [](int64_t v) { return v >= 1; }))
      << "the garbage segment was never reported\n"
      << ReadFile(log());
  kill(ticker, SIGKILL);
  EXPECT_EQ(WaitExit(ticker, 10s), 128 + SIGKILL);
  Forget(ticker);
  EXPECT_TRUE(WaitFor(
      [&] {
        for (pid_t p : healthy) {
          if (FileExists(SegmentPath(session_, p))) return false;
        }
        return true;
      },
      60s))
      << "healthy segments not removed";
  StopCollector(c);
  std::remove(garbage.c_str());

  StoreQuery q(db());
  ExpectStoreWriterKeptUp(q);
  for (int i = 0; i < kHealthy; ++i) {
    const pid_t p = healthy[i];
    SCOPED_TRACE(absl::StrCat("healthy pid ", p));
    const std::string id =
        q.Text(absl::StrCat("SELECT process_id FROM processes WHERE pid=", p));
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads WHERE process_id=" + id),
              int64_t(2 * kOrders));
    EXPECT_EQ(q.Int("SELECT SUM(dropped) FROM threads WHERE process_id=" + id), 0);
    EXPECT_NE(q.Int("SELECT exited_utc_ns FROM processes WHERE process_id=" + id), 0);
    const uint64_t base = uint64_t(i + 1) << 40;
    const std::string range = absl::StrCat(" BETWEEN ", base + 1, " AND ", base + kOrders);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id" + range),
              int64_t(kOrders));
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='a->b' AND order_id" + range),
              int64_t(kOrders));
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE process_id=" + id), int64_t(2 * kOrders));
  }
  const int64_t segments_corrupt = Counter(q, "segments_corrupt");
  const int64_t slots_corrupt = Counter(q, "slots_corrupt");
  const int64_t malformed = Counter(q, "malformed");
  EXPECT_GE(segments_corrupt, 1) << "the garbage file was not reported";
  EXPECT_GT(slots_corrupt + malformed, 0) << "the vandalized segment was not reported";
  absl::PrintF("FIGURE hostile: %llu random bytes written over a live segment in 2 s, plus one "
              "garbage segment; collector alive; segments_corrupt %lld, slots_corrupt %lld, "
              "malformed %lld, unattributed %lld; healthy processes %d x %llu records: exact\n",
              static_cast<unsigned long long>(vandal_bytes), static_cast<long long>(segments_corrupt),
              static_cast<long long>(slots_corrupt), static_cast<long long>(malformed),
              Counter(q, "unattributed"), kHealthy, static_cast<unsigned long long>(2 * kOrders));
}

}  // namespace
}  // namespace ticktrace::reliability
