// docs/security.md#tests, rows 3, 4 and 7: segments the collector must
// not drain. Another local user (nobody) plants a valid segment under the
// session's name; a segment claims a 2 TiB geometry; a collector running as
// nobody meets a root producer's 0600 segment. Each ends well: the traced
// process lives, the collector lives and drains everyone else, the foreign
// records never reach the store, and the counters say what happened.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"
#include "ticktrace/trace.h"

namespace ticktrace::reliability {
namespace {

class SafetyForeignTest : public RelTest {
 protected:
  SafetyForeignTest() : RelTest("foreign") {}

  // A producer of `orders` complete orders (tags a, b; ids 1..orders) runs to
  // its end; the collector drains it, removes its segment and is stopped.
  void DrainAGenuineProducerAndStop(uint64_t orders, pid_t collector) {
    const pid_t producer = StartProducer(
        {"--mode", "seq", "--rings", "2", "--ring", "65536", "--orders", absl::StrCat(orders)},
        "producer.log");
    EXPECT_EQ(WaitExit(producer, 60s), 0) << ReadFile(dir_.File("producer.log"));
    Forget(producer);
    EXPECT_TRUE(WaitFor([&] { return !FileExists(SegmentPath(session_, producer)); }, 60s))
        << ReadFile(log());
    StopCollector(collector);
  }

  static int64_t Count(StoreQuery& q, const std::string& sql) { return q.Int(sql); }
};

std::string IntruderOrders() {
  return absl::StrCat("SELECT COUNT(*) FROM orders WHERE order_id > ", kIntruderOrderBase);
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Row 3: nobody's segment "ticktrace.<session>.1" (pid 1, start ticks 0)
// holding 100 made-up orders. The root collector leaves it alone.
TEST_F(SafetyForeignTest, AnotherUsersSegmentIsCountedAndNotDrained) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const std::string planted = absl::StrCat("ticktrace.", session_, ".1");
  ASSERT_TRUE(PlantShmFile(Nobody(), planted, CraftSegment(1, 100, "intruder"), 0644));

  const pid_t collector = StartCollector({"--pipeline", "a,b"});
  DrainAGenuineProducerAndStop(500, collector);

  const std::string text = ReadFile(log());
  EXPECT_EQ(Occurrences(text, planted + ": owned by uid " + std::to_string(Nobody().uid)), 1u)
      << "named once on stderr:\n" << text;
  EXPECT_TRUE(FileExists("/dev/shm/" + planted)) << "another user's file is not ours to remove";
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_foreign"), 1);
  // 100 orders of two stamps, published and never consumed: 200 records.
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 200);
  EXPECT_EQ(Counter(q, "segments_corrupt"), 0);
  EXPECT_EQ(Count(q, "SELECT COUNT(*) FROM orders WHERE complete=1"), 500);
  EXPECT_EQ(Count(q, IntruderOrders()), 0) << "foreign data reached the store";
  EXPECT_EQ(Count(q, "SELECT COUNT(*) FROM processes WHERE name='intruder'"), 0);
  absl::PrintF("FIGURE safety foreign: segments_foreign %d, %d records refused, %d intruder "
               "orders stored, %d genuine orders stored\n",
               Counter(q, "segments_foreign"), Counter(q, "records_in_refused_segments"),
               Count(q, IntruderOrders()),
               Count(q, "SELECT COUNT(*) FROM orders WHERE complete=1"));
}

// --allow-uid: a shared setup drains the named user's segments.
TEST_F(SafetyForeignTest, AllowUidDrainsThatUsersSegments) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const std::string planted = absl::StrCat("ticktrace.", session_, ".1");
  ASSERT_TRUE(PlantShmFile(Nobody(), planted, CraftSegment(1, 100, "intruder"), 0644));

  const pid_t collector = StartCollector(
      {"--pipeline", "a,b", "--allow-uid", absl::StrCat(Nobody().uid)});
  DrainAGenuineProducerAndStop(500, collector);

  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_foreign"), 0);
  EXPECT_EQ(Count(q, "SELECT COUNT(*) FROM orders WHERE complete=1"), 600);
  EXPECT_EQ(Count(q, IntruderOrders()), 100);
}

