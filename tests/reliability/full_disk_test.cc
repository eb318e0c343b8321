// A full filesystem (docs/collector.md#full-disk): the store and the journal live on a small
// tmpfs (mounted in a mount namespace of this test process, which the
// collector it starts inherits). While two producer threads run, a filler
// file takes every free byte; the collector must stop draining (no ring's
// read index moves: the small rings overflow and the producers drop and
// count), say on stderr what is full, retry, and drain again once the filler
// is deleted. Afterwards drained + dropped = attempted (the producers' own
// counts), the store's rows match its counters, the run ends cleanly (exit 0)
// and its journal is gone.
//
// Needs root (CAP_SYS_ADMIN) for unshare(CLONE_NEWNS) and mount(2); skips
// with the reason where that is refused (an unprivileged container).

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "tests/reliability/rel_fixture.h"

namespace ticktrace::reliability {
namespace {

class FullDiskTest : public RelTest {
 protected:
  FullDiskTest() : RelTest("fulldisk") {}

  // Mounts a tmpfs of `mib` MiB at fs_dir() in a private mount namespace.
  // Empty on success, else why not.
  std::string MountSmallFs(int mib) {
    if (geteuid() != 0) return "not root: mounting a tmpfs needs CAP_SYS_ADMIN";
    if (unshare(CLONE_NEWNS) != 0) {
      return absl::StrCat("unshare(CLONE_NEWNS): ", std::strerror(errno));
    }
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return absl::StrCat("mount --make-rprivate /: ", std::strerror(errno));
    }
    if (mkdir(fs_dir().c_str(), 0700) != 0) return absl::StrCat("mkdir: ", std::strerror(errno));
    if (mount("tmpfs", fs_dir().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              absl::StrCat("size=", mib, "m,mode=0700").c_str()) != 0) {
      return absl::StrCat("mount -t tmpfs: ", std::strerror(errno));
    }
    mounted_ = true;
    return "";
  }
  ~FullDiskTest() override {
    if (mounted_) umount2(fs_dir().c_str(), MNT_DETACH);
  }

  std::string fs_dir() const { return dir_.File("fs"); }
  std::string store() const { return fs_dir() + "/store.db"; }

  // Writes zeros to `path` until the file system is full; the bytes written.
  static int64_t Fill(const std::string& path) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    const std::string block(1 << 20, '\0');
    int64_t total = 0;
    while (true) {
      const ssize_t n = write(fd, block.data(), block.size());
      if (n <= 0) break;
      total += n;
    }
    close(fd);
    return total;
  }

  bool mounted_ = false;
};

TEST_F(FullDiskTest, StopsDrainingWhileFullAndGoesOnWhenSpaceReturns) {
  if (const std::string why = MountSmallFs(64); !why.empty()) {
    GTEST_SKIP() << "cannot mount a small tmpfs for the store and journal here (" << why
                 << "); CI runs this as root";
  }
  constexpr uint64_t kOrders = 60000;  // per thread, paced over several seconds
  constexpr int kThreads = 2;
  const std::string journal = store() + ".ttjournal";
  // Every order's detail kept (--retain-detail none): the rows are checked
  // against the counters below, and the default size limit, 10% of this
  // small filesystem, would retire some of them.
  const pid_t c = Spawn({kCollector, "--session", session_, "--db", store(), "--tsc-hz",
                         absl::StrFormat("%.0f", TestTscHz()), "--pipeline", "a,b",
                         "--order-timeout-ms", "300", "--retain-detail", "none"},
                        log());
  children_.Add(c);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log()).find("order timeout") != std::string::npos; },
                      60s))
      << ReadFile(log());
  // Rings of 8 Ki records: a stalled collector makes them overflow within a
  // second, so the producers drop (and count) while the disk is full.
  const pid_t producer = StartProducer(
      {"--mode", "seq", "--threads", std::to_string(kThreads), "--rings", "2", "--ring", "8192",
       "--orders", std::to_string(kOrders), "--pace-every", "8", "--pace-us", "500"},
      "producer.log");
  ASSERT_TRUE(WaitCollectorReads(producer)) << ReadFile(log());

  const std::string filler = fs_dir() + "/filler";
  const int64_t filled = Fill(filler);
  ASSERT_GT(filled, 0);
  EXPECT_TRUE(WaitFor(
      [&] { return ReadFile(log()).find("not draining until there is space") != std::string::npos; },
      30s))
      << "the collector did not notice the full disk\n"
      << ReadFile(log());
  std::this_thread::sleep_for(1500ms);  // full for a while: the rings overflow
  ASSERT_EQ(unlink(filler.c_str()), 0);
  EXPECT_TRUE(WaitFor([&] { return ReadFile(log()).find("space again") != std::string::npos; },
                      30s))
      << ReadFile(log());

  EXPECT_EQ(WaitExit(producer, 120s), 0) << "producer";
  Forget(producer);
  ExpectSegmentsRemoved();
  kill(c, SIGTERM);
  EXPECT_EQ(WaitExit(c, 120s), 0) << ReadFile(log());
  Forget(c);

  const std::string text = ReadFile(log());
  EXPECT_NE(text.find("No space left on device"), std::string::npos)
      << "stderr does not say what is full\n"
      << text;
  int64_t attempted = 0;
  for (const auto& [key, value] : ParseProducerLog(ReadFile(dir_.File("producer.log")))) {
    if (key.rfind("thread ", 0) != 0) continue;
    const size_t at = value.find("attempted ");
    ASSERT_NE(at, std::string::npos) << value;
    attempted += std::stoll(value.substr(at + 10));
  }
  EXPECT_EQ(attempted, int64_t{kOrders} * kThreads * 2);

  StoreQuery q(store());
  EXPECT_NE(q.Int("SELECT ended_utc_ns FROM runs"), 0) << "the run did not end cleanly";
  const int64_t drained = Counter(q, "drained"), dropped = Counter(q, "dropped");
  EXPECT_EQ(drained + dropped, attempted) << "drained " << drained << ", dropped " << dropped;
  EXPECT_GT(dropped, 0) << "the rings did not overflow: did the collector drain while full?";
  EXPECT_EQ(q.Int("SELECT SUM(drained) FROM threads"), drained);
  EXPECT_EQ(q.Int("SELECT SUM(dropped) FROM threads"), dropped);
  // The store's rows match its counters.
  ExpectStoreWriterKeptUp(q);
  const int64_t complete = Counter(q, "orders_complete");
  const int64_t incomplete = Counter(q, "orders_incomplete");
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders"), complete + incomplete);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM orders WHERE complete=1"), complete);
  EXPECT_EQ(q.Int("SELECT COUNT(DISTINCT order_id) FROM orders"), complete + incomplete);
  EXPECT_EQ(q.Int("SELECT count FROM stage_stats WHERE stage='a->b'"), complete);
  EXPECT_EQ(q.Int("SELECT COUNT(*) FROM stamps"), drained);
  EXPECT_EQ(Counter(q, "journal_chunks_corrupt"), 0);
  EXPECT_FALSE(FileExists(journal)) << "journal left after a clean end";
  absl::PrintF("FIGURE full_disk: filler %d MiB, attempted %d, drained %d, dropped %d, orders "
               "complete %d, incomplete %d\n",
               filled >> 20, attempted, drained, dropped, complete, incomplete);
}

}  // namespace
}  // namespace ticktrace::reliability
