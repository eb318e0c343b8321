// The example's SPSC queue: single-thread behaviour, a two-thread stress test
// and a two-process stress test over shared memory, each checking sequence
// numbers end to end.

#include "spsc_queue.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "shared_queue.h"

namespace ticktrace::examples {
namespace {

struct Item {
  uint64_t seq;
  uint64_t check;  // seq * 7919: a torn or stale copy shows up
};

template <uint32_t kCap>
std::unique_ptr<SpscQueueLayout<Item, kCap>> NewLayout() {
  auto layout = std::make_unique<SpscQueueLayout<Item, kCap>>();  // value-initialised: zeros
  layout->capacity = kCap;
  layout->element_size = sizeof(Item);
  return layout;
}

TEST(SpscQueueTest, FillsPopsInOrderAndWraps) {
  auto layout = NewLayout<4>();
  SpscProducer<Item, 4> producer(layout.get());
  SpscConsumer<Item, 4> consumer(layout.get());
  Item out{};
  EXPECT_FALSE(consumer.TryPop(&out));
  uint64_t next_push = 0, next_pop = 0;
  for (int round = 0; round < 5; ++round) {  // 5 x 4 elements: wraps the ring several times
    for (int i = 0; i < 4; ++i, ++next_push) {
      ASSERT_TRUE(producer.TryPush({next_push, next_push * 7919})) << next_push;
    }
    EXPECT_FALSE(producer.TryPush({99, 99})) << "a full queue must refuse";
    for (int i = 0; i < 4; ++i, ++next_pop) {
      ASSERT_TRUE(consumer.TryPop(&out));
      EXPECT_EQ(out.seq, next_pop);
      EXPECT_EQ(out.check, next_pop * 7919);
    }
    EXPECT_FALSE(consumer.TryPop(&out));
  }
}

TEST(SpscQueueTest, FinishedOnlyAfterCloseAndDrain) {
  auto layout = NewLayout<8>();
  SpscProducer<Item, 8> producer(layout.get());
  SpscConsumer<Item, 8> consumer(layout.get());
  ASSERT_TRUE(producer.TryPush({1, 7919}));
  EXPECT_FALSE(consumer.Closed());
  EXPECT_FALSE(consumer.Finished());
  producer.Close();
  EXPECT_TRUE(consumer.Closed());
  EXPECT_FALSE(consumer.Finished()) << "one element is still queued";
  Item out{};
  ASSERT_TRUE(consumer.TryPop(&out));
  EXPECT_TRUE(consumer.Finished());
}

TEST(SpscQueueTest, TwoThreadsKeepEverySequenceNumber) {
  constexpr uint64_t kCount = 2'000'000;
  auto layout = NewLayout<64>();
  std::thread producer_thread([&] {
    SpscProducer<Item, 64> producer(layout.get());
    for (uint64_t i = 0; i < kCount; ++i) {
      while (!producer.TryPush({i, i * 7919})) {
      }
    }
    producer.Close();
  });
  SpscConsumer<Item, 64> consumer(layout.get());
  uint64_t expected = 0;
  uint64_t bad = 0;
  Item out{};
  while (true) {
    if (consumer.TryPop(&out)) {
      if (out.seq != expected || out.check != expected * 7919) ++bad;
      expected = out.seq + 1;
    } else if (consumer.Finished()) {
      break;
    }
  }
  producer_thread.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(expected, kCount);
}

TEST(SharedQueueTest, TwoProcessesKeepEverySequenceNumberAndNameIsRemoved) {
  using Queue = SharedQueue<Item, 256>;
  const std::string name = QueueSegmentName(absl::StrCat("queue-test-", getpid()), "items");
  constexpr uint64_t kCount = 1'000'000;
  absl::StatusOr<std::unique_ptr<Queue>> queue = Queue::Create(name, QueueRole::kConsumer);
  ASSERT_TRUE(queue.ok()) << queue.status();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The producer process: opens by name, pushes 0..kCount-1, closes.
    absl::StatusOr<std::unique_ptr<Queue>> opened =
        Queue::Open(name, QueueRole::kProducer, std::chrono::milliseconds(5000), nullptr);
    if (!opened.ok()) _exit(10);
    SpscProducer<Item, 256> producer((*opened)->layout());
    for (uint64_t i = 0; i < kCount; ++i) {
      while (!producer.TryPush({i, i * 7919})) {
      }
    }
    producer.Close();
    _exit(0);
  }
  SpscConsumer<Item, 256> consumer((*queue)->layout());
  uint64_t expected = 0, bad = 0;
  Item out{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (consumer.TryPop(&out)) {
      if (out.seq != expected || out.check != expected * 7919) ++bad;
      expected = out.seq + 1;
    } else if (consumer.Finished()) {
      break;
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(expected, kCount);
  EXPECT_EQ((*queue)->PeerPid(QueueRole::kConsumer), child);
  queue->reset();  // the creator removes the name
  EXPECT_FALSE(RemoveQueueSegment(name)) << name << " was left behind";
}

TEST(SharedQueueTest, OpenTimesOutWithAClearMessage) {
  absl::StatusOr<std::unique_ptr<TickQueue>> q =
      TickQueue::Open(QueueSegmentName("no-such-session", kTicksChannel), QueueRole::kProducer,
                      std::chrono::milliseconds(30), nullptr);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(q.status().message().find("--session"), absl::string_view::npos) << q.status();
}

TEST(SharedQueueTest, OpenRefusesAQueueOfAnotherShape) {
  const std::string name = QueueSegmentName(absl::StrCat("shape-test-", getpid()), "x");
  auto created = SharedQueue<Item, 16>::Create(name, QueueRole::kConsumer);
  ASSERT_TRUE(created.ok()) << created.status();
  auto opened = SharedQueue<Item, 32>::Open(name, QueueRole::kProducer,
                                            std::chrono::milliseconds(100), nullptr);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ticktrace::examples
