// The tracer never hurts the traced process (docs/security.md#tests, row 1): when /dev/shm cannot
// hold a ring, or even the segment's header, trace calls are counted no-ops,
// never a SIGBUS; and a freshly claimed ring's pages are mapped before the
// first record goes in, so the hot path does not page-fault.
//
// The /dev/shm-full tests run their workload in a forked child that mounts a
// small tmpfs of its own on /dev/shm inside a private mount namespace: the
// mount (and every segment in it) goes away with the child. They need root
// (CAP_SYS_ADMIN) and are skipped, saying so, only where the namespace cannot
// be created. The child reports through a pipe; the parent asserts.
//
// Expected values are computed by hand from the layout in abi.h:
//   header 1024 B + tag table 1024 * 64 B = 66560 B: pages 0..16, 17 pages;
//   a slot is 192 B of control lines + ring_records * 32 B of records.

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/abi.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

constexpr uint64_t kPage = 4096;

// What a child sends back: an outcome, an errno, named numbers and a message.
struct ChildReport {
  enum Outcome : int32_t { kDone = 1, kCannotIsolate = 2, kFailed = 3 };
  int32_t outcome = 0;
  int32_t err = 0;
  uint64_t values[16] = {};
  char message[256] = {};
};

void SetMessage(ChildReport* r, const std::string& m) {
  std::snprintf(r->message, sizeof(r->message), "%s", m.c_str());
}

// A forked child running `body`, killed and reaped when this goes out of
// scope unless it was waited for; a segment named after it is removed too.
class Child {
 public:
  Child(const std::string& session, const std::function<void(ChildReport*)>& body)
      : session_(session) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      ChildReport report;
      body(&report);
      const char* p = reinterpret_cast<const char*>(&report);
      size_t left = sizeof(report);
      while (left > 0) {
        const ssize_t n = write(fds[1], p, left);
        if (n <= 0) _exit(3);
        p += n;
        left -= static_cast<size_t>(n);
      }
      _exit(0);
    }
    close(fds[1]);
    read_fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (read_fd_ >= 0) close(read_fd_);
    if (pid_ > 0) (void)RemoveSegment(SegmentName(session_, static_cast<uint32_t>(pid_)));
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0 && read_fd_ >= 0; }

  // Reads the report, then waits (up to two minutes) for the child to exit.
  // Returns false on a timeout. *status: waitpid's status.
  bool Wait(ChildReport* report, int* status) {
    char* p = reinterpret_cast<char*>(report);
    size_t got = 0;
    while (got < sizeof(*report)) {
      const ssize_t n = read(read_fd_, p + got, sizeof(*report) - got);
      if (n <= 0) break;  // the child died before it reported
      got += static_cast<size_t>(n);
    }
    if (got != sizeof(*report)) *report = ChildReport{};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < deadline) {
      const pid_t r = waitpid(pid_, status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  std::string session_;
  pid_t pid_ = -1;
  int read_fd_ = -1;
  bool reaped_ = false;
};

// In the child: a private mount namespace with a tmpfs of `size` on /dev/shm.
// False (and the report filled) when that is impossible.
bool MountPrivateShm(const char* size_option, ChildReport* report) {
  if (unshare(CLONE_NEWNS) != 0) {
    report->outcome = ChildReport::kCannotIsolate;
    report->err = errno;
    SetMessage(report, "unshare(CLONE_NEWNS)");
    return false;
  }
  // Private: our tmpfs must not propagate to the parent's namespace. "/" is
  // not a mount point inside a chroot (EINVAL); then the mount our tmpfs goes
  // on top of is made private: /dev/shm's own, or /dev's.
  bool private_done = false;
  for (const char* where : {"/", "/dev/shm", "/dev"}) {
    if (mount(nullptr, where, nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      private_done = true;
      break;
    }
    if (errno != EINVAL) {
      report->outcome = errno == EPERM ? ChildReport::kCannotIsolate : ChildReport::kFailed;
      report->err = errno;
      SetMessage(report, std::string("mount --make-rprivate ") + where);
      return false;
    }
  }
  if (!private_done) {
    report->outcome = ChildReport::kFailed;
    report->err = EINVAL;
    SetMessage(report, "mount --make-rprivate: none of /, /dev/shm, /dev is a mount point");
    return false;
  }
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, size_option) != 0) {
    report->outcome = errno == EPERM ? ChildReport::kCannotIsolate : ChildReport::kFailed;
    report->err = errno;
    SetMessage(report, std::string("mount -t tmpfs -o ") + size_option + " tmpfs /dev/shm");
    return false;
  }
  return true;
}

