// docs/security.md#tests, row 8: the collector's own files. The store,
// the journal and the raw archive are created 0600 (0640 with
// --group-readable) whatever the umask, never through a symlink planted
// where they are to be created (a world-writable directory such as /tmp),
// and a refusal is one line that says why.

#include <sys/stat.h>
#include <unistd.h>

#include "tests/reliability/rel_fixture.h"
#include "tests/reliability/safety_util.h"

namespace ticktrace::reliability {
namespace {

class FileModesTest : public RelTest {
 protected:
  FileModesTest() : RelTest("modes") {}

  // A sticky, world-writable directory, like /tmp.
  std::string SharedDir() {
    const std::string d = dir_.File("shared");
    mkdir(d.c_str(), 0777);
    chmod(d.c_str(), 01777);
    chmod(dir_.path().c_str(), 0755);
    return d;
  }

  // Runs the collector with a zero umask (so that only the collector's own
  // choice of mode counts) while a producer traces; checks the journal's mode
  // while it exists; returns the collector's exit code.
  int RunWithProducer(const std::vector<std::string>& extra, int* journal_mode) {
    const mode_t old_umask = umask(0);
    const pid_t collector = StartCollector(extra);
    umask(old_umask);
    const pid_t producer = StartProducer(
        {"--mode", "seq", "--rings", "2", "--ring", "4096", "--orders", "100"}, "producer.log");
    EXPECT_EQ(WaitExit(producer, 60s), 0);
    Forget(producer);
    ExpectSegmentsRemoved();
    *journal_mode = ModeOf(db() + ".ttjournal");
    kill(collector, SIGTERM);
    const int code = WaitExit(collector, 60s);
    Forget(collector);
    return code;
  }

  // Runs the collector for a moment with `extra`; returns its exit code.
  int RunBriefly(const std::vector<std::string>& extra) {
    const pid_t pid = StartCollector(extra, /*wait_ready=*/false);
    const int code = WaitExit(pid, 60s);
    Forget(pid);
    return code;
  }
};

TEST_F(FileModesTest, StoreJournalAndArchiveAreOwnerOnly) {
  const std::string raw = dir_.File("run.raw");
  int journal_mode = -1;
  ASSERT_EQ(RunWithProducer({"--pipeline", "a,b", "--raw", raw}, &journal_mode), 0)
      << ReadFile(log());
  EXPECT_EQ(journal_mode, 0600);
  EXPECT_EQ(ModeOf(db()), 0600);
  EXPECT_EQ(ModeOf(raw), 0600);
  if (const int wal = ModeOf(db() + "-wal"); wal != -1) {
    EXPECT_EQ(wal, 0600);
  }
}

TEST_F(FileModesTest, GroupReadableGivesTheGroupRead) {
  const std::string raw = dir_.File("run.raw");
  int journal_mode = -1;
  ASSERT_EQ(RunWithProducer({"--pipeline", "a,b", "--raw", raw, "--group-readable"},
                            &journal_mode),
            0)
      << ReadFile(log());
  EXPECT_EQ(journal_mode, 0640);
  EXPECT_EQ(ModeOf(raw), 0640);
  EXPECT_EQ(ModeOf(db()), 0640);
  if (const int wal = ModeOf(db() + "-wal"); wal != -1) {
    EXPECT_EQ(wal, 0640);
  }
}

// A symlink planted by another user where the store, the raw archive or the
// journal is to be created: refused in one line, the link's target never
// created, nothing else written.
TEST_F(FileModesTest, PlantedSymlinksAreRefusedNotFollowed) {
  if (const std::string why = CannotPlayNobody(); !why.empty()) GTEST_SKIP() << why;
  const std::string shared = SharedDir();
  const std::string victim = dir_.File("victim");
  struct Case {
    std::string link;
    std::vector<std::string> args;
  };
  const std::string db_path = shared + "/store.db";
  const std::vector<Case> cases = {
      {db_path, {"--db", db_path}},
      {shared + "/run.raw", {"--db", "", "--raw", shared + "/run.raw"}},
      {db_path + ".ttjournal", {"--db", db_path}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.link);
    ASSERT_TRUE(RunAsChild(Nobody(), [&] { return symlink(victim.c_str(), c.link.c_str()) == 0; }));
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--duration-s", "0.5"});
    const size_t before = ReadFile(log()).size();
    EXPECT_EQ(RunBriefly(args), 1) << ReadFile(log());
    const std::string said = ReadFile(log()).substr(before);
    EXPECT_NE(said.find("symbolic link"), std::string::npos) << said;
    EXPECT_FALSE(FileExists(victim)) << "the collector followed the link";
    unlink(c.link.c_str());
    unlink(db_path.c_str());
    unlink((db_path + "-wal").c_str());
    unlink((db_path + "-shm").c_str());
  }
}

}  // namespace
}  // namespace ticktrace::reliability
