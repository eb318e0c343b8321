// docs/security.md, threat model, damage to the journal or the checkpoint
// between a collector's death and its restart. Each kind is said in its own
// line with the records lost (or "unknown"), the run exits 1, and no counter
// goes backwards: where the analysis lost part of the run, the store's own
// counters row bounds each counter from below.
//
// Every case runs the same first half: 2 producers x 30,000 orders (two
// stamps each: 120,000 records, all held by 1 Mi-record rings), the
// collector drains them all and the store counts every one (drained 120,000,
// orders_complete 60,000), then the collector is SIGKILLed and the files are
// damaged. The restart has no producer left, so the figures are exact.
//   - journal truncated below its checkpoint's offset;
//   - journal cut in the middle (no checkpoint: the journal is the whole run),
//     a few bytes into a chunk about 90% of the way through;
//   - checkpoint deleted, after the run freed its journal before it;
//   - checkpoint of another run of the same store (its run id field, +16 in
//     the layout of collector/stream/checkpoint.h, names another run).

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

constexpr int kProducers = 2;
constexpr uint64_t kOrders = 30000;  // per producer
constexpr int64_t kAllOrders = int64_t(kOrders) * kProducers;
constexpr int64_t kAllRecords = 2 * kAllOrders;
// The journal's layout (collector/stream/archive.h, stream.h): a 32-byte
// header, then chunks of u32 type, u32 payload bytes, u64 checksum, payload;
// a records chunk (type 5) holds 24 header bytes and 32 bytes per record.
constexpr uint64_t kJournalHeaderBytes = 32;
constexpr uint64_t kChunkHeaderBytes = 16;

class JournalDamageTest : public RelTestOf<"jdamage"> {
 protected:
  std::string checkpoint() const { return db() + ".ttcheckpoint"; }
  std::string journal() const { return db() + ".ttjournal"; }

  // The checkpoint's u64/i64 field at `at` (0 when there is none).
  uint64_t CheckpointField(size_t at) const {
    const std::string bytes = ReadFile(checkpoint());
    uint64_t v = 0;
    if (bytes.size() >= 56) std::memcpy(&v, bytes.data() + at, sizeof(v));
    return v;
  }

  // Runs the first half (above) and SIGKILLs the collector once the store
  // counts every record; with `checkpoints`, also once a checkpoint past the
  // journal's first MiB was written and the journal before it freed.
  void RunThenKill(bool checkpoints) {
    const std::vector<std::string> args = Args(checkpoints);
    const pid_t c = StartCollector(args);
    std::vector<pid_t> producers;
    for (int i = 0; i < kProducers; ++i) {
      producers.push_back(StartProducer(
          {"--mode", "seq", "--rings", "2", "--ring", "1048576", "--orders",
           std::to_string(kOrders), "--base", std::to_string(uint64_t(i + 1) << 40),
           "--pace-every", "8", "--pace-us", "400"},
          absl::StrCat("producer.", i, ".log")));
    }
    if (checkpoints) {
      auto freed = [&] {
        struct stat st {};
        return CheckpointField(24) > (1 << 20) && stat(journal().c_str(), &st) == 0 &&
               uint64_t(st.st_blocks) * 512 + (512 << 10) < uint64_t(st.st_size);
      };
      ASSERT_TRUE(WaitFor(freed, 60s)) << ReadFile(log());
    }
    for (pid_t p : producers) {
      EXPECT_EQ(WaitExit(p, 120s), 0);
      Forget(p);
    }
    ASSERT_TRUE(WaitStoreCounter("drained", [](int64_t v) { return v == kAllRecords; }, 60s))
        << ReadFile(log());
    ASSERT_TRUE(
        WaitStoreCounter("orders_complete", [](int64_t v) { return v == kAllOrders; }, 60s));
    ASSERT_EQ(kill(c, SIGKILL), 0);
    EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
    Forget(c);
    StoreQuery q(db());
    run_id_ = q.Int("SELECT run_id FROM runs");
  }

  static std::vector<std::string> Args(bool checkpoints) {
    return {"--pipeline", "a,b", "--order-timeout-ms", "300", "--checkpoint-interval",
            checkpoints ? "1" : "3600"};
  }

  // Restarts on the damaged files, lets the recovery finish, stops it with
  // SIGTERM: exit 1 expected. Returns what this collector printed.
  std::string Restart(bool checkpoints) {
    const size_t before = ReadFile(log()).size();
    const pid_t c = StartCollector(Args(checkpoints));
    EXPECT_TRUE(WaitFor(
        [&] { return ReadFile(log()).find("recovered in", before) != std::string::npos; }, 60s))
        << ReadFile(log()).substr(before);
    kill(c, SIGTERM);
    EXPECT_EQ(WaitExit(c, 60s), 1) << ReadFile(log()).substr(before);
    Forget(c);
    return ReadFile(log()).substr(before);
  }