// Pages in use in the tmpfs on /dev/shm, or UINT64_MAX.
uint64_t ShmPagesUsed() {
  struct statvfs v;
  if (statvfs("/dev/shm", &v) != 0) return UINT64_MAX;
  return (v.f_blocks - v.f_bfree) * v.f_frsize / kPage;
}

// Runs `threads` threads at once, each stamping `per_thread` records.
void StampFromThreads(int threads, uint64_t per_thread) {
  static const Tag tag("shm_full");
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (uint64_t i = 0; i < per_thread; ++i) stamp(tag, (uint64_t{1} << 32) * t + i);
    });
  }
  for (std::thread& th : pool) th.join();
}

// Runs the child of a /dev/shm test and turns its outcome into assertions
// (or a skip). Returns true when the report can be read.
void RunIsolated(Child& child, ChildReport* report) {
  ASSERT_TRUE(child.started()) << "fork: " << std::strerror(errno);
  int status = 0;
  ASSERT_TRUE(child.Wait(report, &status)) << "the child did not exit within two minutes";
  ASSERT_FALSE(WIFSIGNALED(status)) << "the traced process died of signal " << WTERMSIG(status)
                                    << " (SIGBUS is " << SIGBUS << ")";
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  if (report->outcome == ChildReport::kCannotIsolate) {
    GTEST_SKIP() << "cannot create a private mount namespace with a small /dev/shm ("
                 << report->message << ": " << std::strerror(report->err)
                 << "); run as root (CI does)";
  }
  ASSERT_EQ(report->outcome, ChildReport::kDone)
      << report->message << ": " << std::strerror(report->err);
}

