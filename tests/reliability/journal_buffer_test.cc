// The journal as the buffer between the drain and the analysis
// (docs/collector.md, "The journal as the buffer"). The collector's test hook
// TICKTRACE_TEST_PAUSE_ANALYSIS_WHILE=FILE (collector/app/options.h) keeps its
// analysis thread from reading anything while FILE exists, as an analysis
// far behind would; the drain must not care:
//
// - with room in the journal, every record is drained (the producers' dead
//   segments removed) while the analysis reads nothing, and nothing drops;
//   the bounded in-memory queue this replaced held 16 MiB, less than the
//   25.6 MB drained here, so it stopped the drain and the rings overflowed;
// - past --journal-cap the drain stops: the small rings overflow, the
//   producers drop and count, the collector says so once on stderr; once the
//   analysis reads again its checkpoints free the journal and the drain goes
//   on; drained + dropped = attempted;
// - a collector SIGKILLed and restarted drains again before its analysis has
//   read the journal's tail (the analysis is paused from the start): the
//   restart waits for neither the analysis nor the store; afterwards every
//   order is stored exactly once.
//
// No timing asserts: each condition is waited for with a generous bound.

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

class JournalBufferTest : public RelTest {
 protected:
  JournalBufferTest() : RelTest("jbuf") {}

  std::string pause_file() const { return dir_.File("pause-analysis"); }
  std::string journal() const { return db() + ".ttjournal"; }

  void PauseAnalysis() {
    FILE* f = fopen(pause_file().c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
  }
  void ResumeAnalysis() { ASSERT_EQ(unlink(pause_file().c_str()), 0); }

  // The collector, its analysis paused by the hook while pause_file() exists.
  pid_t StartPausableCollector(const std::vector<std::string>& extra) {
    setenv("TICKTRACE_TEST_PAUSE_ANALYSIS_WHILE", pause_file().c_str(), 1);
    const pid_t pid = StartCollector(extra);
    unsetenv("TICKTRACE_TEST_PAUSE_ANALYSIS_WHILE");
    return pid;
  }

  // The records the producer's threads attempted, from its log.
  int64_t Attempted(const std::string& log_name) {
    int64_t attempted = 0;
    for (const auto& [key, value] : ParseProducerLog(ReadFile(dir_.File(log_name)))) {
      if (key.rfind("thread ", 0) != 0) continue;
      const size_t at = value.find("attempted ");
      EXPECT_NE(at, std::string::npos) << value;
      if (at != std::string::npos) attempted += std::stoll(value.substr(at + 10));
    }
    return attempted;
  }

  // Sum of the read indices of a segment's rings.
  static uint64_t ReadTotal(SegmentReader& seg) {
    uint64_t n = 0;
    for (uint32_t s = 0; s < seg.info().slot_count; ++s) n += seg.Slot(s).read_index;
    return n;
  }

  // The store's rows against its counters, for a run whose store kept up.
  static void ExpectRowsMatchCounters(StoreQuery& q) {
    ExpectStoreWriterKeptUp(q);
    const int64_t complete = Counter(q, "orders_complete");
    const int64_t incomplete = Counter(q, "orders_incomplete");
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), complete + incomplete);
    EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), complete + incomplete);
    EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), complete);
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), Counter(q, "drained"));
  }
};

TEST_F(JournalBufferTest, DrainsEverythingWhileTheAnalysisReadsNothing) {
  constexpr uint64_t kOrders = 200000;  // per thread: 2 threads x 2 records x 32 B = 25.6 MB
  PauseAnalysis();
  const pid_t c = StartPausableCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const pid_t producer =
      StartProducer({"--mode", "seq", "--threads", "2", "--rings", "2", "--ring", "65536",
                     "--orders", std::to_string(kOrders), "--pace-every", "16", "--pace-us", "200"},
                    "producer.log");
  EXPECT_EQ(WaitExit(producer, 180s), 0) << "producer";
  Forget(producer);
  // Drained to the end, the exit noted and the segment removed: all by the
  // drain stage, while the analysis has read nothing.
  ExpectSegmentsRemoved(120s);
  EXPECT_TRUE(FileExists(pause_file()));
  struct stat st {};
  ASSERT_EQ(stat(journal().c_str(), &st), 0);
  EXPECT_GE(st.st_size, int64_t{kOrders} * 2 * 2 * 32) << "the journal holds every record";

  ResumeAnalysis();
  StopCollector(c);
  const int64_t attempted = Attempted("producer.log");
  EXPECT_EQ(attempted, int64_t{kOrders} * 2 * 2);
  StoreQuery q(db());
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0) << "the run did not end cleanly";
  EXPECT_EQ(Counter(q, "dropped"), 0) << "the rings overflowed while the journal had room";
  EXPECT_EQ(Counter(q, "drained"), attempted);
  EXPECT_EQ(CountOf(ReadFile(log()), "the journal reached its cap"), 0) << ReadFile(log());
  EXPECT_EQ(Counter(q, "orders_complete"), int64_t{kOrders} * 2);
  ExpectRowsMatchCounters(q);
  EXPECT_FALSE(FileExists(journal())) << "journal left after a clean end";
}

