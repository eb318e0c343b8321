// Files at the collector's own journal path that are not its own: a FIFO (it
// used to block open() for ever, deaf to SIGTERM and --duration-s, holding the
// session lock), a journal another uid owns, one that others may write, and
// a FIFO given as an archive to replay. Each is refused in one line naming
// the path and why, with exit status 1, promptly; the file is left as it was
// and no store is written.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

using PlantedJournalTest = RelTestOf<"plantedjournal">;

off_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// A ticktrace journal of this collector, as far as its header goes: an
// older collector's leftover from a crashed run (any bytes do: they are
// refused before anything reads them).
void WriteJournalLike(const std::string& path) {
  std::ofstream(path, std::ios::binary) << std::string(256, '\0');
}

TEST_F(PlantedJournalTest, AFifoAtTheJournalIsRefusedNotWaitedOn) {
  const std::string journal = db() + ".ttjournal";
  ASSERT_EQ(mkfifo(journal.c_str(), 0600), 0);
  const pid_t c = StartCollector({"--duration-s", "60"}, /*wait_ready=*/false);
  // Far below --duration-s: the collector gives up at once, not after 60 s.
  EXPECT_EQ(WaitExit(c, 20s), 1) << ReadFile(log());
  Forget(c);
  const std::string log_text = ReadFile(log());
  EXPECT_NE(log_text.find(journal + ": not a regular file"), std::string::npos) << log_text;
  struct stat st;
  ASSERT_EQ(lstat(journal.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was left as it was";
}

TEST_F(PlantedJournalTest, AJournalOfAnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another uid (chown)";
  const std::string journal = db() + ".ttjournal";
  WriteJournalLike(journal);
  ASSERT_EQ(chmod(journal.c_str(), 0600), 0);
  ASSERT_EQ(chown(journal.c_str(), 65534, 65534), 0);  // nobody
  const pid_t c = StartCollector({}, /*wait_ready=*/false);
  EXPECT_EQ(WaitExit(c, 20s), 1) << ReadFile(log());
  Forget(c);
  EXPECT_NE(ReadFile(log()).find(journal + ": belongs to uid 65534"), std::string::npos)
      << ReadFile(log());
  EXPECT_EQ(FileSize(journal), 256);
}

TEST_F(PlantedJournalTest, AJournalOthersMayWriteIsRefused) {
  const std::string journal = db() + ".ttjournal";
  WriteJournalLike(journal);
  ASSERT_EQ(chmod(journal.c_str(), 0666), 0);
  const pid_t c = StartCollector({}, /*wait_ready=*/false);
  EXPECT_EQ(WaitExit(c, 20s), 1) << ReadFile(log());
  Forget(c);
  EXPECT_NE(ReadFile(log()).find(journal + ": other users may write it (mode 0666)"),
            std::string::npos)
      << ReadFile(log());
  EXPECT_EQ(FileSize(journal), 256);
}

TEST_F(PlantedJournalTest, AFifoToReplayIsRefusedNotWaitedOn) {
  const std::string fifo = dir_.File("archive.raw");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t c = StartCollector({"--replay", fifo}, /*wait_ready=*/false);
  EXPECT_EQ(WaitExit(c, 20s), 1) << ReadFile(log());
  Forget(c);
  EXPECT_NE(ReadFile(log()).find(fifo + ": not a regular file"), std::string::npos)
      << ReadFile(log());
}

}  // namespace
}  // namespace ticktrace::reliability