// Four threads, four slots of 1 MiB rings, a 2 MiB /dev/shm (512 pages).
// By hand (abi.h): slot stride 192 + 32768 * 32 = 1048768 B; slot i's control
// lines at 66560 + i * 1048768, on pages 16, 272, 528, 784. The segment
// reserves pages 0..16 plus 272, 528, 784: 20 pages. Slot 0's ring spans
// pages 16..272, of which 255 are new: 275 used, 237 free. Slot 1's ring also
// needs 255 new pages (272..528, both ends already reserved): refused, ENOSPC.
// So exactly one thread gets a ring (slot 0; claims are serialised and scan
// from 0, and a refused claim hands its slot back), and three are refused.
TEST(ShmFullTest, RingsThatDoNotFitAreRefusedAndCountedWithoutASignal) {
  const std::string session = testing::UniqueSession("shmfull");
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 40000;  // more than a ring of 32768 holds
  enum Value { kReserved, kRefused, kRefusalErrno, kWithoutSlot, kSlotless, kHdrRefused,
               kHdrErrno, kOwnedSlots, kSlot0Write, kSlot0Dropped, kSlot0Generation,
               kPagesUsed, kNoSegment, kHdrWithoutSlot, kHdrSlotless };
  Child child(session, [&](ChildReport* r) {
    if (!MountPrivateShm("size=2m,mode=1777", r)) return;
    Options options = testing::SegmentOptions(session, 32768, 4);
    if (Status st = Init(options); !st.ok()) {
      r->outcome = ChildReport::kFailed;
      SetMessage(r, "Init: " + st.ToString());
      return;
    }
    StampFromThreads(kThreads, kPerThread);
    // Still here after every thread stamped: no signal.
    const TracerStatus s = TraceStatus();
    r->values[kReserved] = s.rings_reserved;
    r->values[kRefused] = s.rings_refused;
    r->values[kRefusalErrno] = static_cast<uint64_t>(s.last_refusal_errno);
    r->values[kWithoutSlot] = s.threads_without_slot;
    r->values[kSlotless] = s.slotless_dropped;
    r->values[kNoSegment] = s.dropped_without_segment;
    absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(s.segment_name);
    if (!reader.ok()) {
      r->outcome = ChildReport::kFailed;
      SetMessage(r, "SegmentReader::Open: " + reader.status().ToString());
      return;
    }
    const SegmentCounters c = (*reader)->counters();
    r->values[kHdrRefused] = c.rings_refused;
    r->values[kHdrErrno] = c.last_refusal_errno;
    r->values[kHdrWithoutSlot] = c.threads_without_slot;
    r->values[kHdrSlotless] = c.slotless_dropped;
    for (uint32_t i = 0; i < (*reader)->info().slot_count; ++i) {
      if ((*reader)->Slot(i).generation > 0) ++r->values[kOwnedSlots];
    }
    const SlotView slot0 = (*reader)->Slot(0);
    r->values[kSlot0Write] = slot0.write_index;
    r->values[kSlot0Dropped] = slot0.dropped;
    r->values[kSlot0Generation] = slot0.generation;
    r->values[kPagesUsed] = ShmPagesUsed();
    r->outcome = ChildReport::kDone;
  });
  ChildReport report;
  RunIsolated(child, &report);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  const uint64_t* v = report.values;
  EXPECT_EQ(v[kReserved], 1u);
  EXPECT_EQ(v[kRefused], 3u);
  EXPECT_EQ(v[kRefusalErrno], static_cast<uint64_t>(ENOSPC));
  EXPECT_EQ(v[kHdrRefused], 3u) << "the collector sees the refusals in the header";
  EXPECT_EQ(v[kHdrErrno], static_cast<uint64_t>(ENOSPC));
  EXPECT_EQ(v[kWithoutSlot], 3u);
  EXPECT_EQ(v[kHdrWithoutSlot], 3u);
  // Every stamp of a refused thread is a counted no-op.
  EXPECT_EQ(v[kSlotless], 3 * kPerThread);
  EXPECT_EQ(v[kHdrSlotless], 3 * kPerThread);
  EXPECT_EQ(v[kNoSegment], 0u);
  // The one ring: full (32768 written), the rest dropped and counted.
  EXPECT_EQ(v[kOwnedSlots], 1u) << "a refused claim must not bump a slot's generation";
  EXPECT_EQ(v[kSlot0Generation], 1u);
  EXPECT_EQ(v[kSlot0Write], 32768u);
  EXPECT_EQ(v[kSlot0Dropped], kPerThread - 32768);
  // The footprint: 20 pages of segment + 255 of the one ring; refusals leave nothing behind.
  EXPECT_EQ(v[kPagesUsed], 275u);
}

// A 64 KiB /dev/shm (16 pages) cannot hold the header and tag table (17
// pages): no segment, Init says why, and every stamp is counted in
// DroppedWithoutSegment(); nothing is left in /dev/shm.
TEST(ShmFullTest, SegmentThatDoesNotFitIsRefusedAndItsStampsCounted) {
  const std::string session = testing::UniqueSession("shmtiny");
  constexpr int kThreads = 3;
  constexpr uint64_t kPerThread = 1000;
  enum Value { kInitCode, kNoSegment, kNameEmpty, kErrorSet, kPagesUsed, kRefused };
  Child child(session, [&](ChildReport* r) {
    if (!MountPrivateShm("size=64k,mode=1777", r)) return;
    Options options = testing::SegmentOptions(session, 1024, 4);
    r->values[kInitCode] = static_cast<uint64_t>(Init(options).code());
    StampFromThreads(kThreads, kPerThread);
    const TracerStatus s = TraceStatus();
    r->values[kNoSegment] = s.dropped_without_segment;
    r->values[kNameEmpty] = s.segment_name.empty() ? 1 : 0;
    r->values[kErrorSet] = s.segment_error.empty() ? 0 : 1;
    r->values[kRefused] = s.rings_refused;
    r->values[kPagesUsed] = ShmPagesUsed();
    SetMessage(r, s.segment_error);
    r->outcome = ChildReport::kDone;
  });
  ChildReport report;
  RunIsolated(child, &report);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  const uint64_t* v = report.values;
  EXPECT_EQ(v[kInitCode], static_cast<uint64_t>(ErrorCode::kResourceExhausted))
      << report.message;
  EXPECT_EQ(v[kNoSegment], kThreads * kPerThread);
  EXPECT_EQ(v[kNameEmpty], 1u);
  EXPECT_EQ(v[kErrorSet], 1u);
  EXPECT_NE(std::string(report.message).find("No space left on device"), std::string::npos)
      << report.message;
  EXPECT_EQ(v[kRefused], 0u);
  EXPECT_EQ(v[kPagesUsed], 0u) << "a refused segment is removed";
}

