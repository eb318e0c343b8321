// Helpers shared by the libtrace tests: unique session names, a segment's
// options, and draining a slot through the public reader. Test-only.

#ifndef TICKTRACE_TESTS_LIBTRACE_SEGMENT_TEST_UTIL_H_
#define TICKTRACE_TESTS_LIBTRACE_SEGMENT_TEST_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace::testing {

// "t_<what>_<pid>": no two test processes share a session.
inline std::string UniqueSession(const std::string& what) {
  return "t_" + what + "_" + std::to_string(getpid());
}

// Options for a test's segment: `session`, `rings` rings of `ring_records`
// records each, everything else at its default.
inline Options SegmentOptions(const std::string& session, uint32_t ring_records, uint32_t rings) {
  Options options;
  options.session = session;
  options.ring_records = ring_records;
  options.rings = rings;
  return options;
}

// The slot whose owner has kernel thread id `tid`, or -1.
inline int FindSlotByTid(const SegmentReader& reader, uint32_t tid) {
  for (uint32_t i = 0; i < reader.info().slot_count; ++i) {
    if (reader.Slot(i).tid == tid && reader.Slot(i).generation > 0) return static_cast<int>(i);
  }
  return -1;
}

// Peeks and commits everything published in `slot`, appending to `out`.
inline void DrainSlot(SegmentReader& reader, uint32_t slot, std::vector<abi::Record>* out) {
  for (;;) {
    absl::StatusOr<uint64_t> end = reader.Peek(slot, 4096, out);
    ASSERT_TRUE(end.ok()) << end.status();
    if (*end == reader.Slot(slot).read_index) return;
    reader.Commit(slot, *end);
  }
}

// Creates this process's segment with `options` on the first call and
// removes it when the process exits. Later calls return the first call's
// status and keep its segment: a process has one segment for its lifetime,
// so a suite set up again (--gtest_repeat) or a second suite of the same
// binary shares it. Tests that depend on the segment's state must therefore
// measure from a baseline they read themselves (indices, counters), never
// from the values of a fresh segment.
inline Status InitOnce(const Options& options) {
  static const Status status = [&options] {
    Status s = Init(options);
    if (s.ok()) {
      std::atexit([] {
        const std::string name = CurrentSegmentName();
        if (!name.empty()) (void)RemoveSegment(name);
      });
    }
    return s;
  }();
  return status;
}

}  // namespace ticktrace::testing

#endif  // TICKTRACE_TESTS_LIBTRACE_SEGMENT_TEST_UTIL_H_