  // Every counter where the first half left it: nothing went backwards, and
  // (no producer after the restart) nothing was counted twice.
  void ExpectCountersKept() {
    StoreQuery q(db());
    EXPECT_EQ(Counter(q, "drained"), kAllRecords);
    EXPECT_EQ(Counter(q, "orders_complete"), kAllOrders);
    EXPECT_EQ(Counter(q, "restarts"), 1);
    EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders WHERE complete=1"), kAllOrders);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
  }

  int64_t run_id_ = 0;
};

TEST_F(JournalDamageTest, JournalTruncatedBelowItsCheckpointIsSaid) {
  RunThenKill(/*checkpoints=*/true);
  const uint64_t offset = CheckpointField(24);
  ASSERT_GT(offset, 1u << 20);
  ASSERT_EQ(truncate(journal().c_str(), static_cast<off_t>(offset - 1)), 0);
  const std::string said = Restart(/*checkpoints=*/true);
  const std::string line = absl::StrCat(
      "journal ", journal(), ": ", offset - 1, " bytes, shorter than its checkpoint's offset ",
      offset,
      " (truncated): everything it held after the checkpoint is lost (records lost: unknown; "
      "index_gaps counts those the rings still show); counters continue from the store's\n");
  EXPECT_EQ(CountOf(said, line), 2) << said;  // on stdout, and as the exit status's message
  EXPECT_EQ(CountOf(said, "a torn tail"), 0) << said;
  ExpectCountersKept();
}

TEST_F(JournalDamageTest, JournalCutInTheMiddleIsSaidWithTheRecordsLost) {
  RunThenKill(/*checkpoints=*/false);
  ASSERT_FALSE(FileExists(checkpoint()));
  // Walk the chunks by the layout above to the first boundary past 90% of
  // the file, counting the records before it.
  const std::string bytes = ReadFile(journal());
  ASSERT_GT(bytes.size(), 1u << 20);
  uint64_t at = kJournalHeaderBytes, records_kept = 0;
  while (at < bytes.size() * 9 / 10) {
    uint32_t type = 0, payload = 0;
    std::memcpy(&type, bytes.data() + at, 4);
    std::memcpy(&payload, bytes.data() + at + 4, 4);
    if (type == 5) records_kept += (payload - 24) / 32;
    at += kChunkHeaderBytes + payload;
  }
  ASSERT_LT(at + 10, bytes.size());
  // Ten bytes into the next chunk: it looks like a torn last chunk.
  ASSERT_EQ(truncate(journal().c_str(), static_cast<off_t>(at + 10)), 0);
  const std::string said = Restart(/*checkpoints=*/false);
  // By hand: the store counted all 120,000 drained; the journal keeps
  // records_kept of them.
  const std::string line = absl::StrCat(
      "journal ", journal(), ": cut at byte ", at, ", not just a torn last chunk: it holds ",
      records_kept, " records of this run but the store counted ",
      kAllRecords, " drained; at least ", kAllRecords - int64_t(records_kept),
      " records lost\n");
  EXPECT_EQ(CountOf(said, line), 2) << said;
  EXPECT_EQ(CountOf(said, "a torn tail"), 0) << said;
  absl::PrintF("FIGURE journal cut: %llu of %lld records kept; said lost %lld\n",
               static_cast<unsigned long long>(records_kept), static_cast<long long>(kAllRecords),
               static_cast<long long>(kAllRecords - int64_t(records_kept)));
  ExpectCountersKept();
}

TEST_F(JournalDamageTest, MissingCheckpointOfAFreedJournalIsSaid) {
  RunThenKill(/*checkpoints=*/true);
  ASSERT_EQ(unlink(checkpoint().c_str()), 0);
  const std::string said = Restart(/*checkpoints=*/true);
  const std::string line = absl::StrCat(
      "checkpoint ", checkpoint(),
      ": missing: the run freed its journal before the checkpoint, so the analysis of "
      "everything before it is lost (records lost: unknown); counters continue from the "
      "store's\n");
  EXPECT_EQ(CountOf(said, line), 2) << said;
  ExpectCountersKept();
}

TEST_F(JournalDamageTest, CheckpointOfAnotherRunIsSaid) {
  RunThenKill(/*checkpoints=*/true);
  // The run id field (+16) made another run's.
  std::string bytes = ReadFile(checkpoint());
  ASSERT_GE(bytes.size(), 56u);
  const int64_t other_run = run_id_ + 1;
  std::memcpy(bytes.data() + 16, &other_run, sizeof(other_run));
  {
    FILE* f = fopen(checkpoint().c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    ASSERT_EQ(fclose(f), 0);
  }
  const std::string said = Restart(/*checkpoints=*/true);
  const std::string line = absl::StrCat(
      "checkpoint ", checkpoint(), ": belongs to run ", other_run, ", not run ", run_id_,
      "; not used (removed): the run freed its journal before the checkpoint, so the analysis "
      "of everything before it is lost (records lost: unknown); counters continue from the "
      "store's\n");
  EXPECT_EQ(CountOf(said, line), 2) << said;
  ExpectCountersKept();
}

}  // namespace
}  // namespace ticktrace::reliability
