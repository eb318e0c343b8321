// Every stamp carries its core (docs/design.md#the-hot-path-one-store-no-system-call): a plain stamp() and a Span read
// the kernel's rseq cpu_id around rdtsc. The expected core comes from the
// test's own pinning (sched_setaffinity to one cpu), not from libtrace. With
// rseq disabled (GLIBC_TUNABLES=glibc.pthread.rseq=0) a stamp has no core and
// a span falls back to rdtscp's aux, which still names the pinned cpu.

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
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

constexpr int kStampsPerCpu = 50;

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// In the calling process: one thread stamps kStampsPerCpu times and ends one
// span per cpu, pinned to each of `cpus` in turn. Order ids encode the cpu:
// cpu * 1000 + i. Returns false if pinning failed.
bool StampOnEachCpu(const std::vector<int>& cpus) {
  static const Tag stamp_tag("core_stamp");
  static const Tag span_tag("core_span");
  bool pinned = true;
  std::thread t([&] {
    stamp(stamp_tag, 999'999);  // the thread's first record attaches it: no core
    for (int cpu : cpus) {
      if (!PinTo(cpu)) {
        pinned = false;
        return;
      }
      sched_yield();  // let the move happen before the first read
      for (int i = 0; i < kStampsPerCpu; ++i) stamp(stamp_tag, uint64_t(cpu) * 1000 + i);
      Span s(span_tag, uint64_t(cpu) * 1000 + 500);
    }
  });
  t.join();
  return pinned;
}

std::vector<abi::Record> DrainAll(const std::string& segment) {
  std::vector<abi::Record> out;
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(segment);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  for (uint32_t s = 0; s < (*reader)->info().slot_count; ++s) {
    testing::DrainSlot(**reader, s, &out);
  }
  return out;
}

TEST(StampCore, EveryStampAndSpanCarriesThePinnedCore) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  Options o = testing::SegmentOptions(testing::UniqueSession("core"), 1024, 4);
  ASSERT_TRUE(testing::InitOnce(o).ok());
  const std::string segment = CurrentSegmentName();
  // Only this test's records: drain what earlier tests (or repeats) left.
  (void)DrainAll(segment);
  ASSERT_TRUE(StampOnEachCpu(cpus));
  const std::vector<abi::Record> records = DrainAll(segment);

  size_t stamps = 0, with_core = 0, spans = 0;
  for (const abi::Record& r : records) {
    if (r.order_id == 999'999) continue;  // the attaching record
    const uint32_t cpu = static_cast<uint32_t>(r.order_id / 1000);
    if (r.kind == abi::kStamp) {
      ++stamps;
      // A thread that moved during the read may say unknown, never a wrong core.
      if (r.aux == abi::kAuxUnknown) continue;
      ++with_core;
      EXPECT_EQ(abi::AuxCpu(r.aux), cpu) << "order " << r.order_id;
    } else if (r.kind == abi::kSpan) {
      ++spans;
      ASSERT_NE(r.aux, abi::kAuxUnknown);
      ASSERT_NE(r.payload.span.end_aux, abi::kAuxUnknown);
      EXPECT_EQ(abi::AuxCpu(r.aux), cpu);
      EXPECT_EQ(abi::AuxCpu(r.payload.span.end_aux), cpu);
    }
  }
  EXPECT_EQ(stamps, cpus.size() * kStampsPerCpu);
  EXPECT_EQ(spans, cpus.size());
  // Pinned, the thread cannot move mid-read: every stamp knows its core.
  EXPECT_EQ(with_core, stamps);
}

// Run only by the test below, in a child started with rseq disabled.
TEST(StampCore, DISABLED_ChildWithoutRseq) {
  Options o = testing::SegmentOptions(std::getenv("TICKTRACE_CORE_TEST_SESSION"), 1024, 4);
  ASSERT_TRUE(Init(o).ok());
  ASSERT_TRUE(StampOnEachCpu(AllowedCpus()));
  // The parent reads the segment after this process exits; it removes it.
}

TEST(StampCore, WithoutRseqStampsHaveNoCoreAndSpansUseRdtscp) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  const std::string session = testing::UniqueSession("nocore");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
    setenv("TICKTRACE_CORE_TEST_SESSION", session.c_str(), 1);
    // Once, whatever GTEST_REPEAT the parent runs under: Init() works once per process.
    execl("/proc/self/exe", "stamp_core_child", "--gtest_also_run_disabled_tests",
          "--gtest_filter=StampCore.DISABLED_ChildWithoutRseq", "--gtest_repeat=1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string segment = SegmentName(session, static_cast<uint32_t>(pid));
  struct Remove {
    std::string name;
    ~Remove() { (void)RemoveSegment(name); }
  } remove{segment};
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  const std::vector<abi::Record> records = DrainAll(segment);
  size_t stamps = 0, spans = 0;
  for (const abi::Record& r : records) {
    if (r.kind == abi::kStamp) {
      ++stamps;
      EXPECT_EQ(r.aux, abi::kAuxUnknown) << "order " << r.order_id;
    } else if (r.kind == abi::kSpan) {
      ++spans;
      const uint32_t cpu = static_cast<uint32_t>(r.order_id / 1000);
      ASSERT_NE(r.aux, abi::kAuxUnknown);
      EXPECT_EQ(abi::AuxCpu(r.aux), cpu);
      EXPECT_EQ(abi::AuxCpu(r.payload.span.end_aux), cpu);
    }
  }
  EXPECT_EQ(stamps, cpus.size() * kStampsPerCpu + 1);
  EXPECT_EQ(spans, cpus.size());
}

}  // namespace
}  // namespace ticktrace
