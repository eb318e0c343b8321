// docs/reliability.md#the-table, "collector killed and restarted": the collector is SIGKILLed at
// random moments (some while it is still recovering from the previous kill)
// and started again on the same session and store, at least 5 times during
// one run of two producers with known output. Nothing published is lost and
// nothing counts twice: every order once, one a->b sample per order, every
// stamp once, and the counters add up. Budgets too: every interval is
// judged once, on all its samples, however the kills fall (a p50 under 1 ns
// breaks in every interval of two samples or more; a max within an hour
// holds in every interval).

#include <sys/stat.h>

#include <cstdio>
#include <thread>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using CollectorRestartTest = RelTestOf<"crestart">;

TEST_F(CollectorRestartTest, KilledAndRestartedLosesAndDuplicatesNothing) {
  const int kKills = 6 * Scale();
  constexpr int kProducers = 2;
  constexpr uint64_t kOrders = 60000;  // per producer, paced over several seconds
  std::mt19937_64 rng(Seed());
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "500",
                                         "--budget", "a->b:p50<1ns", "--budget", "a->b:max<=1h"};

  // Rings of 1 Mi records hold every record a producer writes: no drops while
  // no collector runs, so drained must equal everything.
  std::vector<pid_t> producers;
  std::vector<std::unique_ptr<SegmentReader>> segments;
  for (int i = 0; i < kProducers; ++i) {
    producers.push_back(StartProducer(
        {"--mode", "seq", "--rings", "2", "--ring", "1048576", "--orders",
         std::to_string(kOrders * Scale()), "--base", std::to_string(uint64_t(i + 1) << 40),
         "--pace-every", "8", "--pace-us", "500"},
        absl::StrCat("producer.", i, ".log")));
  }
  pid_t c = StartCollector(args);
  int early_kills = 0;
  for (int k = 0; k < kKills; ++k) {
    // Every third kill lands during start-up/journal recovery, the others
    // at a random moment of the drain loop.
    const bool early = k % 3 == 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(early ? 0 : 200 + rng() % 600));
    if (early) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
      ++early_kills;
    }
    ASSERT_EQ(kill(c, SIGKILL), 0);
    EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
    Forget(c);
    c = StartCollector(args, /*wait_ready=*/k % 3 != 1);
  }
  // The last one runs to the end.
  EXPECT_TRUE(WaitFor([&] { return ReadFile(log()).rfind("order timeout") != std::string::npos; },
                      60s));
  for (pid_t p : producers) {
    EXPECT_EQ(WaitExit(p, 120s), 0) << "producer";
    Forget(p);
  }
  ExpectSegmentsRemoved();
  StopCollector(c);

  const int64_t n = int64_t(kOrders) * Scale() * kProducers;
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1) << "a restart opened a new run";
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0);
  // Every resume counts, the moment it starts (before its recovery): each
  // says so in the log right after; one killed in between counts unsaid.
  const int64_t said = CountOf(ReadFile(log()), "resuming run ");
  EXPECT_GE(said, kKills - early_kills);
  EXPECT_GE(Counter(q, "restarts"), said);
  EXPECT_LE(Counter(q, "restarts"), said + 1);
  EXPECT_EQ(Counter(q, "drained"), 2 * n);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "orders_complete"), n);
  EXPECT_EQ(Counter(q, "orders_incomplete"), 0);
  EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads"), 2 * n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), n);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), n);
  ExpectStoreWriterKeptUp(q);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM samples WHERE stage='a->b'"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM samples WHERE stage='a->b'"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), 2 * n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM (SELECT DISTINCT order_id, tag FROM stamps)"), 2 * n);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM processes WHERE exited_utc_ns IS NOT NULL"), kProducers);
  EXPECT_FALSE(FileExists(db() + ".ttjournal")) << "journal left after a clean end";
  const std::string stage_intervals =
      "FROM intervals i JOIN stages s ON s.run_id = i.run_id AND s.stage_id = i.stage_id "
      "AND s.name = 'a->b'";
  const int64_t with_samples = q.Int("SELECT COUNT(*) " + stage_intervals + " WHERE i.count >= 1");
  const int64_t two_or_more = q.Int("SELECT COUNT(*) " + stage_intervals + " WHERE i.count >= 2");
  EXPECT_GE(two_or_more, 3);
  EXPECT_EQ(Counter(q, "budget_judged:a->b:p50<1ns"), two_or_more);
  EXPECT_EQ(Counter(q, "budget_breaches:a->b:p50<1ns"), two_or_more);
  EXPECT_EQ(Counter(q, "budget_unjudged:a->b:p50<1ns"), with_samples - two_or_more);
  EXPECT_EQ(Counter(q, "budget_judged:a->b:max<=1h"), with_samples);
  EXPECT_EQ(Counter(q, "budget_breaches:a->b:max<=1h"), 0);
  EXPECT_EQ(Counter(q, "budget_breaches"), two_or_more);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM budget_breaches"), two_or_more);
  // Each on the whole interval: the breach's samples are the interval's.
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM budget_breaches b JOIN intervals i ON i.run_id = b.run_id "
                  "AND i.start_utc_ns = b.interval_start_utc_ns JOIN stages s ON s.run_id = "
                  "i.run_id AND s.stage_id = i.stage_id AND s.name = 'a->b' WHERE b.samples = "
                  "i.count"),
            two_or_more);
  absl::PrintF("FIGURE collector_restart: kills %d (%d during start-up), records %lld, drained "
              "%lld, duplicates_skipped %lld, orders %lld, lost %lld, counted twice %lld\n",
              kKills, early_kills, static_cast<long long>(2 * n), Counter(q, "drained"),
              Counter(q, "duplicates_skipped"), q.Int("SELECT COUNT(*) FROM orders"),
              static_cast<long long>(2 * n - Counter(q, "drained")),
              q.Int("SELECT COUNT(*) - COUNT(DISTINCT order_id) FROM orders"));
}

