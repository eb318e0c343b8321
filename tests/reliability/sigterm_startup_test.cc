// SIGTERM before the drain loop runs. docs/collector.md: SIGINT or SIGTERM
// "drains everything published, closes open orders (as incomplete), flushes
// the store, prints the summary, exits 0" — also when it arrives while the
// collector is still calibrating the TSC (right after start) or recovering the
// journal a SIGKILLed collector left. Checked for both: exit 0 within a
// generous bound (no hang), nothing lost (per ring drained + dropped =
// attempted, every order and stamp once), the run closed, no journal and no
// segment left. The journal tests also check that a restarted collector gets
// past records its predecessor journaled but did not consume (a bug they
// found: collector/drain/drainer.cc).

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

class SigtermStartupTest : public RelTest {
 protected:
  SigtermStartupTest() : RelTest("sigterm") {}
  explicit SigtermStartupTest(const std::string& what) : RelTest(what) {}

  // Starts the collector on this session and store without --tsc-hz: it
  // calibrates (~0.5 s of baseline rounds unless CPUID 0x15 gives the
  // frequency).
  pid_t StartCalibratingCollector(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kCollector, "--session", session_, "--db", db()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const pid_t pid = Spawn(argv, log());
    children_.Add(pid);
    return pid;
  }

  // Starts `n` producers that stamp `orders` orders (2 records each) into
  // rings of `ring` records and exit; returns their pids.
  std::vector<pid_t> RunProducers(int n, uint64_t orders, uint64_t ring) {
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
      pids.push_back(StartProducer({"--mode", "seq", "--rings", "2", "--ring", std::to_string(ring),
                                    "--orders", std::to_string(orders), "--base",
                                    std::to_string(uint64_t(i + 1) << 40)},
                                   absl::StrCat("producer.", i, ".log")));
    }
    return pids;
  }

  // Per ring (pid, tid), attempted: from the producer's output.
  std::map<std::pair<pid_t, uint32_t>, uint64_t> Attempted(const std::vector<pid_t>& pids) {
    std::map<std::pair<pid_t, uint32_t>, uint64_t> out;
    for (size_t i = 0; i < pids.size(); ++i) {
      const std::string text = ReadFile(dir_.File(absl::StrCat("producer.", i, ".log")));
      const auto kv = ParseProducerLog(text);
      auto it = kv.find("thread 0");
      if (it == kv.end()) {
        ADD_FAILURE() << "no count from producer " << i << ": " << text;
        continue;
      }
      unsigned tid = 0;
      unsigned long long attempted = 0;
      EXPECT_EQ(std::sscanf(it->second.c_str(), "tid %u attempted %llu", &tid, &attempted), 2);
      out[{pids[i], tid}] = attempted;
    }
    return out;
  }

  // After the collector's exit: one closed run that holds every ring exactly
  // (drained + dropped = attempted), every record once, and nothing left.
  void ExpectEverythingAccounted(const std::map<std::pair<pid_t, uint32_t>, uint64_t>& rings,
                                 int64_t restarts) {
    EXPECT_EQ(SegmentCount(session_), 0u) << "segments left\n" << ReadFile(log());
    EXPECT_FALSE(FileExists(db() + ".ttjournal")) << "journal left after a clean end";
    StoreQuery q(db());
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
    EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0) << "run not closed";
    EXPECT_EQ(Counter(q, "restarts"), restarts);
    ExpectStoreWriterKeptUp(q);
    uint64_t attempted = 0;
    int64_t drained_rows = 0;
    for (const auto& [key, n] : rings) {
      SCOPED_TRACE(absl::StrCat("pid ", key.first, " tid ", key.second));
      const auto rows = q.Rows(absl::StrCat(
          "SELECT p.process_id, t.drained, t.dropped FROM threads t JOIN processes p "
          "USING(run_id, process_id) WHERE p.pid=", key.first, " AND t.tid=", key.second));
      ASSERT_EQ(rows.size(), 1u) << "the ring is not in the store";
      const int64_t drained = std::stoll(rows[0][1]);
      EXPECT_EQ(drained + std::stoll(rows[0][2]), int64_t(n)) << "records unaccounted for";
      const std::string where =
          absl::StrCat(" FROM stamps WHERE process_id=", rows[0][0], " AND tid=", key.second);
      EXPECT_EQ(q.Int("SELECT COUNT(*)" + where), drained);
      EXPECT_EQ(q.Int("SELECT COUNT(*) FROM (SELECT DISTINCT order_id, tag" + where + ")"),
                drained)
          << "a record stored twice";
      attempted += n;
      drained_rows += drained;
    }
    EXPECT_EQ(Counter(q, "drained") + Counter(q, "dropped"), int64_t(attempted));
    EXPECT_EQ(Counter(q, "drained"), drained_rows);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"),
              q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"));
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes WHERE exited_utc_ns IS NULL"), 0);
  }
};