// AddressSanitizer checks a shadow byte per 8 bytes of every store: the
// first pass reads its ring's shadow pages for the first time, one fault per
// 8 ring pages, none of them the ring's.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kShadowPagesPerRingPage8 = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr uint64_t kShadowPagesPerRingPage8 = 1;
#else
constexpr uint64_t kShadowPagesPerRingPage8 = 0;
#endif
#else
constexpr uint64_t kShadowPagesPerRingPage8 = 0;
#endif

// How many of the pages [begin, end) of a mapping of /dev/shm/`segment` in
// this process are present in its page tables (/proc/self/pagemap bit 63):
// a present page cannot fault. Independent of any sanitizer's shadow memory.
// The most over the process's mappings of that file (the test's own reader
// maps it too); UINT64_MAX when no mapping or pagemap can be read.
uint64_t PresentPagesOfSegment(const std::string& segment, uint64_t begin, uint64_t end) {
  std::vector<uint64_t> bases;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= segment.size() &&
        line.compare(line.size() - segment.size(), segment.size(), segment) == 0) {
      bases.push_back(std::stoull(line.substr(0, line.find('-')), nullptr, 16));
    }
  }
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (bases.empty() || fd < 0) {
    if (fd >= 0) close(fd);
    return UINT64_MAX;
  }
  uint64_t most = 0;
  for (uint64_t base : bases) {
    uint64_t present = 0;
    for (uint64_t off = begin; off < end; off += kPage) {
      uint64_t entry = 0;
      const off_t at = static_cast<off_t>((base + off) / kPage * sizeof(entry));
      if (pread(fd, &entry, sizeof(entry), at) != sizeof(entry)) break;
      present += entry >> 63;
    }
    most = std::max(most, present);
  }
  close(fd);
  return most;
}

uint64_t ThreadMinorFaults() {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<uint64_t>(u.ru_minflt);
}

