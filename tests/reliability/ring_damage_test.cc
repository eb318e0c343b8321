// docs/security.md, threat model, "a crafted ring beside genuine ones": a
// hostile process publishes a segment of the real layout whose four rings
// have impossible indices (tests/reliability/hostile_ring.cc: an index range
// that wraps 2^64, a read index put back after each commit, more waiting
// than the ring holds, write behind read) and rewrites them every 2 ms,
// while a genuine producer writes 2 threads x 20,000 orders beside it.
// A bad ring costs only itself: each of the four is named once on stderr
// (segment, pid, slot) and counted (slots_corrupt 4), no chunk is malformed,
// and every genuine order is stored. Run as the collector's own uid, and as
// another user the collector is told to trust (--allow-uid; a throwaway
// account made with useradd and removed at the end).

#include <pwd.h>
#include <signal.h>

#include <cstdio>
#include <optional>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"

namespace ticktrace::reliability {
namespace {

const std::string kHostile = TICKTRACE_HOSTILE_RING_BIN;

// A local account made for the test (useradd) and removed with it (userdel).
class ThrowawayUser {
 public:
  ThrowawayUser() : name_(absl::StrCat("ttring", getpid())) {
    if (geteuid() != 0) {
      why_not_ = "not root: cannot create a user (run as root, as CI does)";
      return;
    }
    const std::string add = absl::StrCat("useradd --system --no-create-home --no-user-group "
                                         "--shell /usr/sbin/nologin ",
                                         name_, " >/dev/null 2>&1");
    if (std::system(add.c_str()) != 0) {
      why_not_ = "useradd failed (no shadow tools, or a read-only /etc?)";
      return;
    }
    created_ = true;
    const passwd* pw = getpwnam(name_.c_str());
    if (pw == nullptr) {
      why_not_ = "useradd made no passwd entry";
      return;
    }
    account_.uid = pw->pw_uid;
    account_.gid = pw->pw_gid;
  }
  ~ThrowawayUser() {
    if (created_) {
      const int rc = std::system(absl::StrCat("userdel -f ", name_, " >/dev/null 2>&1").c_str());
      if (rc != 0) std::fprintf(stderr, "warning: userdel %s failed\n", name_.c_str());
    }
  }
  ThrowawayUser(const ThrowawayUser&) = delete;
  ThrowawayUser& operator=(const ThrowawayUser&) = delete;

  // Why the account cannot be used, or "" when it can.
  const std::string& why_not() const { return why_not_; }
  const Account& account() const { return account_; }

 private:
  std::string name_;
  std::string why_not_;
  bool created_ = false;
  Account account_;
};

class RingDamageTest : public RelTest {
 protected:
  RingDamageTest() : RelTest("ringdmg") {}