// Whether `pid` has a handler installed for `sig` (/proc/<pid>/status SigCgt).
bool CatchesSignal(pid_t pid, int sig) {
  const std::string status = ReadFile(absl::StrCat("/proc/", pid, "/status"));
  const size_t at = status.find("SigCgt:");
  if (at == std::string::npos) return false;
  const size_t end = status.find('\n', at);
  uint64_t mask = 0;
  const std::string hex = std::string(absl::StripAsciiWhitespace(
      absl::string_view(status).substr(at + 7, end - at - 7)));
  if (!absl::SimpleHexAtoi(hex, &mask)) return false;
  return (mask >> (sig - 1)) & 1;
}

TEST_F(SigtermStartupTest, SigtermWhileCalibratingDrainsEverythingAndExitsZero) {
  // Stale segments wait for the collector: rings of 4 Ki records that
  // overflowed (drops) and processes that exited.
  const std::vector<pid_t> producers = RunProducers(2, 20000, 4096);
  for (pid_t p : producers) {
    ASSERT_EQ(WaitExit(p, 60s), 0) << "producer";
    Forget(p);
  }
  const auto rings = Attempted(producers);
  ASSERT_EQ(rings.size(), producers.size());
  ASSERT_EQ(SegmentCount(session_), producers.size());

  const pid_t c = StartCalibratingCollector({"--pipeline", "a,b", "--order-timeout-ms", "200"});
  // The handler is in place (RunCollector installs it first thing) and the
  // calibration report is not printed yet: the collector is calibrating.
  ASSERT_TRUE(WaitFor([&] { return CatchesSignal(c, SIGTERM); }, 30s)) << ReadFile(log());
  const bool still_calibrating = ReadFile(log()).find("TSC") == std::string::npos;
  ASSERT_EQ(kill(c, SIGTERM), 0);
  const int rc = WaitExit(c, 60s);
  Forget(c);
  EXPECT_EQ(rc, 0) << "SIGTERM during calibration: exit " << rc << "\n" << ReadFile(log());
  ExpectEverythingAccounted(rings, /*restarts=*/0);
  absl::PrintF("FIGURE sigterm_calibrating: signal %s the calibration report; exit %d; "
              "%zu rings accounted exactly\n",
              still_calibrating ? "before" : "after (calibration was instant)", rc, rings.size());
}

// The journal a SIGKILLed collector left, in the worst state it can leave:
// killed between the journal's fdatasync and the ring commit, so that each
// ring's last batch is in the journal but not consumed from the ring.
//
// Producers stamp kOrders orders each into rings that hold them all and stay
// alive (--hold) until the first collector has drained everything; it is
// SIGKILLed, the producers exit, and each ring's read_index is moved back by
// one batch (a pass copies at most one batch per ring, journals it, then
// commits: [C - batch, C) of a ring committed up to C is in the journal).
// The next collector must skip those records and still consume them, mark the
// processes exited and remove their segments.
class JournalRecoveryTest : public SigtermStartupTest {
 protected:
  // A session of its own per test: t_rel_jrecover<n>_<pid>.
  JournalRecoveryTest() : SigtermStartupTest(absl::StrCat("jrecover", ++tests_)) {}
  static inline int tests_ = 0;