// A ring of 65536 records is 65536 * 32 / 4096 = 512 pages. Before this
// change the first pass through a fresh ring took one minor fault per page
// (512); with the claim populating the page tables it takes none (fewer than
// 512 / 16 are allowed for the thread's own stack and the like, plus, under
// AddressSanitizer, its shadow pages). As a check that the measurement sees
// faults at all, the same ring's whole pages are then punched out of the file
// and written again: one write fault per punched page (511: the ring does not
// start on a page boundary, so its first and last pages are partial).
TEST(ShmFullTest, FirstPassThroughAFreshRingDoesNotPageFault) {
  const std::string session = testing::UniqueSession("firstpass");
  constexpr uint32_t kRecords = 65536;
  constexpr uint64_t kRingPages = kRecords * 32 / kPage;  // 512
  enum Value { kFirstPassFaults, kWriteAfterFirst, kPunchedPages, kPunchedFaults,
               kWriteAfterSecond, kDropped, kPresentAfterClaim };
  Child child(session, [&](ChildReport* r) {
    Options options = testing::SegmentOptions(session, kRecords, 2);
    if (Status st = Init(options); !st.ok()) {
      r->outcome = ChildReport::kFailed;
      SetMessage(r, "Init: " + st.ToString());
      return;
    }
    static const Tag tag("first_pass");
    auto reader = SegmentReader::Open(CurrentSegmentName());
    if (!reader.ok()) {
      r->outcome = ChildReport::kFailed;
      SetMessage(r, "SegmentReader::Open: " + reader.status().ToString());
      return;
    }
    std::thread([&] {
      stamp(tag, 0);  // attaches: claims, reserves and populates the ring
      {
        // Before the pass: every whole page of the ring is in the page tables.
        const uint64_t records = abi::SlotsOffset(1024) + sizeof(abi::SlotControl);
        const uint64_t first = (records + kPage - 1) / kPage * kPage;
        const uint64_t last = (records + uint64_t{kRecords} * 32) / kPage * kPage;
        r->values[kPresentAfterClaim] =
            PresentPagesOfSegment("/dev/shm/" + CurrentSegmentName(), first, last);
      }
      const uint64_t before = ThreadMinorFaults();
      for (uint64_t i = 1; i < kRecords; ++i) stamp(tag, i);
      r->values[kFirstPassFaults] = ThreadMinorFaults() - before;
      r->values[kWriteAfterFirst] = (*reader)->Slot(0).write_index;

      // Consume the ring (as a collector would), punch its whole pages out.
      std::vector<abi::Record> sink;
      const absl::StatusOr<uint64_t> end = (*reader)->Peek(0, kRecords, &sink);
      if (end.ok()) (*reader)->Commit(0, *end);
      const uint64_t records = abi::SlotsOffset(1024) + sizeof(abi::SlotControl);
      const uint64_t first = (records + kPage - 1) / kPage * kPage;
      const uint64_t last = (records + uint64_t{kRecords} * 32) / kPage * kPage;
      r->values[kPunchedPages] = (last - first) / kPage;
      const int fd = shm_open(CurrentSegmentName().c_str(), O_RDWR, 0);
      if (fd < 0 || fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              static_cast<off_t>(first), static_cast<off_t>(last - first)) != 0) {
        r->err = errno;
        SetMessage(r, "punching the ring's pages");
      }
      if (fd >= 0) close(fd);
      const uint64_t before2 = ThreadMinorFaults();
      for (uint64_t i = 0; i < kRecords; ++i) stamp(tag, kRecords + i);
      r->values[kPunchedFaults] = ThreadMinorFaults() - before2;
      r->values[kWriteAfterSecond] = (*reader)->Slot(0).write_index;
      r->values[kDropped] = (*reader)->Slot(0).dropped;
    }).join();
    (void)RemoveSegment(CurrentSegmentName());
    r->outcome = r->message[0] == '\0' ? ChildReport::kDone : ChildReport::kFailed;
  });
  ChildReport report;
  RunIsolated(child, &report);
  if (::testing::Test::HasFatalFailure()) return;
  const uint64_t* v = report.values;
  // The pass went into the ring (not the drop path): 1 + 65535 records.
  EXPECT_EQ(v[kWriteAfterFirst], uint64_t{kRecords});
  EXPECT_EQ(v[kDropped], 0u);
  // The claim mapped the ring: its 511 whole pages are present before the
  // pass (exact, whatever a sanitizer adds), so the pass cannot fault on them.
  EXPECT_EQ(v[kPresentAfterClaim], kRingPages - 1);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer faults in its own shadow and meta pages for every ring
  // page written (about 8 each here): the fault count says nothing about the
  // ring under it, and the pagemap check above stands alone.
#else
  EXPECT_LT(v[kFirstPassFaults], kRingPages / 16 + kShadowPagesPerRingPage8 * kRingPages / 8)
      << "the first pass through a fresh ring faulted " << v[kFirstPassFaults] << " times ("
      << kRingPages << " pages in the ring)";
#endif
  EXPECT_EQ(v[kPunchedPages], kRingPages - 1);
  EXPECT_GE(v[kPunchedFaults], v[kPunchedPages])
      << "the measurement must see a fault per page it wrote anew";
  EXPECT_EQ(v[kWriteAfterSecond], 2 * uint64_t{kRecords});
}

}  // namespace
}  // namespace ticktrace
