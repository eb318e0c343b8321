// Journal corruption in the middle (docs/collector.md#a-corrupt-journal-chunk): a collector is SIGKILLed while
// two producer threads run, two kRecords chunks in the middle of its journal
// are damaged (one in its payload: the checksum no longer matches; one in its
// header: the type word zeroed, so the reader must scan for the next chunk),
// and a new collector resumes the run. Only those two chunks' records are
// lost: they are counted (journal_chunks_corrupt 2, journal_records_lost and
// index_gaps = their record count), stderr says so once per chunk, the exit
// status is 1, and every other order of the run, before and after the
// damage, is stitched and in the store.
//
// The expected values come from the journal bytes as the killed collector
// wrote them (the chunk layout of collector/stream/stream.h) and from the
// producers' known output, not from the reader under test.

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include "collector/stream/archive.h"
#include "collector/stream/stream.h"
#include "tests/reliability/rel_fixture.h"
#include "ticktrace/abi.h"

namespace ticktrace::reliability {
namespace {

struct RecordsChunkAt {
  uint64_t offset = 0;
  uint32_t payload_bytes = 0;
  uint32_t slot = 0;
  std::vector<abi::Record> records;
};

// Every kRecords chunk of the journal's bytes, walked by the layout of
// stream.h (u32 type, u32 payload bytes, u64 checksum, payload); stops at a
// torn tail.
std::vector<RecordsChunkAt> RecordsChunks(const std::string& bytes) {
  std::vector<RecordsChunkAt> out;
  size_t at = collect::kArchiveHeaderBytes;
  while (at + collect::kChunkHeaderBytes <= bytes.size()) {
    uint32_t type, payload_bytes;
    std::memcpy(&type, bytes.data() + at, 4);
    std::memcpy(&payload_bytes, bytes.data() + at + 4, 4);
    if (at + collect::kChunkHeaderBytes + payload_bytes > bytes.size()) break;
    if (type == static_cast<uint32_t>(collect::ChunkType::kRecords)) {
      RecordsChunkAt c;
      c.offset = at;
      c.payload_bytes = payload_bytes;
      const char* p = bytes.data() + at + collect::kChunkHeaderBytes;
      std::memcpy(&c.slot, p + 4, 4);
      const size_t n = (payload_bytes - collect::kRecordsHeaderBytes) / sizeof(abi::Record);
      c.records.resize(n);
      std::memcpy(c.records.data(), p + collect::kRecordsHeaderBytes, n * sizeof(abi::Record));
      out.push_back(std::move(c));
    }
    at += collect::kChunkHeaderBytes + payload_bytes;
  }
  return out;
}

using JournalCorruptionTest = RelTestOf<"jcorrupt">;

TEST_F(JournalCorruptionTest, OnlyTheCorruptChunksAreLostCountedAndTheExitIsNonZero) {
  // Per thread, paced over about 5 s: many passes, even on a loaded machine.
  constexpr uint64_t kOrders = 40000;
  constexpr int kThreads = 2;
  // No checkpoint: the damaged chunks must lie in what the restart reads
  // (a checkpoint after them would skip over them; that case is the
  // checkpoint's own test).
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "300",
                                         "--checkpoint-interval", "0"};
  const std::string journal = db() + ".ttjournal";
  // Rings of 1 Mi records hold everything while no collector runs: no drops.
  const pid_t producer = StartProducer(
      {"--mode", "seq", "--threads", std::to_string(kThreads), "--rings", "2", "--ring",
       "1048576", "--orders", std::to_string(kOrders), "--pace-every", "8", "--pace-us", "1000"},
      "producer.log");
  pid_t c = StartCollector(args);
  auto journal_bytes = [&] {
    struct stat st;
    return ::stat(journal.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : int64_t{0};
  };
  // Enough chunks to pick from (group commit makes a chunk of each ring per
  // 5 ms window, so their number, not the bytes, is what to wait for).
  ASSERT_TRUE(WaitFor(
      [&] {
        return journal_bytes() >= (512 << 10) && RecordsChunks(ReadFile(journal)).size() >= 60;
      },
      60s))
      << "the journal did not grow\n"
      << ReadFile(log());
  ASSERT_EQ(kill(c, SIGKILL), 0);
  EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
  Forget(c);

  // Pick two kRecords chunks, about a third and two thirds into the journal,
  // with later chunks of their rings in the journal (so that the ring index
  // ranges can tell what was lost) and with several records each.
  std::string bytes = ReadFile(journal);
  const std::vector<RecordsChunkAt> chunks = RecordsChunks(bytes);
  ASSERT_GE(chunks.size(), 40u);
  // A chunk whose ring has chunks before and after it: the ring index ranges
  // around it say what it held (a ring's first chunk lost is a loss of
  // unknown size, which the reader reports as such).
  auto ring_around = [&](size_t i) {
    bool before = false, after = false;
    for (size_t j = 0; j < chunks.size(); ++j) {
      if (chunks[j].slot != chunks[i].slot) continue;
      before |= j < i;
      after |= j > i + 1;
    }
    return before && after;
  };
  // The second pick's ring must also have a chunk between the two damaged
  // ones: otherwise its gap spans both skips and is (rightly) counted with
  // the first, and the second skip's line says "unknown" (archive.h).
  auto ring_between = [&](size_t first, size_t i) {
    for (size_t j = first + 1; j < i; ++j) {
      if (chunks[j].slot == chunks[i].slot) return true;
    }
    return false;
  };
  auto pick = [&](uint64_t near, size_t not_index) {
    size_t best = chunks.size();
    for (size_t i = 0; i + 10 < chunks.size(); ++i) {
      if (i == not_index || chunks[i].records.size() < 2 || !ring_around(i)) continue;
      if (not_index < chunks.size() && (i + 1 == not_index || not_index + 1 == i)) continue;
      if (not_index < chunks.size() && (i < not_index || !ring_between(not_index, i))) continue;
      const uint64_t d = chunks[i].offset > near ? chunks[i].offset - near : near - chunks[i].offset;
      const uint64_t best_d = best == chunks.size() ? UINT64_MAX
                              : chunks[best].offset > near ? chunks[best].offset - near
                                                           : near - chunks[best].offset;
      if (d < best_d) best = i;
    }
    return best;
  };
  const size_t ia = pick(bytes.size() / 3, chunks.size());
  const size_t ib = pick(2 * bytes.size() / 3, ia);
  ASSERT_LT(ia, chunks.size());
  ASSERT_LT(ib, chunks.size());
  const RecordsChunkAt& a = chunks[ia];
  const RecordsChunkAt& b = chunks[ib];
  // A: one payload byte flipped (inside a record). B: its type word zeroed.
  const uint64_t flip_at = a.offset + collect::kChunkHeaderBytes + collect::kRecordsHeaderBytes +
                           a.records.size() * sizeof(abi::Record) / 2;
  bytes[flip_at] = static_cast<char>(bytes[flip_at] ^ 0x5a);
  std::memset(bytes.data() + b.offset, 0, 4);
  {
    FILE* f = std::fopen(journal.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  // What those chunks held: records, and the orders they touch.
  const int64_t lost = static_cast<int64_t>(a.records.size() + b.records.size());
  std::map<uint64_t, int> lost_stamps;  // order id -> its records in the damaged chunks
  for (const RecordsChunkAt* ch : {&a, &b}) {
    for (const abi::Record& r : ch->records) ++lost_stamps[r.order_id];
  }
  int64_t vanished = 0, incomplete = 0;  // orders with both / one of their 2 stamps lost
  for (const auto& [id, n] : lost_stamps) (n >= 2 ? vanished : incomplete)++;
  absl::PrintF("damaged chunks at bytes %d (%d records, payload flip) and %d (%d records, "
               "header zeroed); %d orders lost entirely, %d incomplete\n",
               a.offset, a.records.size(), b.offset, b.records.size(), vanished, incomplete);

  c = StartCollector(args);
  EXPECT_EQ(WaitExit(producer, 120s), 0) << "producer";
  Forget(producer);
  ExpectSegmentsRemoved();
  kill(c, SIGTERM);
  EXPECT_EQ(WaitExit(c, 120s), 1) << "a run that lost records must exit 1\n" << ReadFile(log());
  Forget(c);

  const std::string text = ReadFile(log());
  EXPECT_EQ(CountOf(text, ": corrupt chunk at byte "), 2) << text;
  EXPECT_NE(text.find(absl::StrCat("corrupt chunk at byte ", a.offset, " ")), std::string::npos)
      << text;
  EXPECT_NE(text.find(absl::StrCat("corrupt chunk at byte ", b.offset, " ")), std::string::npos)
      << text;
  EXPECT_EQ(CountOf(text, "records lost (index gaps"), 2) << text;

  const int64_t records = int64_t{kOrders} * kThreads * 2;
  const int64_t orders = int64_t{kOrders} * kThreads;
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0) << "the run did not end cleanly";
  EXPECT_EQ(Counter(q, "journal_chunks_corrupt"), 2);
  EXPECT_EQ(Counter(q, "journal_records_lost"), lost);
  EXPECT_EQ(Counter(q, "index_gaps"), lost);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "drained"), records - lost);
  EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads"), records - lost);
  EXPECT_EQ(Counter(q, "orders_complete"), orders - vanished - incomplete);
  EXPECT_EQ(Counter(q, "orders_incomplete"), incomplete);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"),
            orders - vanished - incomplete);
  // Every order the damage did not touch is in the store, complete, once
  // (before and after the damaged chunks). The touched ones may be there
  // too: the store can have written them before the kill.
  ExpectStoreWriterKeptUp(q);
  std::string touched;
  for (const auto& [id, n] : lost_stamps) absl::StrAppend(&touched, touched.empty() ? "" : ",", id);
  EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id NOT IN (",
                               touched, ")")),
            orders - static_cast<int64_t>(lost_stamps.size()));
  EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(DISTINCT order_id) FROM orders WHERE order_id NOT IN (",
                               touched, ")")),
            orders - static_cast<int64_t>(lost_stamps.size()));
  {
    // Which untouched orders the store lacks, if any (ranges per thread).
    std::set<uint64_t> stored;
    for (const auto& row : q.Rows("SELECT order_id FROM orders WHERE complete=1")) {
      stored.insert(std::stoull(row[0]));
    }
    std::string missing;
    int64_t ranges = 0;
    for (int t = 0; t < kThreads && ranges < 20; ++t) {
      const uint64_t first = (uint64_t{static_cast<uint64_t>(t)} << 32) + 1;
      for (uint64_t id = first; id < first + kOrders; ++id) {
        if (stored.count(id) || lost_stamps.count(id)) continue;
        uint64_t end = id;
        while (end + 1 < first + kOrders && !stored.count(end + 1) && !lost_stamps.count(end + 1)) {
          ++end;
        }
        absl::StrAppend(&missing, " [", id, ", ", end, "]");
        id = end;
        if (++ranges >= 20) break;
      }
    }
    EXPECT_TRUE(missing.empty()) << "untouched orders missing from the store:" << missing
                                 << "; touched: [" << lost_stamps.begin()->first << ", "
                                 << lost_stamps.rbegin()->first << "]";
  }
  EXPECT_FALSE(FileExists(journal)) << "journal left after the run ended";
  absl::PrintF("FIGURE journal_corruption: records %d, lost %d (2 chunks), drained %d, "
               "orders complete %d of %d\n",
               records, lost, Counter(q, "drained"), Counter(q, "orders_complete"), orders);
}

}  // namespace
}  // namespace ticktrace::reliability