  static constexpr uint64_t kOrders = 80000;  // 160 000 records per ring
  static constexpr uint64_t kBatch = 65536;   // the collector's batch per ring and pass

  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      producers_.push_back(StartProducer(
          {"--mode", "seq", "--rings", "2", "--ring", std::to_string(1 << 20), "--orders",
           std::to_string(kOrders), "--base", std::to_string(uint64_t(i + 1) << 40), "--hold",
           "1"},
          absl::StrCat("producer.", i, ".log")));
    }
    std::vector<std::unique_ptr<SegmentReader>> segments;
    for (pid_t p : producers_) {
      segments.push_back(OpenSegment(p));
      ASSERT_NE(segments.back(), nullptr);
    }
    // Everything published and consumed: the journal holds every record.
    const pid_t c = StartCollector(args_);
    ASSERT_TRUE(WaitFor(
        [&] {
          for (const auto& seg : segments) {
            uint64_t left = 2 * kOrders;
            for (uint32_t s = 0; s < seg->info().slot_count; ++s) {
              const SlotView v = seg->Slot(s);
              if (v.generation != 0 && v.read_index == 2 * kOrders) left = 0;
            }
            if (left != 0) return false;
          }
          return true;
        },
        60s))
        << ReadFile(log());
    ASSERT_EQ(kill(c, SIGKILL), 0);
    EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
    Forget(c);
    ASSERT_TRUE(FileExists(db() + ".ttjournal"));
    journal_bytes_ = static_cast<int64_t>(ReadFile(db() + ".ttjournal").size());
    for (pid_t p : producers_) {
      ASSERT_EQ(kill(p, SIGTERM), 0);
      ASSERT_EQ(WaitExit(p, 30s), 0);
      Forget(p);
    }
    rings_ = Attempted(producers_);
    ASSERT_EQ(rings_.size(), producers_.size());
    for (const auto& seg : segments) {
      for (uint32_t s = 0; s < seg->info().slot_count; ++s) {
        const SlotView v = seg->Slot(s);
        if (v.generation == 0) continue;
        ASSERT_EQ(v.read_index, 2 * kOrders);
        seg->Commit(s, v.read_index - kBatch);
      }
    }
  }

  const std::vector<std::string> args_ = {"--pipeline", "a,b", "--order-timeout-ms", "200"};
  std::vector<pid_t> producers_;
  std::map<std::pair<pid_t, uint32_t>, uint64_t> rings_;
  int64_t journal_bytes_ = 0;
};

TEST_F(JournalRecoveryTest, SigtermWhileRecoveringTheJournalLosesNothing) {
  // SIGTERM as soon as the collector says it resumes (it prints that right
  // before it replays the journal).
  const size_t log_before = ReadFile(log()).size();
  const pid_t c = StartCollector(args_, /*wait_ready=*/false);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(log()).find("resuming run", log_before) != std::string::npos; }, 60s))
      << ReadFile(log());
  ASSERT_EQ(kill(c, SIGTERM), 0);
  const int rc = WaitExit(c, 60s);
  Forget(c);
  EXPECT_EQ(rc, 0) << "SIGTERM during journal recovery: exit " << rc << "\n" << ReadFile(log());
  ExpectEverythingAccounted(rings_, /*restarts=*/1);
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "orders_complete"), int64_t(2 * kOrders));
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='a->b'"), int64_t(2 * kOrders));
  absl::PrintF("FIGURE sigterm_recovering: journal of %lld bytes left by a SIGKILL between "
              "sync and commit (%llu records journaled, not consumed); SIGTERM at \"resuming "
              "run\"; exit %d; %lld of %llu records drained, %lld orders complete\n",
              static_cast<long long>(journal_bytes_),
              static_cast<unsigned long long>(rings_.size() * kBatch), rc, Counter(q, "drained"),
              static_cast<unsigned long long>(4 * kOrders), Counter(q, "orders_complete"));
}

// The same journal without the SIGTERM: the restarted collector must get past
// the journaled records on its own (they are all it finds in the rings) and
// remove the segments of the exited producers.
TEST_F(JournalRecoveryTest, RestartedCollectorConsumesWhatItsPredecessorJournaled) {
  const pid_t c = StartCollector(args_);
  ExpectSegmentsRemoved(30s);
  StopCollector(c);
  ExpectEverythingAccounted(rings_, /*restarts=*/1);
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "orders_complete"), int64_t(2 * kOrders));
}

}  // namespace
}  // namespace ticktrace::reliability
