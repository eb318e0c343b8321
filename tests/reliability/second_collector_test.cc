// A second collector started on a session that a running collector drains
// (an operator's double start, a supervisor restarting before the old one is
// gone). The ring protocol has one consumer per ring (abi.h); two would split
// records between two stores (or, on the same store, append to one journal
// from two processes). Exactly-once (docs/collector.md#exactly-once-into-the-store) needs the second one to
// refuse: one line on stderr, exit 1, nothing written, the first unaffected.

#include <thread>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

class SecondCollectorTest : public RelTest {
 protected:
  SecondCollectorTest() : RelTest("second") {}

  // Runs a second collector on this session with `db`; expects it to refuse.
  void ExpectSecondRefused(const std::string& db, const std::string& log_name) {
    const std::vector<std::string> argv = {kCollector, "--session", session_, "--db", db,
                                           "--tsc-hz", "2e9", "--pipeline", "a,b",
                                           "--duration-s", "3"};
    const pid_t second = Spawn(argv, dir_.File(log_name));
    const int rc = WaitExit(second, 30s);
    EXPECT_EQ(rc, 1) << "a second collector ran on a drained session\n"
                     << ReadFile(dir_.File(log_name));
  }
};

// BUG (collector/app/collector.cc RunLive; no lock on the session or the store):
// a second collector on the same session and store "resumes" the running
// one's journal and drains the same rings; with another store it drains them
// too, splitting the records between two stores. Neither is refused.
TEST_F(SecondCollectorTest, SecondCollectorOnALiveSessionIsRefused) {
  constexpr uint64_t kOrders = 20000;
  const pid_t c = StartCollector({"--pipeline", "a,b", "--order-timeout-ms", "300"});
  const pid_t p = StartProducer({"--mode", "seq", "--rings", "2", "--ring", "1048576", "--orders",
                                 std::to_string(kOrders), "--pace-every", "8", "--pace-us", "500"},
                                "producer.log");
  // The first collector drains the producer (a ring's read_index moved).
  ASSERT_TRUE(WaitCollectorReads(p)) << ReadFile(log());
  ExpectSecondRefused(db(), "second_same_db.log");
  ExpectSecondRefused(dir_.File("other.db"), "second_other_db.log");
  EXPECT_FALSE(FileExists(dir_.File("other.db")));
  EXPECT_EQ(WaitExit(p, 120s), 0);
  Forget(p);
  ExpectSegmentsRemoved();
  StopCollector(c);
  StoreQuery q(db());
  EXPECT_EQ(Counter(q, "drained"), int64_t(2 * kOrders));
  EXPECT_EQ(Counter(q, "index_gaps"), 0);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), int64_t(kOrders));
}

}  // namespace
}  // namespace ticktrace::reliability
