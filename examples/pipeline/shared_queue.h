// A named SpscQueueLayout in POSIX shared memory (Boost.Interprocess): one
// side creates it, the other opens it by name, and the creator removes the
// name when it is done.
//
// Names: "ticktrace-example.<session>.<channel>" (/dev/shm/...). The prefix is
// deliberately not "ticktrace.<session>.", which the collector scans for trace
// segments. The pipeline's consumers create their input queues (the strategy
// creates "ticks", the gateway "orders"); the producers open them, waiting
// until they exist. So the programs may be started in any order, and the demo
// starts them consumer first.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_SHARED_QUEUE_H_
#define TICKTRACE_EXAMPLES_PIPELINE_SHARED_QUEUE_H_

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include "absl/strings/string_view.h"
#include <thread>
#include <vector>

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "messages.h"
#include "spsc_queue.h"

namespace ticktrace::examples {

// The two channels of the pipeline and their sizes.
inline constexpr char kTicksChannel[] = "ticks";
inline constexpr char kOrdersChannel[] = "orders";
inline constexpr uint32_t kTicksQueueCapacity = 4096;
inline constexpr uint32_t kOrdersQueueCapacity = 4096;

// The shared-memory object name of `channel` in `session`, e.g.
// "ticktrace-example.demo-1.ticks".
std::string QueueSegmentName(absl::string_view session, absl::string_view channel);

// Every example queue name of `session`, for cleanup.
std::vector<std::string> AllQueueSegmentNames(absl::string_view session);

// Removes the shared-memory object `name`. Returns true when it existed.
// Any process may call it; mappings that are still open stay valid.
bool RemoveQueueSegment(const std::string& name);

// True while process `pid` exists (signal 0 succeeds or is refused for permission).
bool ProcessAlive(int32_t pid);

// Which end of the queue this process is.
enum class QueueRole { kProducer, kConsumer };

template <typename T, uint32_t kCapacity>
class SharedQueue {
 public:
  using Layout = SpscQueueLayout<T, kCapacity>;

  // Creates the queue `name` (replacing a stale object of that name left by a
  // crashed run of the same session), mode 0600, and records this process as
  // its `role` end. The returned object removes the name when destroyed.
  static absl::StatusOr<std::unique_ptr<SharedQueue>> Create(const std::string& name,
                                                             QueueRole role) {
    namespace bip = boost::interprocess;
    try {
      bip::shared_memory_object::remove(name.c_str());
      bip::permissions mode;
      mode.set_permissions(0600);
      bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, mode);
      shm.truncate(sizeof(Layout));  // the new memory reads as zeros: an empty queue
      bip::mapped_region region(shm, bip::read_write);
      auto* layout = new (region.get_address()) Layout;
      layout->capacity = kCapacity;
      layout->element_size = sizeof(T);
      layout->creator_pid = static_cast<int32_t>(getpid());
      SetPid(layout, role);
      // Release: publishes the identity fields above; pairs with the acquire
      // load of magic in Open().
      layout->magic.store(kQueueMagic, std::memory_order_release);
      return std::unique_ptr<SharedQueue>(
          new SharedQueue(name, std::move(region), layout, /*remove_on_destroy=*/true));
    } catch (const bip::interprocess_exception& e) {
      return absl::InternalError(absl::StrCat("queue ", name, ": cannot create: ", e.what()));
    }
  }

  // Opens the queue `name` created by the other end, waiting up to `timeout`
  // for it to appear (polling every 2 ms), and records this process as its
  // `role` end. `cancelled` is polled while waiting; when it returns true the
  // wait ends with CancelledError. The returned object leaves the name alone.
  static absl::StatusOr<std::unique_ptr<SharedQueue>> Open(const std::string& name,
                                                           QueueRole role,
                                                           std::chrono::milliseconds timeout,
                                                           const std::function<bool()>& cancelled) {
    namespace bip = boost::interprocess;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string last_problem = "it does not exist";
    while (true) {
      try {
        bip::shared_memory_object shm(bip::open_only, name.c_str(), bip::read_write);
        bip::offset_t size = 0;
        if (shm.get_size(size) && size >= static_cast<bip::offset_t>(kQueueCacheLineSize)) {
          // Map what is there (at least the identity line) and check it first,
          // so that a queue of another shape is reported rather than waited for.
          const size_t mapped_size = std::min(static_cast<size_t>(size), sizeof(Layout));
          bip::mapped_region region(shm, bip::read_write, 0, mapped_size);
          auto* layout = static_cast<Layout*>(region.get_address());
          // Acquire: pairs with the creator's release store of magic; the
          // identity fields are complete after it.
          if (layout->magic.load(std::memory_order_acquire) == kQueueMagic) {
            if (layout->capacity != kCapacity || layout->element_size != sizeof(T) ||
                mapped_size != sizeof(Layout)) {
              return absl::FailedPreconditionError(absl::StrCat(
                  "queue ", name, ": capacity ", layout->capacity, " x ", layout->element_size,
                  " bytes, expected ", kCapacity, " x ", sizeof(T),
                  " (programs from different builds?)"));
            }
            SetPid(layout, role);
            return std::unique_ptr<SharedQueue>(
                new SharedQueue(name, std::move(region), layout, /*remove_on_destroy=*/false));
          }
          last_problem = "it is not initialised yet";
        } else {
          last_problem = "it is not sized yet";
        }
      } catch (const bip::interprocess_exception& e) {
        last_problem = e.what();
      }
      if (cancelled && cancelled()) {
        return absl::CancelledError(absl::StrCat("queue ", name, ": stopped while waiting"));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "queue ", name, ": not ready after ", timeout.count(), " ms (", last_problem,
            "); is the other side running with the same --session?"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  ~SharedQueue() {
    if (remove_on_destroy_) RemoveQueueSegment(name_);
  }
  SharedQueue(const SharedQueue&) = delete;
  SharedQueue& operator=(const SharedQueue&) = delete;

  // The shared layout; make one SpscProducer or SpscConsumer view of it.
  Layout* layout() { return layout_; }
  const std::string& name() const { return name_; }

  // The other end's pid, or 0 before it attached.
  int32_t PeerPid(QueueRole my_role) const {
    // Relaxed: an informational pid, written once; nothing is published with it.
    return my_role == QueueRole::kProducer
               ? layout_->consumer_pid.load(std::memory_order_relaxed)
               : layout_->producer_pid.load(std::memory_order_relaxed);
  }

 private:
  SharedQueue(std::string name, boost::interprocess::mapped_region region, Layout* layout,
              bool remove_on_destroy)
      : name_(std::move(name)),
        region_(std::move(region)),
        layout_(layout),
        remove_on_destroy_(remove_on_destroy) {}

  static void SetPid(Layout* layout, QueueRole role) {
    // Relaxed: see PeerPid().
    (role == QueueRole::kProducer ? layout->producer_pid : layout->consumer_pid)
        .store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  }

  std::string name_;
  boost::interprocess::mapped_region region_;
  Layout* layout_;
  bool remove_on_destroy_;
};

using TickQueue = SharedQueue<Tick, kTicksQueueCapacity>;
using OrderQueue = SharedQueue<Order, kOrdersQueueCapacity>;

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_SHARED_QUEUE_H_
