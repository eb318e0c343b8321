// docs/security.md#tests, row 2: a segment shrunk (ftruncate) after the
// collector opened it. Reading a page past the new end of a mapped file
// raises SIGBUS; it used to kill the collector. Now the reader's guard catches
// it, that segment is dropped and counted (segments_truncated), and the
// collector goes on draining everyone else.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"
#include "ticktrace/trace.h"

namespace ticktrace::reliability {
namespace {

class SafetyTruncateTest : public RelTest {
 protected:
  SafetyTruncateTest() : RelTest("truncate") {}

  // A process that only sleeps: a live pid for crafted segments (a dead
  // one's segment would be drained to the end and removed).
  pid_t StartSleeper() {
    const pid_t pid = Spawn({"/bin/sleep", "600"}, dir_.File("sleeper.log"));
    children_.Add(pid);
    return pid;
  }

  // A producer started after the damage runs to its end and the collector
  // drains and removes its segment: the damage stopped nothing else.
  void ExpectAFreshProducerDrained() {
    const pid_t producer = StartProducer(
        {"--mode", "seq", "--rings", "2", "--ring", "65536", "--orders", "300"}, "producer.log");
    EXPECT_EQ(WaitExit(producer, 60s), 0) << ReadFile(dir_.File("producer.log"));
    Forget(producer);
    EXPECT_TRUE(WaitFor([&] { return !FileExists(SegmentPath(session_, producer)); }, 60s))
        << ReadFile(log());
  }
};

bool Truncate(const std::optional<Account>& who, const std::string& name, off_t bytes) {
  return RunAsChild(who, [&] {
    const int fd = open(absl::StrCat("/dev/shm/", name).c_str(), O_RDWR | O_CLOEXEC);
    const bool ok = fd >= 0 && ftruncate(fd, bytes) == 0;
    if (fd >= 0) close(fd);
    return ok;
  });
}

// The reader itself: every access after the shrink reads as "nothing", none
// raises a signal.
TEST_F(SafetyTruncateTest, ReaderReadsNothingAfterTheFileShrank) {
  const pid_t sleeper = StartSleeper();
  const std::string name = SegmentName(session_, static_cast<uint32_t>(sleeper));
  ASSERT_TRUE(PlantShmFile(std::nullopt, name, CraftSegment(sleeper, 100, "victim"), 0600));
  absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
  ASSERT_TRUE(r.ok()) << r.status();
  SegmentReader& reader = **r;
  std::vector<abi::Record> out;
  absl::StatusOr<uint64_t> end = reader.Peek(0, 1000, &out);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, 200u);
  EXPECT_FALSE(reader.truncated());

  ASSERT_TRUE(Truncate(std::nullopt, name, 0));
  out.clear();
  EXPECT_EQ(reader.Peek(0, 1000, &out).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty()) << "a faulted copy leaves nothing behind";
  EXPECT_TRUE(reader.truncated());
  EXPECT_EQ(reader.Slot(0).write_index, 0u);
  EXPECT_EQ(reader.counters().slotless_dropped, 0u);
  EXPECT_FALSE(reader.Commit(0, 200));
  EXPECT_FALSE(reader.FreeIfDrained(0));
  EXPECT_FALSE(reader.Tags().ok());
}

// Row 2 as filed: another user's segment (drained because --allow-uid names
// that user) is drained, then cut to 0 bytes. The collector lives, drains a
// genuine producer afterwards, and says what happened.
TEST_F(SafetyTruncateTest, SegmentCutToZeroAfterDrainingIsDropped) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const pid_t sleeper = StartSleeper();
  const std::string name = SegmentName(session_, static_cast<uint32_t>(sleeper));
  ASSERT_TRUE(PlantShmFile(Nobody(), name, CraftSegment(sleeper, 100, "intruder"), 0644));

  const pid_t collector =
      StartCollector({"--pipeline", "a,b", "--allow-uid", absl::StrCat(Nobody().uid)});
  // Drained: the collector moved the ring's read index to the end.
  SegmentOpenLimits limits;
  limits.allowed_uids = {Nobody().uid};
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name, limits);
        return r.ok() && (*r)->Slot(0).read_index == 200;
      },
      30s))
      << ReadFile(log());
  ASSERT_TRUE(Truncate(Nobody(), name, 0));

  ExpectAFreshProducerDrained();
  EXPECT_EQ(kill(collector, 0), 0) << "the collector died:\n" << ReadFile(log());
  StopCollector(collector);

  EXPECT_NE(ReadFile(log()).find(name + ": shrank while being drained"), std::string::npos)
      << ReadFile(log());
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_truncated"), 1);
  EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id > ",
                               kIntruderOrderBase)),
            100)
      << "what was drained before the cut is kept";
  EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id <= ",
                               kIntruderOrderBase)),
            300);
}

