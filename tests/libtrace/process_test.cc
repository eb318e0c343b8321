// Two real processes: a writer process stamps sequence numbers, the test
// process reads its segment as the collector would. And fork(): a child
// writes into a segment of its own, never into its parent's.

#include <signal.h>
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::unique_ptr<SegmentReader>> r = SegmentReader::Open(name);
    if (r.ok()) return *std::move(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return nullptr;
}

// A forked child and the segments it may leave behind. On destruction, also
// when an assertion returned early: kills the child if it still runs, reaps
// it, and removes the segments.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (const std::string& name : segments_) (void)RemoveSegment(name);
  }

  // REQUIRES: called once, from the parent.
  void Adopt(pid_t pid) { pid_ = pid; }
  void RemoveAtEnd(const std::string& segment) { segments_.push_back(segment); }

  // Blocks until the child exits; returns its wait status.
  int Wait() {
    int status = 0;
    if (waitpid(pid_, &status, 0) == pid_) reaped_ = true;
    return status;
  }
  // True once the child has exited; its wait status goes to `status`.
  bool WaitNoHang(int* status) {
    if (!reaped_ && waitpid(pid_, status, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::vector<std::string> segments_;
};

TEST(ProcessTest, EverySequenceNumberFromAWriterProcessArrivesOnceInOrder) {
  const std::string session = testing::UniqueSession("proc");
  constexpr uint64_t kAttempts = 500'000;
  Child child;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Options options = testing::SegmentOptions(session, 4096, 2);
    if (!Init(options).ok()) _exit(3);
    const Tag tag("seq");
    for (uint64_t seq = 0; seq < kAttempts; ++seq) stamp(tag, seq);
    _exit(0);
  }
  child.Adopt(pid);
  child.RemoveAtEnd(SegmentName(session, static_cast<uint32_t>(pid)));
  std::unique_ptr<SegmentReader> reader = OpenWhenReady(session, pid);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->info().pid, static_cast<uint32_t>(pid));
  uint64_t received = 0, next_expected_min = 0;
  bool in_order = true, exited = false;
  int status = 0;
  std::vector<abi::Record> batch;
  for (;;) {
    if (!exited) exited = child.WaitNoHang(&status);
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
    // Polling an idle ring: a pause, not a synchronisation.
    if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(in_order);
  uint64_t dropped = 0;
  for (uint32_t s = 0; s < reader->info().slot_count; ++s) dropped += reader->Slot(s).dropped;
  EXPECT_EQ(received + dropped, kAttempts) << "received " << received << " dropped " << dropped;
  EXPECT_FALSE(ProcessAlive(reader->info().pid, reader->info().process_start_ticks));
}

// Done in a child (the "parent" below), so that the test process itself
// never creates a segment: the test can run again (--gtest_repeat) with a
// fresh parent, and no other test sees its segment. The parent reports by
// exit code; this process reads both segments.
TEST(ProcessTest, AForkedChildGetsItsOwnSegment) {
  const std::string session = testing::UniqueSession("fork");
  int kid_pipe[2];
  ASSERT_EQ(pipe(kid_pipe), 0);
  Child parent;
  const pid_t parent_pid = fork();
  ASSERT_GE(parent_pid, 0);
  if (parent_pid == 0) {
    close(kid_pipe[0]);
    Options options = testing::SegmentOptions(session, 64, 2);
    if (!Init(options).ok()) _exit(3);
    static const Tag tag("forked");
    stamp(tag, 1);  // the parent's segment and slot exist before the fork
    const pid_t kid = fork();
    if (kid < 0) _exit(5);
    if (kid == 0) {
      stamp(tag, 2);
      stamp(tag, 3);
      _exit(CurrentSegmentName() == SegmentName(session, static_cast<uint32_t>(getpid())) ? 0 : 4);
    }
    const int32_t kid_pid = kid;
    if (write(kid_pipe[1], &kid_pid, sizeof(kid_pid)) != sizeof(kid_pid)) _exit(6);
    int status = 0;
    if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status)) _exit(7);
    _exit(WEXITSTATUS(status) == 0 ? 0 : 10 + WEXITSTATUS(status));
  }
  close(kid_pipe[1]);
  parent.Adopt(parent_pid);
  const std::string parent_name = SegmentName(session, static_cast<uint32_t>(parent_pid));
  parent.RemoveAtEnd(parent_name);
  int32_t kid_pid = -1;
  const bool got_kid = read(kid_pipe[0], &kid_pid, sizeof(kid_pid)) == sizeof(kid_pid);
  close(kid_pipe[0]);
  if (got_kid) parent.RemoveAtEnd(SegmentName(session, static_cast<uint32_t>(kid_pid)));
  const int status = parent.Wait();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "3: Init, 4: the child wrote to another segment, 5-7: fork";
  ASSERT_TRUE(got_kid);

  absl::StatusOr<std::unique_ptr<SegmentReader>> from_parent = SegmentReader::Open(parent_name);
  absl::StatusOr<std::unique_ptr<SegmentReader>> kid =
      SegmentReader::Open(SegmentName(session, static_cast<uint32_t>(kid_pid)));
  ASSERT_TRUE(from_parent.ok()) << from_parent.status();
  ASSERT_TRUE(kid.ok()) << kid.status();
  std::vector<abi::Record> parent_records, child_records;
  for (uint32_t s = 0; s < 2; ++s) {
    testing::DrainSlot(**from_parent, s, &parent_records);
    testing::DrainSlot(**kid, s, &child_records);
  }
  ASSERT_EQ(parent_records.size(), 1u);
  EXPECT_EQ(parent_records[0].order_id, 1u);
  ASSERT_EQ(child_records.size(), 2u);
  EXPECT_EQ(child_records[0].order_id, 2u);
  EXPECT_EQ(child_records[1].order_id, 3u);
  // The child inherited the tag registry: its segment names the tag too.
  absl::StatusOr<std::vector<std::string>> tags = (*kid)->Tags();
  ASSERT_TRUE(tags.ok());
  ASSERT_EQ(tags->size(), 1u);
  EXPECT_EQ((*tags)[0], "forked");
}

TEST(ProcessTest, SegmentsAreOwnerOnlyByDefault) {
  // Checked in a child so that this binary's own segment is untouched.
  const std::string session = testing::UniqueSession("mode");
  Child child;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Options options = testing::SegmentOptions(session, 64, 1);
    _exit(Init(options).ok() ? 0 : 3);
  }
  child.Adopt(pid);
  const std::string name = SegmentName(session, static_cast<uint32_t>(pid));
  child.RemoveAtEnd(name);
  const int status = child.Wait();
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm/" + name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace ticktrace