TEST_F(JournalBufferTest, PastTheCapTheRingsHoldThenTheProducersCount) {
  constexpr uint64_t kOrders = 100000;  // per thread: 12.8 MB, three times the cap
  PauseAnalysis();
  const pid_t c =
      StartPausableCollector({"--pipeline", "a,b", "--order-timeout-ms", "300", "--journal-cap",
                              "4MiB", "--checkpoint-interval", "500ms"});
  // Rings of 8 Ki records: a drain stopped at the cap makes them overflow.
  const pid_t producer =
      StartProducer({"--mode", "seq", "--threads", "2", "--rings", "2", "--ring", "8192",
                     "--orders", std::to_string(kOrders), "--pace-every", "16", "--pace-us", "200"},
                    "producer.log");
  EXPECT_TRUE(WaitFor(
      [&] { return ReadFile(log()).find("the journal reached its cap") != std::string::npos; },
      120s))
      << "the drain did not stop at the cap\n"
      << ReadFile(log());
  EXPECT_EQ(WaitExit(producer, 180s), 0) << "producer";
  Forget(producer);
  ResumeAnalysis();  // checkpoints free the journal; the drain goes on
  ExpectSegmentsRemoved(120s);
  StopCollector(c);

  const std::string text = ReadFile(log());
  EXPECT_EQ(CountOf(text, "the journal reached its cap"), 1) << "said once\n" << text;
  const int64_t attempted = Attempted("producer.log");
  EXPECT_EQ(attempted, int64_t{kOrders} * 2 * 2);
  StoreQuery q(db());
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0) << "the run did not end cleanly";
  const int64_t drained = Counter(q, "drained"), dropped = Counter(q, "dropped");
  EXPECT_GT(dropped, 0) << "the rings did not overflow: did the drain go past the cap?";
  EXPECT_EQ(drained + dropped, attempted) << "drained " << drained << ", dropped " << dropped;
  EXPECT_EQ(q.Int("SELECT SUM(dropped) FROM threads"), dropped);
  ExpectRowsMatchCounters(q);
  EXPECT_FALSE(FileExists(journal())) << "journal left after a clean end";
  absl::PrintF("FIGURE journal_cap: attempted %d, drained %d, dropped %d\n", attempted, drained,
               dropped);
}

TEST_F(JournalBufferTest, RestartDrainsBeforeItsAnalysisReadsTheTail) {
  constexpr uint64_t kOrders = 60000;  // per thread, paced over about 8 s
  const std::vector<std::string> args = {
      "--pipeline", "a,b", "--order-timeout-ms", "300", "--checkpoint-interval", "500ms"};
  pid_t c = StartCollector(args);
  const pid_t producer =
      StartProducer({"--mode", "seq", "--threads", "2", "--rings", "2", "--ring", "1048576",
                     "--orders", std::to_string(kOrders), "--pace-every", "8", "--pace-us", "1000"},
                    "producer.log");
  ASSERT_TRUE(WaitCollectorReads(producer)) << ReadFile(log());
  ASSERT_TRUE(WaitFor([&] { return FileExists(db() + ".ttcheckpoint"); }, 60s)) << ReadFile(log());
  std::unique_ptr<SegmentReader> seg = OpenSegment(producer);
  ASSERT_NE(seg, nullptr);
  ASSERT_EQ(kill(c, SIGKILL), 0);
  EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
  Forget(c);
  const uint64_t read_at_kill = ReadTotal(*seg);

  PauseAnalysis();
  c = StartPausableCollector(args);
  // The rings move again while the analysis has not read the journal's tail.
  EXPECT_TRUE(WaitFor([&] { return ReadTotal(*seg) > read_at_kill; }, 60s))
      << "the restarted collector does not drain\n"
      << ReadFile(log());
  const std::string before = ReadFile(log());
  EXPECT_NE(before.find("draining again"), std::string::npos) << before;
  EXPECT_EQ(CountOf(before, "recovered in "), 0)
      << "the analysis was paused: it cannot have read the tail yet\n"
      << before;
  ResumeAnalysis();
  EXPECT_TRUE(
      WaitFor([&] { return ReadFile(log()).find("recovered in ") != std::string::npos; }, 60s))
      << ReadFile(log());
  EXPECT_EQ(WaitExit(producer, 120s), 0) << "producer";
  Forget(producer);
  seg.reset();
  ExpectSegmentsRemoved();
  StopCollector(c);

  const int64_t n = int64_t{kOrders} * 2;
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(Counter(q, "restarts"), 1);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "drained"), 2 * n);
  EXPECT_EQ(Counter(q, "orders_complete"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), n) << "every order stored exactly once";
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), n);
  EXPECT_EQ(q.Int("SELECT SUM(i.count) FROM intervals i JOIN stages s USING(run_id, stage_id) "
                  "WHERE s.name='a->b'"),
            n)
      << "interval statistics count each order once";
  ExpectRowsMatchCounters(q);
  EXPECT_FALSE(FileExists(journal())) << "journal left after a clean end";
}

}  // namespace
}  // namespace ticktrace::reliability