  // The whole scenario; `other` runs the hostile process as that user.
  void Run(const std::optional<Account>& other) {
    constexpr uint64_t kOrders = 20000;  // per genuine thread
    constexpr uint64_t kBase = uint64_t{1} << 40;
    std::vector<std::string> extra = {"--pipeline", "a,b", "--order-timeout-ms", "300"};
    if (other.has_value()) {
      extra.push_back("--allow-uid");
      extra.push_back(std::to_string(other->uid));
    }
    const pid_t c = StartCollector(extra);
    std::vector<std::string> hostile_argv = {kHostile, "--session", session_};
    if (other.has_value()) {
      hostile_argv.insert(hostile_argv.begin(),
                          {"/usr/bin/setpriv", absl::StrCat("--reuid=", other->uid),
                           absl::StrCat("--regid=", other->gid), "--clear-groups"});
    }
    const pid_t hostile = Spawn(hostile_argv, dir_.File("hostile.log"));
    children_.Add(hostile);
    const std::string hostile_segment = absl::StrCat("ticktrace.", session_, ".", hostile);
    ASSERT_TRUE(WaitFor(
        [&] { return ReadFile(dir_.File("hostile.log")).find("segment ") != std::string::npos; },
        20s))
        << ReadFile(dir_.File("hostile.log"));
    const pid_t genuine = StartProducer(
        {"--mode", "seq", "--threads", "2", "--rings", "4", "--orders", std::to_string(kOrders),
         "--base", std::to_string(kBase), "--pace-every", "16", "--pace-us", "300"},
        "genuine.log");
    EXPECT_EQ(WaitExit(genuine, 120s), 0);
    Forget(genuine);
    // Every bad ring is named, each once, while the attacker keeps going.
    EXPECT_TRUE(WaitFor([&] { return CountOf(ReadFile(log()), "ring no longer drained") >= 4; },
                        30s))
        << ReadFile(log());
    kill(hostile, SIGTERM);
    EXPECT_EQ(WaitExit(hostile, 10s), 0);
    Forget(hostile);
    ExpectSegmentsRemoved();
    StopCollector(c);

    const std::string text = ReadFile(log());
    for (int slot = 0; slot < 4; ++slot) {
      const std::string named = absl::StrCat("segment ", hostile_segment, " slot ", slot, ": ");
      EXPECT_EQ(CountOf(text, named), 1) << named << "\n" << text;
    }
    EXPECT_EQ(CountOf(text, absl::StrCat("(pid ", hostile, "): ring no longer drained")), 4)
        << text;
    EXPECT_EQ(CountOf(text, "index overflow"), 0) << text;

    StoreQuery q(db());
    ExpectStoreWriterKeptUp(q);
    // By hand: 2 threads x 20,000 orders, ids kBase + (t << 32) + 1..20,000,
    // each stamped a then b: 40,000 complete orders, 80,000 stamps.
    const std::string id =
        q.Text(absl::StrCat("SELECT process_id FROM processes WHERE pid=", genuine));
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id "
                                 "BETWEEN ",
                                 kBase + 1, " AND ", kBase + (uint64_t{1} << 32) + kOrders)),
              int64_t{2 * kOrders});
    EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps WHERE process_id=" + id), int64_t{4 * kOrders});
    EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads WHERE process_id=" + id),
              int64_t{4 * kOrders});
    // The hostile segment: slot 1's 16 records (8 orders) were drained once,
    // before its read index was put back; nothing else of it.
    EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE order_id BETWEEN ",
                                 kIntruderOrderBase + 1, " AND ", kIntruderOrderBase + 8)),
              8);
    EXPECT_EQ(q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE order_id > ",
                                 kIntruderOrderBase + 8, " OR (order_id > ",
                                 kBase + (uint64_t{1} << 32) + kOrders, " AND order_id < ",
                                 kIntruderOrderBase, ")")),
              0);
    EXPECT_EQ(Counter(q, "slots_corrupt"), 4);
    EXPECT_EQ(Counter(q, "malformed_chunks"), 0);
    EXPECT_EQ(Counter(q, "index_gaps"), 0);
    absl::PrintF("FIGURE ring damage (%s): %lld stderr lines name the hostile rings, "
                 "slots_corrupt %lld; genuine orders stored %lld of %llu\n",
                 other.has_value() ? "--allow-uid user" : "same uid",
                 static_cast<long long>(CountOf(text, "ring no longer drained")),
                 Counter(q, "slots_corrupt"),
                 q.Int(absl::StrCat("SELECT COUNT(*) FROM orders WHERE complete=1 AND order_id "
                                    "BETWEEN ",
                                    kBase + 1, " AND ", kBase + (uint64_t{1} << 32) + kOrders)),
                 static_cast<unsigned long long>(2 * kOrders));
  }
};

TEST_F(RingDamageTest, WrapAttackSameUidCostsOnlyItsRings) { Run(std::nullopt); }

TEST_F(RingDamageTest, WrapAttackAllowedUserCostsOnlyItsRings) {
  ThrowawayUser user;
  if (!user.why_not().empty()) GTEST_SKIP() << user.why_not();
  Run(user.account());
}

}  // namespace
}  // namespace ticktrace::reliability