// Row 4: a sparse segment of our own uid whose header claims 4096 rings of
// 2^24 records (2 TiB of geometry), one of them claimed: it has reserved
// 512 MiB and a little (abi::ReservedBytes), more than this collector's
// --max-segment-bytes 256MiB. Refused from its header and slot headers
// (pread), before anything is mapped.
TEST_F(SafetyForeignTest, OversizedSegmentIsRefusedBeforeMapping) {
  const uint32_t pid = static_cast<uint32_t>(getpid());  // alive: never removed as dead
  std::string bytes = CraftSegment(pid, 100, "huge");
  // Patched through a copy: `bytes` need not be aligned for the header type.
  abi::SegmentHeader header;
  std::memcpy(static_cast<void*>(&header), bytes.data(), sizeof(header));
  header.slot_count = abi::kMaxSlots;
  header.ring_capacity = abi::kMaxRingCapacity;
  header.slot_stride = abi::SlotStride(abi::kMaxRingCapacity);
  header.segment_size = abi::SegmentSize(header.tag_capacity, abi::kMaxSlots,
                                         abi::kMaxRingCapacity);
  std::memcpy(static_cast<void*>(bytes.data()), &header, sizeof(header));
  // The records of slot 0 move with the stride; the small file keeps slot 0's
  // control line (write_index 200), the rest is a sparse tail.
  const std::string name = SegmentName(session_, pid);
  ASSERT_TRUE(PlantShmFile(std::nullopt, name, bytes, 0600, header.segment_size))
      << "tmpfs refused a sparse file of " << header.segment_size << " bytes";

  const pid_t collector =
      StartCollector({"--pipeline", "a,b", "--max-segment-bytes", "256MiB"});
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log()).find("above the limit") != std::string::npos; },
                      30s))
      << ReadFile(log());
  // Nothing of it was mapped: the file is in none of the collector's mappings
  // (VmSize is printed too; under ASan it holds the sanitizer's shadow).
  const std::string maps = ReadFile(absl::StrCat("/proc/", collector, "/maps"));
  EXPECT_FALSE(maps.empty());
  EXPECT_EQ(maps.find(name), std::string::npos) << "the segment was mapped:\n" << maps;
  std::ifstream status(absl::StrCat("/proc/", collector, "/status"));
  std::string line;
  uint64_t vm_kib = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
  }
  absl::PrintF("FIGURE safety oversized: header claims %d bytes; not mapped; collector VmSize "
               "%d KiB\n",
               header.segment_size, vm_kib);
  DrainAGenuineProducerAndStop(200, collector);

  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "segments_oversized"), 1);
  // 4096 rings, above kMaxRingsCounted (64): its waiting records are not
  // counted (that would take 8,192 preads), and the line says so.
  EXPECT_EQ(Counter(q, "records_in_refused_segments"), 0);
  EXPECT_NE(ReadFile(log()).find("records waiting in it: unknown"), std::string::npos)
      << ReadFile(log());
  EXPECT_EQ(Count(q, "SELECT COUNT(*) FROM orders WHERE complete=1"), 200);
  EXPECT_EQ(Count(q, IntruderOrders()), 0);
}

// Row 7: a collector running as nobody meets a root producer's 0600 segment:
// it says "Permission denied" once, counts it as unreadable, and drains its
// own user's segment meanwhile.
TEST_F(SafetyForeignTest, UnreadableSegmentIsNamedWithItsErrno) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const Account nobody = Nobody();
  // Everything the nobody collector touches lives in a directory of its own.
  const std::string home = dir_.File("nobody");
  ASSERT_EQ(mkdir(home.c_str(), 0755), 0);
  ASSERT_EQ(chown(home.c_str(), nobody.uid, nobody.gid), 0);
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  const std::string bin = home + "/ticktrace-collector";
  {
    std::ifstream in(kCollector, std::ios::binary);
    std::ofstream out(bin, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);

  const pid_t root_producer =
      StartProducer({"--mode", "seq", "--rings", "2", "--ring", "4096", "--orders", "50",
                     "--hold", "1"},
                    "root_producer.log");
  ASSERT_NE(OpenSegment(root_producer), nullptr);
  EXPECT_EQ(ModeOf(SegmentPath(session_, root_producer)) & 077, 0);
  const std::string own = absl::StrCat("ticktrace.", session_, ".1");
  ASSERT_TRUE(PlantShmFile(nobody, own, CraftSegment(1, 100, "nobodys"), 0600));

  const std::string store = home + "/store.db", out = home + "/collector.log";
  const std::vector<std::string> argv = {bin, "--session", session_, "--db", store, "--tsc-hz",
                                         absl::StrFormat("%.0f", TestTscHz()), "--pipeline",
                                         "a,b", "--duration-s", "3"};
  ASSERT_TRUE(RunAsChild(nobody, [&] {
    const pid_t pid = Spawn(argv, out);
    return WaitExit(pid, 60s) == 0;
  })) << ReadFile(out);

  const std::string text = ReadFile(out);
  const std::string root_name = absl::StrCat("ticktrace.", session_, ".", root_producer);
  EXPECT_EQ(Occurrences(text, root_name), 1u) << text;
  EXPECT_NE(text.find("Permission denied"), std::string::npos) << text;
  StoreQuery q(store);
  EXPECT_EQ(Counter(q, "segments_unreadable"), 1);
  EXPECT_EQ(Counter(q, "segments_corrupt"), 0);
  EXPECT_EQ(Counter(q, "segments_foreign"), 0);
  EXPECT_EQ(Count(q, IntruderOrders()), 100) << "its own user's segment is drained";
  absl::PrintF("FIGURE safety unreadable: segments_unreadable %d, own user's orders stored %d\n",
               Counter(q, "segments_unreadable"), Count(q, IntruderOrders()));
  // The root producer is untouched and still tracing.
  EXPECT_EQ(kill(root_producer, 0), 0);
  std::error_code ec;
  std::filesystem::remove_all(absl::StrCat("/tmp/ticktrace-", nobody.uid), ec);
}

}  // namespace
}  // namespace ticktrace::reliability