// Three restarts, each after the previous collector was up: the restarts
// counter says 3 (it said 1 after any number of restarts before).
TEST_F(CollectorRestartTest, RestartsCountsEveryResume) {
  const std::vector<std::string> args = {"--pipeline", "a,b"};
  // Up: its journal holds the run's info (written durably after the
  // calibration report that StartCollector waits for).
  auto journal_started = [&] {
    struct stat st;
    return ::stat((db() + ".ttjournal").c_str(), &st) == 0 && st.st_size >= 256;
  };
  pid_t c = StartCollector(args);
  ASSERT_TRUE(WaitFor(journal_started, 30s));
  for (int k = 1; k <= 3; ++k) {
    ASSERT_EQ(kill(c, SIGKILL), 0);
    EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
    Forget(c);
    c = StartCollector(args);
    EXPECT_TRUE(WaitFor(
        [&] { return ReadFile(log()).find(absl::StrCat("(restart ", k, ")")) != std::string::npos; },
        30s))
        << ReadFile(log());
  }
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "restarts"), 3);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
}

// docs/collector.md#checkpoints-and-restart: a checkpoint is taken, the journal before it is freed (its disk
// use falls below its length), and a restart replays only the journal after
// the checkpoint; the resumed run's totals equal what the producers wrote,
// in the counters, in the stage statistics, in the interval statistics (a
// resume once added its re-emitted orders' deltas a second time) and in the
// detail.
TEST_F(CollectorRestartTest, CheckpointFreesTheJournalAndRestartReplaysOnlyItsTail) {
  constexpr int kProducers = 2;
  constexpr uint64_t kOrders = 100000;  // per producer, paced over about 8 s
  const std::vector<std::string> args = {"--pipeline", "a,b", "--order-timeout-ms", "300",
                                         "--checkpoint-interval", "1"};
  std::vector<pid_t> producers;
  for (int i = 0; i < kProducers; ++i) {
    producers.push_back(StartProducer(
        {"--mode", "seq", "--rings", "2", "--ring", "1048576", "--orders",
         std::to_string(kOrders), "--base", std::to_string(uint64_t(i + 1) << 40),
         "--pace-every", "8", "--pace-us", "600"},
        absl::StrCat("producer.", i, ".log")));
  }
  pid_t c = StartCollector(args);
  const std::string journal = db() + ".ttjournal";
  const std::string checkpoint = db() + ".ttcheckpoint";
  // Freed: the journal takes less disk than its length (a hole before the
  // checkpoint), after a few checkpoints.
  struct stat st {};
  auto freed = [&] {
    return FileExists(checkpoint) && ::stat(journal.c_str(), &st) == 0 &&
           static_cast<int64_t>(st.st_blocks) * 512 + 65536 < st.st_size &&
           st.st_size > (4 << 20);
  };
  ASSERT_TRUE(WaitFor(freed, 60s)) << ReadFile(log());
  const int64_t length_at_kill = st.st_size;
  ASSERT_EQ(kill(c, SIGKILL), 0);
  EXPECT_EQ(WaitExit(c, 10s), 128 + SIGKILL);
  Forget(c);
  c = StartCollector(args);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log()).find("recovered in ") != std::string::npos; },
                      60s));
  const std::string text = ReadFile(log());
  const size_t at = text.find("recovered in ");
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("after the checkpoint at byte"), std::string::npos) << line;
  // "recovered in S s: B journal bytes replayed after ...": B is the tail only.
  const size_t colon = line.find(": ");
  const int64_t replayed = std::stoll(line.substr(colon + 2));
  EXPECT_LT(replayed, length_at_kill / 2) << line << "; journal length at the kill " << length_at_kill;

  for (pid_t p : producers) {
    EXPECT_EQ(WaitExit(p, 120s), 0) << "producer";
    Forget(p);
  }
  ExpectSegmentsRemoved();
  StopCollector(c);
  EXPECT_FALSE(FileExists(journal)) << "journal left after a clean end";
  EXPECT_FALSE(FileExists(checkpoint)) << "checkpoint left after a clean end";

  const int64_t n = int64_t(kOrders) * kProducers;
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(Counter(q, "restarts"), 1);
  EXPECT_EQ(Counter(q, "drained"), 2 * n);
  EXPECT_EQ(Counter(q, "dropped"), 0);
  EXPECT_EQ(Counter(q, "orders_complete"), n);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), n);
  EXPECT_EQ(q.Int("SELECT SUM(i.count) FROM intervals i JOIN stages s USING(run_id, stage_id) "
                  "WHERE s.name='a->b'"),
            n)
      << "interval statistics count each order once";
  EXPECT_EQ(q.Int("SELECT SUM(orders) FROM interval_detail"), n);
  ExpectStoreWriterKeptUp(q);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), n);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), n);
  EXPECT_EQ(Counter(q, "store_stats_through"), n);
  absl::PrintF("FIGURE checkpoint_restart: journal length %lld at the kill, %lld bytes replayed "
               "on restart\n",
               static_cast<long long>(length_at_kill), static_cast<long long>(replayed));
}

}  // namespace
}  // namespace ticktrace::reliability
