// docs/security.md#threat-model: name churn by a user the collector does
// not drain. A throwaway user (created and removed by the test) plants 300
// segment files whose headers claim 4,096 rings each, and renames every one
// of them to its next ".N" name once a second, while a root producer writes
// at a steady rate. Each new name used to be refused afresh: counting its
// waiting records cost 8,192 preads on the drain thread, the root producer's
// ring overflowed (35,410 of 400,000 records lost in the probe), and stderr
// got a line per refusal (1,610 in 6 s).
//
// Expected, by hand:
// - A refused file is remembered by device and inode, so each of the 300 is
//   refused once, whatever it is renamed to: segments_foreign = 300.
// - More than kMaxRingsCounted (64) rings: the waiting records are not
//   counted ("unknown"), so records_in_refused_segments = 0.
// - The producer: 200,000 orders of two stamps (400,000 records), 40 orders
//   then a 1 ms sleep (at most about 80,000 records/s), into one ring of
//   65,536 records: every order stored complete, dropped = 0.
// - stderr: at most RefusalLog::kLinesPerWindow (10) refusal lines per 10 s
//   window and one summing-up line per window, plus one at the end: with W
//   windows in the run, at most 10 W "not drained" lines and W + 1 summary
//   lines. The 300 refusals all happen in the first discovery: 10 lines and
//   "... and 290 more refusals" in the first window.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"

namespace ticktrace::reliability {
namespace {

constexpr uint32_t kFiles = 300;
constexpr uint32_t kFakePidBase = 3'000'000;  // above any real pid (pid_max is at most 2^22)

// A segment header claiming `slot_count` rings of abi::kMinRingCapacity
// records for `pid`, valid for the reader (abi.h); the file is then sized to
// the whole geometry, sparse, so that nothing but the header takes memory.
std::string CraftHeader(uint32_t pid, uint32_t slot_count, uint64_t* file_bytes) {
  constexpr uint32_t kTags = 2;
  const uint32_t ring = abi::kMinRingCapacity;
  alignas(abi::kCacheLineSize) abi::SegmentHeader h;
  std::memset(static_cast<void*>(&h), 0, sizeof(h));
  h.abi_version = abi::kAbiVersion;
  h.header_size = sizeof(abi::SegmentHeader);
  h.record_size = sizeof(abi::Record);
  h.ring_capacity = ring;
  h.slot_count = slot_count;
  h.tag_capacity = kTags;
  h.tag_table_offset = abi::TagTableOffset();
  h.slots_offset = abi::SlotsOffset(kTags);
  h.slot_stride = abi::SlotStride(ring);
  h.segment_size = abi::SegmentSize(kTags, slot_count, ring);
  h.pid = pid;
  std::strcpy(h.process_name, "churner");
  h.magic.store(abi::kMagic, std::memory_order_relaxed);
  *file_bytes = h.segment_size;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
}

class SafetyRefusalChurnTest : public RelTest {
 protected:
  SafetyRefusalChurnTest() : RelTest("churnref") {}

  std::string FileName(uint32_t i, uint32_t suffix) const {
    return absl::StrCat("ticktrace.", session_, ".", kFakePidBase + i, ".", suffix);
  }
};

TEST_F(SafetyRefusalChurnTest, RenamedRefusedFilesCostNothingAndTheProducerLosesNothing) {
  ThrowawayAccount churner("rc");
  if (!churner.why().empty()) GTEST_SKIP() << churner.why();
  for (uint32_t i = 0; i < kFiles; ++i) {
    uint64_t bytes = 0;
    const std::string header = CraftHeader(kFakePidBase + i, 4096, &bytes);
    ASSERT_TRUE(PlantShmFile(churner.account(), FileName(i, 1), header, 0644, bytes)) << i;
  }
  const auto started = std::chrono::steady_clock::now();
  const pid_t collector = StartCollector({"--pipeline", "a,b"});

  // The churner: every second, each file to its next name (.1 .. .16,
  // round), until SIGTERM; then it writes how many renames it made to a pipe.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t churn = fork();
  if (churn == 0) {
    close(report[0]);
    static volatile sig_atomic_t stopping = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int) { stopping = 1; };
    sigaction(SIGTERM, &sa, nullptr);
    const Account& who = churner.account();
    if (setgroups(0, nullptr) != 0 || setgid(who.gid) != 0 || setuid(who.uid) != 0) _exit(2);
    uint32_t suffix = 1;
    uint64_t renames = 0;
    while (stopping == 0) {
      const uint32_t next = suffix % kMaxSegmentNameSuffix + 1;
      for (uint32_t i = 0; i < kFiles; ++i) {
        const std::string from = absl::StrCat("/dev/shm/ticktrace.", session_, ".",
                                              kFakePidBase + i, ".", suffix);
        const std::string to = absl::StrCat("/dev/shm/ticktrace.", session_, ".",
                                            kFakePidBase + i, ".", next);
        if (std::rename(from.c_str(), to.c_str()) == 0) ++renames;
      }
      suffix = next;
      std::this_thread::sleep_for(1s);  // a signal ends it early: fine
    }
    _exit(write(report[1], &renames, sizeof(renames)) == sizeof(renames) ? 0 : 1);
  }
  close(report[1]);
  children_.Add(churn);

  const pid_t producer =
      StartProducer({"--mode", "seq", "--rings", "2", "--ring", "65536", "--orders", "200000",
                     "--pace-every", "40", "--pace-us", "1000"},
                    "producer.log");
  EXPECT_EQ(WaitExit(producer, 120s), 0) << ReadFile(dir_.File("producer.log"));
  Forget(producer);
  EXPECT_TRUE(WaitFor([&] { return !FileExists(SegmentPath(session_, producer)); }, 60s))
      << ReadFile(log());
  kill(churn, SIGTERM);
  EXPECT_EQ(WaitExit(churn, 30s), 0);
  Forget(churn);
  uint64_t renames = 0;
  EXPECT_EQ(read(report[0], &renames, sizeof(renames)), static_cast<ssize_t>(sizeof(renames)));
  close(report[0]);
  // 300 a second for the whole run (several seconds).
  EXPECT_GE(renames, 2 * kFiles) << "the churner hardly renamed anything";
  StopCollector(collector);
  const double run_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_foreign"), kFiles) << "a renamed file was refused again";
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 0);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 200000);
  ExpectStoreWriterKeptUp(q);

  const std::string text = ReadFile(log());
  const int64_t refusal_lines = CountOf(text, "; not drained");
  const int64_t summary_lines = CountOf(text, " more refusals in the last ");
  const int64_t windows = static_cast<int64_t>(run_s / 10) + 1;
  EXPECT_LE(refusal_lines, 10 * windows) << text;
  EXPECT_LE(summary_lines, windows + 1) << text;
  EXPECT_NE(text.find("... and 290 more refusals in the last "), std::string::npos) << text;
  EXPECT_NE(text.find("records waiting in it: unknown"), std::string::npos) << text;
  absl::PrintF("FIGURE refusal churn: %d files renamed every second (%d renames) for %.0f s; "
               "segments_foreign %d, dropped %d, orders stored %d of 200000, "
               "stderr: %d refusal lines and %d summary lines (bound %d and %d)\n",
               kFiles, renames, run_s, Counter(q, "segments_foreign"), Counter(q, "dropped"),
               q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), refusal_lines,
               summary_lines, 10 * windows, windows + 1);
}

}  // namespace
}  // namespace ticktrace::reliability
