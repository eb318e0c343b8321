// A thread's attach (creating the segment, claiming a ring, reserving and
// mapping its pages) is never inside a measurement: a first trace call
// attaches before it reads the TSC, and AttachThisThread() does it ahead of
// time. Checked in a real child process that never calls Init, so its first
// trace call creates the segment, exactly as a traced program's would.
//
// The segment's creation reads the TSC for the header's anchor, inside the
// attach. So the first order's first stamp must come after the anchor (read
// before the attach, it came before it), and its first stage, like every
// later order's, must hold no part of the attach. A thread's first record
// also knows its core now, like the ones after it: the core source is set by
// the attach, which used to come after the read.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
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

constexpr uint64_t kOrders = 50;
// Order ids of the threads that attach in their first call, by flavour.
constexpr uint64_t kStampThreadOrder = 2001;
constexpr uint64_t kSpanThreadOrder = 3001;
constexpr uint64_t kExplicitThreadOrder = 4001;

// Run only by the test below, in a child process with no segment yet.
TEST(FirstCall, DISABLED_Child) {
  static const Tag rx("fc_rx");
  static const Tag done("fc_done");
  static const Tag work("fc_work");
  ASSERT_EQ(TraceStatus().segment_name, "");
  // The first order: its first stamp is the process's first trace call.
  for (uint64_t order = 1; order <= kOrders; ++order) {
    stamp(rx, order);
    stamp(done, order);
  }
  std::thread([] {
    stamp(rx, kStampThreadOrder);  // this thread's first call attaches it
    stamp(done, kStampThreadOrder);
  }).join();
  std::thread([] {
    Span s(work, kSpanThreadOrder);  // the span's begin attaches the thread
  }).join();
  std::thread([] {
    const uint64_t reserved_before = TraceStatus().rings_reserved;
    EXPECT_TRUE(AttachThisThread().ok());
    EXPECT_EQ(TraceStatus().rings_reserved, reserved_before + 1);
    EXPECT_TRUE(AttachThisThread().ok());  // a second call does nothing more
    EXPECT_EQ(TraceStatus().rings_reserved, reserved_before + 1);
    stamp(rx, kExplicitThreadOrder);
  }).join();
  // The parent reads the segment after this process exits, then removes it.
}

struct ChildRun {
  SegmentInfo info;
  std::vector<abi::Record> records;
};

ChildRun RunChild(const std::string& session) {
  ChildRun run;
  const pid_t pid = fork();
  EXPECT_GE(pid, 0);
  if (pid == 0) {
    setenv("TICKTRACE_SESSION", session.c_str(), 1);
    setenv("TICKTRACE_RINGS", "8", 1);
    execl("/proc/self/exe", "first_call_child", "--gtest_also_run_disabled_tests",
          "--gtest_filter=FirstCall.DISABLED_Child", "--gtest_repeat=1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string segment = SegmentName(session, static_cast<uint32_t>(pid));
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(segment);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (reader.ok()) {
    run.info = (*reader)->info();
    for (uint32_t s = 0; s < run.info.slot_count; ++s) {
      testing::DrainSlot(**reader, s, &run.records);
    }
  }
  (void)RemoveSegment(segment);
  return run;
}

TEST(FirstCall, TheAttachIsInNoStageAndTheFirstRecordKnowsItsCore) {
  const ChildRun run = RunChild(testing::UniqueSession("first_call"));
  ASSERT_FALSE(run.records.empty());
  std::map<uint64_t, std::vector<abi::Record>> by_order;
  for (const abi::Record& r : run.records) by_order[r.order_id].push_back(r);

  // Every order's stage rx -> done, the first's as the later ones': rx before
  // done, and the attach (the anchor read inside it) not between them.
  for (uint64_t order = 1; order <= kOrders; ++order) {
    const std::vector<abi::Record>& stamps = by_order[order];
    ASSERT_EQ(stamps.size(), 2u) << "order " << order;
    EXPECT_LT(stamps[0].tsc, stamps[1].tsc) << "order " << order;
    const bool attach_inside =
        stamps[0].tsc < run.info.anchor_tsc && run.info.anchor_tsc < stamps[1].tsc;
    EXPECT_FALSE(attach_inside) << "order " << order << "'s stage holds the attach";
  }
  EXPECT_GT(by_order[1][0].tsc, run.info.anchor_tsc)
      << "the first stamp was read before its own attach created the segment";

  // Cores: known on every later record when the kernel keeps the thread's
  // cpu (rseq); then a first record must know it too.
  size_t later_with_core = 0;
  for (uint64_t order = 2; order <= kOrders; ++order) {
    later_with_core += by_order[order][0].aux != abi::kAuxUnknown;
  }
  if (later_with_core == 0) GTEST_SKIP() << "no rseq here: no stamp knows its core";
  EXPECT_NE(by_order[1][0].aux, abi::kAuxUnknown) << "the process's first record";
  ASSERT_EQ(by_order[kStampThreadOrder].size(), 2u);
  EXPECT_NE(by_order[kStampThreadOrder][0].aux, abi::kAuxUnknown) << "a thread's first stamp";
  ASSERT_EQ(by_order[kSpanThreadOrder].size(), 1u);
  EXPECT_EQ(by_order[kSpanThreadOrder][0].kind, abi::kSpan);
  EXPECT_NE(by_order[kSpanThreadOrder][0].aux, abi::kAuxUnknown) << "a thread's first span";
  ASSERT_EQ(by_order[kExplicitThreadOrder].size(), 1u);
  EXPECT_NE(by_order[kExplicitThreadOrder][0].aux, abi::kAuxUnknown);
}

}  // namespace
}  // namespace ticktrace
