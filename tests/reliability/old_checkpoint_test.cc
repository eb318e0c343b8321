// docs/collector.md#checkpoints-and-restart, a checkpoint of an older format
// (format 1: the same 56-byte header as format 2, version 1 at +8, and a state
// this collector cannot read). Its state held the open orders, the processes
// and the counters at its journal offset, so the collector can do without it
// only when the journal still holds the run from its start:
//   - journal whole: the checkpoint is refused in one line, the journal is
//     replayed from its start, and every record is stored once;
//   - journal freed before the checkpoint (what every checkpoint of a live
//     run leads to): the resume is refused in one line before it touches
//     anything, and the collector that reads the checkpoint finishes the run
//     with every record stored once.

#include <sys/stat.h>

#include <cstring>
#include <string>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using OldCheckpointTest = RelTestOf<"oldckpt">;

constexpr int kProducers = 2;
constexpr uint64_t kOrders = 60000;  // per producer, paced over about 5 s
constexpr int64_t kAllOrders = int64_t(kOrders) * kProducers;
constexpr uint64_t kFormat1Magic = 0x3130545043574354ull;  // "TCWCPT01"

void WriteBytes(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(fclose(f), 0);
}

template <typename T>
void PutLittleEndian(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86-64: little-endian
  out->append(b, sizeof(T));
}

class OldCheckpoint : public OldCheckpointTest {
 protected:
  std::vector<pid_t> StartProducers() {
    std::vector<pid_t> producers;
    for (int i = 0; i < kProducers; ++i) {
      // Rings of 1 Mi records hold a producer's 120,000 records, so nothing is
      // dropped while no collector runs.
      producers.push_back(StartProducer(
          {"--mode", "seq", "--rings", "2", "--ring", "1048576", "--orders",
           std::to_string(kOrders), "--base", std::to_string(uint64_t(i + 1) << 40),
           "--pace-every", "8", "--pace-us", "600"},
          absl::StrCat("producer.", i, ".log")));
    }
    return producers;
  }

  void KillCollector(pid_t c) {
    ASSERT_EQ(kill(c, SIGKILL), 0);
    EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
    Forget(c);
  }

  void FinishRun(pid_t c, const std::vector<pid_t>& producers) {
    for (pid_t p : producers) {
      EXPECT_EQ(WaitExit(p, 120s), 0) << "producer";
      Forget(p);
    }
    ExpectSegmentsRemoved();
    StopCollector(c);
  }

  // Every record of both producers stored once, in one run that restarted once.
  void ExpectEveryRecordStoredOnce() {
    EXPECT_FALSE(FileExists(db() + ".ttcheckpoint")) << "checkpoint left after a clean end";
    EXPECT_FALSE(FileExists(db() + ".ttjournal")) << "journal left after a clean end";
    StoreQuery q(db());
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
    EXPECT_EQ(Counter(q, "restarts"), 1);
    EXPECT_EQ(Counter(q, "drained"), 2 * kAllOrders);  // two stamps per order
    EXPECT_EQ(Counter(q, "dropped"), 0);
    EXPECT_EQ(Counter(q, "orders_complete"), kAllOrders);
    EXPECT_EQ(Counter(q, "orders_incomplete"), 0);
    // Each stage counted once per order, not twice for the replayed ones.
    EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), kAllOrders);
    EXPECT_EQ(q.Int("SELECT SUM(i.count) FROM intervals i JOIN stages s USING(run_id, stage_id) "
                    "WHERE s.name='a->b'"),
              kAllOrders);
    ExpectStoreWriterKeptUp(q);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), kAllOrders);
    EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), kAllOrders);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), kAllOrders);
    EXPECT_EQ(Counter(q, "store_stats_through"), kAllOrders);
    EXPECT_EQ(Counter(q, "store_detail_through"), kAllOrders);
  }

  std::string checkpoint() const { return db() + ".ttcheckpoint"; }
  std::string journal() const { return db() + ".ttjournal"; }
};

