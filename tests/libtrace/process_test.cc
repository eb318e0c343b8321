// Two real processes: a writer process stamps sequence numbers, the test
// process reads its segment as the collector would. And fork(): a child
// writes into a segment of its own, never into its parent's.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "segment_test_util.h"
#include "ticktrace/segment_reader.h"
#include "ticktrace/trace.h"

namespace ticktrace {
namespace {

// Waits up to 10 s for `pid`'s segment in `session` to appear and open.
std::unique_ptr<SegmentReader> OpenWhenReady(const std::string& session, pid_t pid) {
  const std::string name = SegmentName(session, static_cast<uint32_t>(pid));
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
    if (r.ok()) return *std::move(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return nullptr;
}

TEST(ProcessTest, EverySequenceNumberFromAWriterProcessArrivesOnceInOrder) {
  const std::string session = testing::UniqueSession("proc");
  constexpr uint64_t kAttempts = 500'000;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Options options;
    options.session = session;
    options.ring_records = 4096;
    options.rings = 2;
    if (!Init(options).ok()) _exit(3);
    const Tag tag("seq");
    for (uint64_t seq = 0; seq < kAttempts; ++seq) stamp(tag, seq);
    _exit(0);
  }
  std::unique_ptr<SegmentReader> reader = OpenWhenReady(session, child);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->info().pid, static_cast<uint32_t>(child));
  uint64_t received = 0, next_expected_min = 0;
  bool in_order = true, exited = false;
  int status = 0;
  std::vector<abi::Record> batch;
  for (;;) {
    if (!exited) exited = waitpid(child, &status, WNOHANG) == child;
    bool any = false;
    for (uint32_t s = 0; s < reader->info().slot_count; ++s) {
      batch.clear();
      absl::StatusOr<uint64_t> end = reader->Peek(s, 8192, &batch);
      ASSERT_TRUE(end.ok()) << end.status();
      for (const abi::Record& r : batch) {
        if (r.order_id < next_expected_min) in_order = false;
        next_expected_min = r.order_id + 1;
      }
      received += batch.size();
      any = any || !batch.empty();
      reader->Commit(s, *end);
    }
    if (exited && !any) break;
    if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(in_order);
  uint64_t dropped = 0;
  for (uint32_t s = 0; s < reader->info().slot_count; ++s) dropped += reader->Slot(s).dropped;
  EXPECT_EQ(received + dropped, kAttempts) << "received " << received << " dropped " << dropped;
  EXPECT_FALSE(ProcessAlive(reader->info().pid, reader->info().process_start_ticks));
  EXPECT_TRUE(RemoveSegment(reader->info().name).ok());
}

TEST(ProcessTest, AForkedChildGetsItsOwnSegment) {
  const std::string session = testing::UniqueSession("fork");
  Options options;
  options.session = session;
  options.ring_records = 64;
  options.rings = 2;
  ASSERT_TRUE(Init(options).ok());
  static const Tag tag("forked");
  stamp(tag, 1);  // the parent's segment and slot exist before the fork
  const std::string parent_name = CurrentSegmentName();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    stamp(tag, 2);
    stamp(tag, 3);
    _exit(CurrentSegmentName() == SegmentName(session, static_cast<uint32_t>(getpid())) ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);

  absl::StatusOr<std::unique_ptr<SegmentReader>> parent = SegmentReader::Open(parent_name);
  absl::StatusOr<std::unique_ptr<SegmentReader>> kid =
      SegmentReader::Open(SegmentName(session, static_cast<uint32_t>(child)));
  ASSERT_TRUE(parent.ok()) << parent.status();
  ASSERT_TRUE(kid.ok()) << kid.status();
  std::vector<abi::Record> parent_records, child_records;
  for (uint32_t s = 0; s < 2; ++s) {
    testing::DrainSlot(**parent, s, &parent_records);
    testing::DrainSlot(**kid, s, &child_records);
  }
  ASSERT_EQ(parent_records.size(), 1u);
  EXPECT_EQ(parent_records[0].order_id, 1u);
  ASSERT_EQ(child_records.size(), 2u);
  EXPECT_EQ(child_records[0].order_id, 2u);
  // The child inherited the tag registry: its segment names the tag too.
  absl::StatusOr<std::vector<std::string>> tags = (*kid)->Tags();
  ASSERT_TRUE(tags.ok());
  ASSERT_EQ(tags->size(), 1u);
  EXPECT_EQ((*tags)[0], "forked");
  EXPECT_TRUE(RemoveSegment((*kid)->info().name).ok());
  EXPECT_TRUE(RemoveSegment(parent_name).ok());
}

TEST(ProcessTest, SegmentsAreOwnerOnlyByDefault) {
  // Checked in a child so that this binary's own segment is untouched.
  const std::string session = testing::UniqueSession("mode");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Options options;
    options.session = session;
    options.ring_records = 64;
    options.rings = 1;
    _exit(Init(options).ok() ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string name = SegmentName(session, static_cast<uint32_t>(child));
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm/" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(RemoveSegment(name).ok());
}

}  // namespace
}  // namespace ticktrace