// Forks a writer that maps /dev/shm/<name> (a CraftSegment with no records)
// and publishes measurement records into slot 0 as fast as the ring allows, like a
// producer, until it is killed or the file is cut under it (SIGBUS: the
// writer is the test's helper, not the process under test).
pid_t StartRingWriter(const std::string& name) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) setpgid(pid, pid);
    return pid;
  }
  collect::testing::BecomeTestChild(parent);
  const int fd = open(absl::StrCat("/dev/shm/", name).c_str(), O_RDWR);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) _exit(2);
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  if (p == MAP_FAILED) _exit(3);
  auto* base = static_cast<uint8_t*>(p);
  const auto* h = reinterpret_cast<const abi::SegmentHeader*>(base);
  auto* slot = reinterpret_cast<abi::SlotControl*>(base + h->slots_offset);
  auto* records = reinterpret_cast<abi::Record*>(base + h->slots_offset + sizeof(abi::SlotControl));
  const uint64_t capacity = h->ring_capacity;
  for (uint64_t k = 0;; ++k) {
    const uint64_t w = slot->write_index.load(std::memory_order_relaxed);
    // Acquire: pairs with the collector's release store of read_index.
    if (w - slot->read_index.load(std::memory_order_acquire) >= capacity) continue;
    // Measurements (no order id): millions of them cost the analysis and the
    // store little, so the genuine producer's orders are checked exactly.
    abi::Record& r = records[w & (capacity - 1)];
    r.tsc = 1'000'000 + w * 100;
    r.order_id = 0;
    r.payload.span = abi::SpanPayload{abi::kAuxUnknown, 50};
    r.aux = abi::kAuxUnknown;
    r.tag_id = static_cast<uint16_t>(w % 2);
    r.kind = abi::kMeasure;
    r.flags = 0;
    // Release: publishes the record; pairs with the acquire in SegmentReader::Peek().
    slot->write_index.store(w + 1, std::memory_order_release);
  }
}

// Cut while draining: one segment after another is filled without pause by
// a writer while the collector drains it, and cut, at a random moment after
// the collector first consumed from it, to 0 bytes or to a random length.
// The cuts land between passes and inside the collector's copies. The
// collector survives every one; every segment cut to 0 is dropped (its next
// read of the slot's indices faults).
TEST_F(SafetyTruncateTest, SegmentsCutWhileDrainingNeverKillTheCollector) {
  const pid_t sleeper = StartSleeper();
  std::mt19937_64 rng(Seed());
  constexpr uint32_t kRing = 65536;
  const std::string bytes = CraftSegment(sleeper, 0, "victim", 1, kRing);
  const pid_t collector = StartCollector({"--pipeline", "a,b"});
  const std::string base = SegmentName(session_, static_cast<uint32_t>(sleeper));
  int cuts = 0, cuts_to_zero = 0;
  for (uint32_t suffix = 1; suffix <= kMaxSegmentNameSuffix; ++suffix) {
    const std::string name = absl::StrCat(base, ".", suffix);
    ASSERT_TRUE(PlantShmFile(std::nullopt, name, bytes, 0600));
    const pid_t writer = StartRingWriter(name);
    ASSERT_GT(writer, 0);
    children_.Add(writer);
    ASSERT_TRUE(WaitFor(
        [&] {
          absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
          return r.ok() && (*r)->Slot(0).read_index > 0;
        },
        30s))
        << "the collector never drained " << name << "\n" << ReadFile(log());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
    const bool to_zero = rng() % 2 == 0;
    const off_t cut = to_zero ? 0 : static_cast<off_t>(rng() % bytes.size());
    ASSERT_TRUE(Truncate(std::nullopt, name, cut));
    ++cuts;
    cuts_to_zero += to_zero ? 1 : 0;
    KillGroup(writer);
    WaitExit(writer, 10s);
    children_.Forget(writer);
    ASSERT_EQ(kill(collector, 0), 0) << "the collector died at cut " << suffix << ":\n"
                                     << ReadFile(log());
  }
  ExpectAFreshProducerDrained();
  StopCollector(collector);

  StoreQuery q(db());
  const int64_t truncated = Counter(q, "segments_truncated");
  const int64_t genuine = q.Int("SELECT COUNT(*) FROM orders WHERE complete=1");
  absl::PrintF("FIGURE safety truncate: %d cuts (%d to 0 bytes) while draining: %d segments "
               "dropped, collector alive, %d of 300 genuine orders stored\n",
               cuts, cuts_to_zero, truncated, genuine);
  EXPECT_GE(truncated, cuts_to_zero);
  EXPECT_LE(truncated, cuts);
  ExpectStoreWriterKeptUp(q);
  EXPECT_EQ(genuine, 300);
}

}  // namespace
}  // namespace ticktrace::reliability