TEST_F(OldCheckpoint, FreedJournalRefusesTheResumeInOneLineAndTouchesNothing) {
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "300",
                                         "--checkpoint-interval", "1"};
  const std::vector<pid_t> producers = StartProducers();
  pid_t c = StartCollector(args);
  // A checkpoint past the journal's first MiB, and the journal before it
  // freed (the drain frees it once the checkpoint file is written): at least
  // half a MiB of the file is a hole.
  auto checkpointed = [&] {
    const std::string bytes = ReadFile(checkpoint());
    uint64_t offset = 0;
    if (bytes.size() >= 56) std::memcpy(&offset, bytes.data() + 24, sizeof(offset));
    struct stat st {};
    return offset > (1 << 20) && stat(journal().c_str(), &st) == 0 &&
           uint64_t(st.st_blocks) * 512 + (512 << 10) < uint64_t(st.st_size);
  };
  ASSERT_TRUE(WaitFor(checkpointed, 60s)) << ReadFile(log());
  KillCollector(c);

  // Made format 1: the version at +8.
  std::string format2 = ReadFile(checkpoint());
  ASSERT_GE(format2.size(), 56u);
  uint64_t magic = 0;
  std::memcpy(&magic, format2.data(), sizeof(magic));
  ASSERT_EQ(magic, kFormat1Magic);
  std::string format1 = format2;
  const char kVersion1[4] = {1, 0, 0, 0};
  format1.replace(8, 4, kVersion1, 4);
  WriteBytes(checkpoint(), format1);
  const std::string journal_at_kill = ReadFile(journal());
  int64_t stored_at_kill = 0, restarts_at_kill = 0;
  {
    StoreQuery q(db());
    stored_at_kill = q.Int("SELECT COUNT(*) FROM orders");
    restarts_at_kill = Counter(q, "restarts");
  }

  const size_t log_before = ReadFile(log()).size();
  c = StartCollector(args, /*wait_ready=*/false);
  EXPECT_EQ(WaitExit(c, 60s), 1) << ReadFile(log()).substr(log_before);
  Forget(c);
  const std::string said = ReadFile(log()).substr(log_before);
  const std::string line =
      "ticktrace-collector: " + checkpoint() +
      ": a checkpoint of format 1 (this collector reads format 2), and the run that wrote it "
      "freed the journal before it: run 1 can be resumed only by the collector that wrote them; "
      "both files are left as they are (to start a new run instead, move " +
      checkpoint() + " and " + journal() + " away: the store keeps what run 1 stored)\n";
  EXPECT_EQ(said, line);
  // Nothing touched: both files as they were, the store's orders and restarts too.
  EXPECT_TRUE(ReadFile(checkpoint()) == format1) << "the checkpoint changed";
  EXPECT_TRUE(ReadFile(journal()) == journal_at_kill) << "the journal changed";
  {
    StoreQuery q(db());
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), stored_at_kill);
    EXPECT_EQ(Counter(q, "restarts"), restarts_at_kill);
  }

  // The collector that reads the checkpoint (here: this one, given its
  // format-2 bytes back) finishes the run.
  WriteBytes(checkpoint(), format2);
  c = StartCollector(args);
  FinishRun(c, producers);
  ExpectEveryRecordStoredOnce();
}

TEST_F(OldCheckpoint, WholeJournalIsReplayedFromItsStartWithEveryRecordStoredOnce) {
  // No checkpoint in the first hour: the journal keeps the run from its start.
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "300",
                                         "--checkpoint-interval", "3600"};
  const std::vector<pid_t> producers = StartProducers();
  pid_t c = StartCollector(args);
  ASSERT_TRUE(WaitStoreCounter("orders_complete", [](int64_t v) { return v >= 20000; }, 60s))
      << ReadFile(log());
  KillCollector(c);
  ASSERT_FALSE(FileExists(checkpoint()));
  int64_t run_id = 0, stored_at_kill = 0;
  {
    StoreQuery q(db());
    run_id = q.Int("SELECT run_id FROM runs");
    stored_at_kill = q.Int("SELECT COUNT(*) FROM orders");
  }
  ASSERT_GT(stored_at_kill, 0);
  struct stat st {};
  ASSERT_EQ(stat(journal().c_str(), &st), 0);

  // A format-1 checkpoint of this run, laid out as that format was: magic,
  // u32 version 1, u32 0, i64 run, u64 journal offset, u64 orders emitted,
  // u64 state bytes, u64 checksum, then the state (here empty: it is never
  // read, the version refuses it first).
  std::string format1;
  PutLittleEndian<uint64_t>(&format1, kFormat1Magic);
  PutLittleEndian<uint32_t>(&format1, 1);
  PutLittleEndian<uint32_t>(&format1, 0);
  PutLittleEndian<int64_t>(&format1, run_id);
  PutLittleEndian<uint64_t>(&format1, static_cast<uint64_t>(st.st_size));
  PutLittleEndian<uint64_t>(&format1, static_cast<uint64_t>(stored_at_kill));
  PutLittleEndian<uint64_t>(&format1, 0);
  PutLittleEndian<uint64_t>(&format1, 0);
  ASSERT_EQ(format1.size(), 56u);
  WriteBytes(checkpoint(), format1);

  const size_t log_before = ReadFile(log()).size();
  c = StartCollector(args);
  FinishRun(c, producers);
  const std::string after = ReadFile(log()).substr(log_before);
  const std::string line = "warning: " + checkpoint() +
                           ": a checkpoint of format 1 (this collector reads format 2) is not "
                           "used; replaying the journal from its start\n";
  EXPECT_EQ(CountOf(after, line), 1) << after;
  EXPECT_EQ(CountOf(after, "format 1"), 1) << after;
  ExpectEveryRecordStoredOnce();
}

}  // namespace
}  // namespace ticktrace::reliability
