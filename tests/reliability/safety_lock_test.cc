// docs/security.md#tests, rows 5 and 6: nobody can block a start.
// Another local user holds the collector's old lock name (the abstract socket
// "@ticktrace-collector.<session>"), or pre-creates the segment name of a
// producer whose pid it can predict. The collector starts; the producer traces
// under "ticktrace.<session>.<pid>.1", which the collector finds and drains;
// the planted file is counted as foreign.

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <fstream>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"
#include "ticktrace/trace.h"

namespace ticktrace::reliability {
namespace {

using SafetyLockTest = RelTestOf<"lock">;

// Forks a child that, as `who`, binds the abstract socket `name` and sleeps
// holding it. Returns its pid (the fixture kills it) once the name is held.
pid_t HoldAbstractSocket(const Account& who, const std::string& name) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    collect::testing::BecomeTestChild(parent);
    close(ready[0]);
    if (setgroups(0, nullptr) != 0 || setgid(who.gid) != 0 || setuid(who.uid) != 0) _exit(2);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    const char ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
                            listen(fd, 1) == 0
                        ? 1
                        : 0;
    (void)!write(ready[1], &ok, 1);
    if (!ok) _exit(3);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char ok = 0;
  const bool held = pid > 0 && read(ready[0], &ok, 1) == 1 && ok == 1;
  close(ready[0]);
  if (pid > 0) setpgid(pid, pid);
  return held ? pid : -pid;
}

// Row 5: the old lock name held by another uid does not matter any more;
// a second collector of our own uid is still refused.
TEST_F(SafetyLockTest, AnotherUserCannotHoldTheSessionLock) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const pid_t squatter = HoldAbstractSocket(Nobody(), "ticktrace-collector." + session_);
  ASSERT_GT(squatter, 0);
  children_.Add(squatter);

  const pid_t collector = StartCollector({"--pipeline", "a,b"});
  const pid_t producer = StartProducer(
      {"--mode", "seq", "--rings", "2", "--ring", "4096", "--orders", "100"}, "producer.log");
  EXPECT_EQ(WaitExit(producer, 60s), 0);
  Forget(producer);
  ExpectSegmentsRemoved();

  // A second collector of this uid for the same session is refused, in one line.
  const std::string second_log = dir_.File("second.log");
  std::vector<std::string> argv = CollectorArgv({"--db", dir_.File("second.db")});
  const pid_t second = Spawn(argv, second_log);
  EXPECT_EQ(WaitExit(second, 60s), 1) << ReadFile(second_log);
  EXPECT_NE(ReadFile(second_log).find("already being drained"), std::string::npos)
      << ReadFile(second_log);
  StopCollector(collector);
  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 100);
}

// Row 6: another user pre-creates "ticktrace.<session>.<pid>" for the pid the
// next producer will have. The producer runs as a user who cannot remove that
// file (nobody; the planter is a second throwaway uid), as in the issue, and
// is started from a child held at a gate, so its pid is known before it runs.
// The collector (root) allows nobody's segments and not the planter's.
TEST_F(SafetyLockTest, PlantedSegmentNameMakesTheProducerPickAnother) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const Account producer_user = Nobody();
  const Account planter{producer_user.uid - 1, producer_user.gid};
  const pid_t collector =
      StartCollector({"--pipeline", "a,b", "--allow-uid", absl::StrCat(producer_user.uid)});

  // The producer binary where nobody can run it (the build tree may be out of its reach).
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  const std::string bin = dir_.File("rel_producer");
  {
    std::ifstream in(kProducer, std::ios::binary);
    std::ofstream out(bin, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  const std::string producer_log = dir_.File("producer.log");
  const std::vector<std::string> args = {bin,     "--session", session_, "--mode", "seq",
                                         "--rings", "2",       "--ring", "4096", "--orders",
                                         "200"};
  const pid_t parent = getpid();
  const pid_t producer = fork();
  if (producer == 0) {
    collect::testing::BecomeTestChild(parent);
    close(gate[1]);
    const int log_fd = open(producer_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (setgroups(0, nullptr) != 0 || setgid(producer_user.gid) != 0 ||
        setuid(producer_user.uid) != 0) {
      _exit(125);
    }
    char go = 0;
    if (read(gate[0], &go, 1) != 1) _exit(126);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ASSERT_GT(producer, 0);
  setpgid(producer, producer);
  children_.Add(producer);
  close(gate[0]);
  const std::string planted = SegmentName(session_, static_cast<uint32_t>(producer));
  ASSERT_TRUE(PlantShmFile(planter, planted, "not yours", 0600));
  ASSERT_EQ(write(gate[1], "g", 1), 1);
  close(gate[1]);

  const std::string chosen = planted + ".1";
  EXPECT_EQ(WaitExit(producer, 60s), 0) << ReadFile(producer_log);
  Forget(producer);
  EXPECT_TRUE(WaitFor([&] { return !FileExists("/dev/shm/" + chosen); }, 60s))
      << "the collector did not drain and remove " << chosen << "\n" << ReadFile(log());
  EXPECT_TRUE(FileExists("/dev/shm/" + planted)) << "the planted file is not ours to remove";
  StopCollector(collector);

  StoreQuery q(db());
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), 200);
  EXPECT_EQ(q.Text(absl::StrCat("SELECT segment FROM processes WHERE pid=", producer)), chosen);
  EXPECT_EQ(Counter(q, "segments_foreign"), 1);
}

}  // namespace
}  // namespace ticktrace::reliability
